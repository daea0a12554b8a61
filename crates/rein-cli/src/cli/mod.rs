//! The `rein` command's parts, private to the binary: the terminal chat,
//! its `/undo`, the session and trace commands, `wire decode`, and the
//! rule for a closed output. A product uses the library (`rein::…`), not
//! these.

pub mod acp;
pub mod agents;
pub mod agents_list;
pub mod agents_switch;
pub mod agents_tui;
pub mod approve_cmd;
pub mod branch;
pub mod chat;
mod chat_options;
pub mod commands;
pub mod config_cmd;
pub mod decode_cmd;
pub mod graph_view;
pub mod input;
pub mod markdown;
pub mod mcp;
pub mod memory_cmd;
pub mod output;
pub mod plugin_cmd;
pub mod preview;
pub mod provider;
pub mod run_graph;
pub mod run_remote;
pub mod serve;
pub mod session_root;
pub mod sessions_cmd;
pub mod store_cmd;
pub mod stores;
pub mod telemetry;
pub mod turn;
pub mod worker;
