//! `rein::compose::Product`: a product's own definition, tools and
//! provider made into an agent, and nothing of the `rein` command's world
//! unless asked — not the CLI user's config in the home (its hooks and
//! instructions), not the file tools over the process's folder, not an
//! `AGENTS.md` in the folder it works in, not the command's flags in its
//! errors.

use std::path::Path;
use std::sync::Arc;

use rein::compose::Product;
use rein::prelude::*;
use rein::sessions::Event;

use crate::common::definition::write;

/// A home whose config a person running the CLI wrote: instructions and a
/// hook a product must not inherit unless it asks.
fn cli_users_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    write(
        &home.path().join("config.toml"),
        "[agent]\ninstructions = \"FROM THE CLI USER'S HOME\"\n\n[[agent.hooks]]\nname = \"cli-user-hook\"\ncommand = [\"true\"]\npoints = [\"before_call\"]\n",
    );
    home
}

fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

fn tool_names(agent: &Agent) -> Vec<String> {
    agent
        .tools
        .catalog(&Policy::default())
        .into_iter()
        .map(|t| t.name)
        .collect()
}

fn system(agent: &Agent) -> String {
    agent.profile.system.join("\n")
}

fn lookup() -> Arc<dyn rein::tools::ToolBackend> {
    #[derive(Deserialize, JsonSchema)]
    #[schemars(crate = "rein::schemars")]
    struct Order {
        id: u64,
    }
    let tool = tool_fn(
        "lookup_order",
        "An order's status",
        PermissionClass::Read,
        |order: Order| async move { Outcome::ok(json!({"id": order.id, "status": "shipped"})) },
    );
    Arc::new(Registry::new().with(tool).unwrap())
}

#[tokio::test]
async fn a_product_reads_its_own_definition_and_not_the_cli_users_home() {
    let home = cli_users_home();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("helpdesk.toml");
    write(
        &file,
        "[agents.triage]\ninstructions = \"You triage tickets.\"\n",
    );
    let brain: Arc<dyn Provider> = Arc::new(ScriptedBrain::new(vec![]));
    let composed = Product::new()
        .home(home.path())
        .definition_file(&file)
        .agent("triage")
        .provider(brain.clone())
        .build(&store())
        .await
        .unwrap();
    let said = system(&composed.agent);
    assert!(said.contains("You triage tickets."), "{said}");
    assert!(
        !said.contains("CLI USER"),
        "the home's config stayed out: {said}"
    );
    assert!(
        composed.agent.guards.hooks.is_empty(),
        "no hook of the home's"
    );

    // Asked for, the home's config is read under the product's definition.
    let composed = Product::new()
        .home(home.path())
        .user_config()
        .provider(brain)
        .build(&store())
        .await
        .unwrap();
    assert!(system(&composed.agent).contains("FROM THE CLI USER'S HOME"));
    let hooks: Vec<&str> = composed
        .agent
        .guards
        .hooks
        .iter()
        .map(|h| h.name())
        .collect();
    assert_eq!(hooks, ["cli-user-hook"]);
}

#[tokio::test]
async fn without_a_root_there_are_no_file_tools_and_what_needs_a_folder_is_refused() {
    let brain: Arc<dyn Provider> = Arc::new(ScriptedBrain::new(vec![]));
    let composed = Product::new()
        .provider(brain.clone())
        .tools(lookup())
        .build(&store())
        .await
        .unwrap();
    assert_eq!(tool_names(&composed.agent), ["lookup_order"]);

    for (definition, named) in [
        ("[agent.tools]\ncommands = true\n", "tools.commands"),
        ("[agent.tools]\nfiles = true\n", "tools.files"),
        (
            "[agent]\nproject_instructions = true\n",
            "project_instructions",
        ),
        ("[agent.memory]\nenabled = true\n", "memory without a scope"),
    ] {
        let refused = Product::new()
            .definition_text("inline", definition)
            .provider(brain.clone())
            .build(&store())
            .await
            .err()
            .unwrap_or_else(|| panic!("{definition} built with no folder"));
        assert_eq!(refused.code, "config_invalid", "{definition}");
        assert!(refused.message.starts_with(named), "{}", refused.message);
        assert!(
            refused.message.contains("Product::root"),
            "{}",
            refused.message
        );
    }
}

