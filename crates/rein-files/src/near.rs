//! What exists near a path that does not: a dead end that points
//! somewhere. A read or change of a missing file is answered with the
//! files of the nearest folder it names (the root's, when none) and any file
//! of the same name elsewhere — bounded, so a small model that guessed a
//! path, or put two in one, can take the right one next.
//!
//! Not here: the refusal itself (`root`), listing on request (`list_files`).

use std::path::Path;

use crate::Root;

/// The most names said.
const MAX_NAMED: usize = 15;

/// A sentence naming what exists near `path` in `root` ("" when nothing
/// does).
pub(crate) fn near(root: &Root, path: &str) -> String {
    let files = root.walk(None).unwrap_or_default();
    let asked = Path::new(path.trim_start_matches("./"));
    let name = asked.file_name().map(|n| n.to_string_lossy().into_owned());
    let same_name: Vec<&String> = files
        .iter()
        .filter(|f| {
            name.is_some()
                && Path::new(f)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    == name
        })
        .take(5)
        .collect();
    // The nearest folder of the path that holds any file, else the root.
    let mut folder = asked.parent().map(Path::to_path_buf).unwrap_or_default();
    let in_folder = loop {
        let here: Vec<&String> = files
            .iter()
            .filter(|f| Path::new(f).parent().unwrap_or(Path::new("")) == folder)
            .take(MAX_NAMED + 1)
            .collect();
        if !here.is_empty() || folder.as_os_str().is_empty() {
            break here;
        }
        folder = folder.parent().map(Path::to_path_buf).unwrap_or_default();
    };
    let mut said = String::new();
    if !same_name.is_empty() {
        let named: Vec<String> = same_name.iter().map(|f| format!("`{f}`")).collect();
        said.push_str(&format!(" A file of that name: {}.", named.join(", ")));
    }
    if !in_folder.is_empty() {
        let shown = if folder.as_os_str().is_empty() {
            "the project's top folder".to_owned()
        } else {
            format!("`{}`", folder.display())
        };
        let mut named: Vec<String> = in_folder
            .iter()
            .take(MAX_NAMED)
            .map(|f| format!("`{f}`"))
            .collect();
        if in_folder.len() > MAX_NAMED {
            named.push("…".into());
        }
        said.push_str(&format!(" Files in {shown}: {}.", named.join(", ")));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_path_is_answered_with_what_is_near_it() {
        let dir = tempfile::tempdir().unwrap();
        for file in ["config.py", "cart.py", "src/calc.py", "src/util.py"] {
            let at = dir.path().join(file);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, "x").unwrap();
        }
        let root = Root::new(dir.path()).unwrap();
        // Two paths in one: the top folder's files are named.
        let said = near(&root, "config.py, cart.py");
        assert!(
            said.contains("`cart.py`") && said.contains("`config.py`"),
            "{said}"
        );
        // A guessed folder: the file of that name, and the folder's files.
        let said = near(&root, "lib/calc.py");
        assert!(
            said.contains("A file of that name: `src/calc.py`"),
            "{said}"
        );
        let said = near(&root, "src/nope.py");
        assert!(
            said.contains("Files in `src`: `src/calc.py`, `src/util.py`"),
            "{said}"
        );
    }
}
