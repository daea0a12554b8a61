//! The command reference (`docs/reference/cli.md`) is generated from the
//! binary's own help — every command and subcommand, as `--help` prints it
//! — and never written by hand: this test fails when the page and the
//! binary drift apart (`REIN_REFERENCE_BLESS=1` writes it anew).

use crate::common;

/// The commands `help` lists under "Commands:" (`help` itself left out).
fn commands_in(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// `rein PATH --help`, as printed with no environment to show.
fn help_of(path: &[String]) -> String {
    let out = common::rein()
        .args(path)
        .arg("--help")
        .env_remove("REIN_STORE")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success(), "{path:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_command_reference_is_the_binarys_help() {
    let mut page = String::from(
        "# The `rein` command\n\n\
         Generated from the binary's own `--help` by `crates/rein-cli/tests/reference.rs`\n\
         (`REIN_REFERENCE_BLESS=1 cargo nextest run -p rein-cli -E 'test(the_command_reference)'`);\n\
         do not edit.\n",
    );
    // Breadth first: the top, each command, each command's subcommands.
    let mut queue: std::collections::VecDeque<Vec<String>> = [Vec::new()].into();
    while let Some(path) = queue.pop_front() {
        let help = help_of(&path);
        let title = if path.is_empty() {
            "rein".to_owned()
        } else {
            format!("rein {}", path.join(" "))
        };
        page.push_str(&format!(
            "\n## `{title}`\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
        for name in commands_in(&help) {
            let mut next = path.clone();
            next.push(name);
            queue.push_back(next);
        }
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md");
    if std::env::var_os("REIN_REFERENCE_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == page,
        "docs/reference/cli.md is stale: run REIN_REFERENCE_BLESS=1 cargo nextest run -p rein-cli -E 'test(the_command_reference)'"
    );
}
