//! Whether a command's program is on the commands' path, and — when it is
//! not — the programs there with a name like it: a dead end that points
//! somewhere (`python` on a machine with only `python3`), answered before
//! the person is asked to approve a command that cannot run.
//!
//! Not here: what may run (`policy`), running it (`run`, the helper). A
//! program named by a path (`./x.sh`, `/bin/ls`) is left to the run.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rein_wire::AgentError;
use rein_wire::error::codes;

/// The path a command gets when its environment names none.
const DEFAULT_PATH: &str = "/usr/bin:/bin";
/// Programs named in the answer, at most.
const MAX_NAMED: usize = 8;
/// Entries read from each folder of the path, at most.
const MAX_LISTED: usize = 5_000;

/// `Ok` when `program` is a path or an executable file in a folder of the
/// commands' `PATH`; otherwise `program_not_found`, naming the programs on
/// the path whose name is like it.
pub(crate) fn on_path(program: &str, env: &BTreeMap<String, String>) -> Result<(), AgentError> {
    if program.contains('/') {
        return Ok(());
    }
    let path = env.get("PATH").map_or(DEFAULT_PATH, String::as_str);
    let folders: Vec<&Path> = path
        .split(':')
        .filter(|f| !f.is_empty())
        .map(Path::new)
        .collect();
    if folders.iter().any(|f| runnable(&f.join(program))) {
        return Ok(());
    }
    let near = near(program, &folders);
    let told = if near.is_empty() {
        "none there has a name like it".to_owned()
    } else {
        format!("programs there with a name like it: {}", near.join(", "))
    };
    Err(AgentError::new(
        codes::PROGRAM_NOT_FOUND,
        format!("no program `{program}` on the commands' path ({path}); {told}"),
    ))
}

fn runnable(file: &Path) -> bool {
    std::fs::metadata(file).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The programs in `folders` whose name is `program`'s with a version
/// (`python3`, `python3.11`), or whose version-less name `program` is
/// (`python3` asked, `python` there); then those that begin with it.
/// Sorted, at most [`MAX_NAMED`].
fn near(program: &str, folders: &[&Path]) -> Vec<String> {
    let stem = unversioned(program);
    let mut same = std::collections::BTreeSet::new();
    let mut begins = std::collections::BTreeSet::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(MAX_LISTED) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !runnable(&entry.path()) {
                continue;
            }
            if !stem.is_empty() && unversioned(&name) == stem {
                same.insert(name);
            } else if name.starts_with(program) {
                begins.insert(name);
            }
        }
    }
    same.into_iter().chain(begins).take(MAX_NAMED).collect()
}

/// `name` without a version at its end: digits, dots and dashes
/// (`python3.11` → `python`).
fn unversioned(name: &str) -> &str {
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly on purpose")]

    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;

    use super::on_path;

    fn program(folder: &std::path::Path, name: &str, mode: u32) {
        let file = folder.join(name);
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_missing_program_names_the_ones_like_it() {
        let bin = tempfile::tempdir().unwrap();
        program(bin.path(), "python3", 0o755);
        program(bin.path(), "python3.11", 0o755);
        program(bin.path(), "pythonista-notes", 0o644);
        program(bin.path(), "pydoc3", 0o755);
        let env = BTreeMap::from([("PATH".to_owned(), bin.path().display().to_string())]);
        assert!(on_path("python3", &env).is_ok());
        assert!(
            on_path("./python", &env).is_ok(),
            "a path is the run's to find"
        );
        let err = on_path("python", &env).unwrap_err();
        assert_eq!(err.code.as_str(), "program_not_found");
        assert!(
            err.message
                .ends_with("programs there with a name like it: python3, python3.11"),
            "{}",
            err.message
        );
        let err = on_path("py", &env).unwrap_err();
        assert!(
            err.message
                .ends_with("like it: pydoc3, python3, python3.11"),
            "{}",
            err.message
        );
        let err = on_path("ruby", &env).unwrap_err();
        assert!(
            err.message.ends_with("none there has a name like it"),
            "{}",
            err.message
        );
    }
}