#[tokio::test]
async fn a_root_gives_file_tools_there_but_its_agents_md_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    write(&root.path().join("AGENTS.md"), "Always answer in French.\n");
    write(&root.path().join("notes.txt"), "hello\n");
    let brain: Arc<dyn Provider> = Arc::new(ScriptedBrain::new(vec![]));
    let composed = Product::new()
        .root(root.path())
        .provider(brain.clone())
        .build(&store())
        .await
        .unwrap();
    assert!(tool_names(&composed.agent).contains(&"read_file".to_owned()));
    assert!(!system(&composed.agent).contains("French"));

    let composed = Product::new()
        .root(root.path())
        .project_instructions()
        .provider(brain)
        .build(&store())
        .await
        .unwrap();
    assert!(system(&composed.agent).contains("Always answer in French."));
}

#[tokio::test]
async fn the_products_tools_are_called_in_a_turn() {
    let rule = Rule::reply("order 7", "It has shipped.").and_call("lookup_order", json!({"id": 7}));
    let brain: Arc<dyn Provider> = Arc::new(ScriptedBrain::new(vec![rule]));
    let store = store();
    let composed = Product::new()
        .definition_text("helpdesk", "[agent]\ninstructions = \"Help.\"\n")
        .provider(brain)
        .tools(lookup())
        .build(&store)
        .await
        .unwrap();
    let mut conversation = composed.agent.open(store.clone()).await.unwrap();
    conversation.turn("Where is order 7?").await.unwrap();
    let events = rein::sessions::read_all(store.as_ref(), conversation.session_id())
        .await
        .unwrap();
    let result = events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolResult { content, .. } => Some(content.to_string()),
            _ => None,
        })
        .expect("the tool ran");
    assert!(result.contains("shipped"), "{result}");
}

#[tokio::test]
async fn a_bad_definition_is_named_and_no_provider_is_said_in_the_librarys_words() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    write(&file, "[agent]\nmodle = \"x\"\n");
    let bad = Product::new()
        .definition_file(&file)
        .build(&store())
        .await
        .err()
        .unwrap();
    assert_eq!(bad.code, "config_invalid");
    assert!(bad.message.contains("bad.toml:2"), "{}", bad.message);

    let missing = Product::new()
        .definition_file(dir.path().join("none.toml"))
        .build(&store())
        .await
        .err()
        .unwrap();
    assert!(
        missing.message.contains("none.toml: no such file"),
        "{}",
        missing.message
    );

    let keyed = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()));
    let built = Product::new().build(&store()).await;
    if keyed {
        assert!(built.is_ok(), "the environment's key names a provider");
    } else {
        let none = built.err().unwrap();
        assert_eq!(none.code, "missing_api_key");
        assert!(
            none.message.contains("Product::provider"),
            "{}",
            none.message
        );
        assert!(!none.message.contains("--"), "no flags: {}", none.message);
        assert!(
            !none.message.contains("rein "),
            "no commands: {}",
            none.message
        );
    }
}

/// A product's definition is checked whole, like the home's: the path is
/// what the error names, never a CLI word.
#[test]
fn definition_sources_are_shown_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("helpdesk.toml");
    write(&file, "[agent]\nmodel = \"m\"\n");
    let loaded = rein::config::Loaded::default()
        .with_file(Path::new(&file))
        .unwrap();
    let effective = loaded
        .agent(None, &rein::config::AgentSpec::default())
        .unwrap();
    assert_eq!(
        effective.sources["model"].to_string(),
        file.display().to_string()
    );
}
