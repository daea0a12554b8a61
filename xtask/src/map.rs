//! The project's map drawn from the code: the floors diagram of
//! `docs/ARCHITECTURE.md` written from `cargo metadata` (each crate one
//! floor above the highest it depends on), and the check that the code
//! map has a section with its invariant for every crate and names no file
//! that is gone.
//!
//! A crate's section is its `### `crates/NAME`` heading (or `### `xtask``)
//! up to the next heading; it holds an `Architecture invariant:` line, and
//! a file it names in backticks (`conversation/gate/calls.rs`, `calls.rs`)
//! must exist. Every file is listed, from its own doc comment, by `files`.
//!
//! Not here: the hand-written prose (kept as it is around the generated
//! section), or the file listing (`files`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The architecture document.
pub const ARCHITECTURE: &str = "docs/ARCHITECTURE.md";

/// A workspace crate: its name, folder, description and the workspace
/// crates it depends on (normal and build dependencies).
#[derive(Debug, Clone)]
pub struct Crate {
    pub name: String,
    pub dir: PathBuf,
    pub description: String,
    pub deps: Vec<String>,
}

/// The workspace's crates, from `cargo metadata`.
pub fn crates() -> Result<Vec<Crate>> {
    let out = crate::cargo_command()
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed");
    }
    let meta: Value = serde_json::from_slice(&out.stdout).context("cargo metadata's JSON")?;
    let packages = meta["packages"].as_array().cloned().unwrap_or_default();
    let names: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect();
    let mut crates = Vec::new();
    for p in &packages {
        let name = p["name"].as_str().unwrap_or_default().to_owned();
        let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
        let deps = p["dependencies"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| d["kind"].is_null() || d["kind"] == "build")
            .filter_map(|d| d["name"].as_str().map(str::to_owned))
            .filter(|d| names.contains(d) && *d != name)
            .collect();
        crates.push(Crate {
            name,
            dir: manifest.parent().map(Path::to_path_buf).unwrap_or_default(),
            description: p["description"].as_str().unwrap_or_default().to_owned(),
            deps,
        });
    }
    crates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(crates)
}

/// Each crate's floor: 0 with no workspace dependency, else one above the
/// highest floor it depends on.
pub fn floors(crates: &[Crate]) -> BTreeMap<String, usize> {
    let by_name: BTreeMap<&str, &Crate> = crates.iter().map(|c| (c.name.as_str(), c)).collect();
    let mut floors = BTreeMap::new();
    fn floor<'a>(
        name: &'a str,
        by_name: &BTreeMap<&'a str, &'a Crate>,
        floors: &mut BTreeMap<String, usize>,
        depth: usize,
    ) -> usize {
        if let Some(f) = floors.get(name) {
            return *f;
        }
        let Some(c) = by_name.get(name) else { return 0 };
        // A cycle cannot be among normal dependencies; the bound keeps a
        // broken metadata from recursing forever.
        if depth > by_name.len() {
            return 0;
        }
        let f = c
            .deps
            .iter()
            .map(|d| floor(d, by_name, floors, depth + 1) + 1)
            .max()
            .unwrap_or(0);
        floors.insert(name.to_owned(), f);
        f
    }
    for c in crates {
        floor(&c.name, &by_name, &mut floors, 0);
    }
    floors
}

/// The floors diagram: the highest floor first, each crate with the
/// first clause of its description.
pub fn diagram(crates: &[Crate]) -> String {
    let floors = floors(crates);
    let top = floors.values().copied().max().unwrap_or(0);
    let mut out = String::from("```\n");
    for f in (0..=top).rev() {
        let mut first = true;
        for c in crates.iter().filter(|c| floors.get(&c.name) == Some(&f)) {
            let label = if first {
                format!(" floor {f:<3}")
            } else {
                " ".repeat(10)
            };
            first = false;
            let about = shortened(&c.description, WIDTH - 30);
            out.push_str(&format!("{label} {:<18} {about}\n", c.name));
        }
    }
    out.push_str("```");
    out
}

/// The diagram's width in characters.
const WIDTH: usize = 92;

/// `text` cut at a word to at most `max` characters, with `…` when cut.
fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out = String::new();
    for word in text.split_whitespace() {
        if out.chars().count() + word.chars().count() + 2 > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    format!("{}…", out.trim_end_matches([',', ';', ':']))
}

/// A crate's section of the code map: its backticked words, and whether
/// it states the crate's invariant.
#[derive(Default)]
struct Section {
    words: BTreeSet<String>,
    invariant: bool,
}

/// Each crate's section: `crates/NAME` or `xtask` headings of level three.
fn sections(doc: &str) -> BTreeMap<String, Section> {
    let mut sections: BTreeMap<String, Section> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if line.starts_with('#') {
            current = line
                .strip_prefix("### `")
                .and_then(|rest| rest.strip_suffix('`'))
                .map(|path| path.trim_start_matches("crates/").to_owned());
            if let Some(name) = &current {
                sections.entry(name.clone()).or_default();
            }
            continue;
        }
        let Some(name) = &current else { continue };
        let section = sections.entry(name.clone()).or_default();
        section.invariant |= line.starts_with("Architecture invariant:");
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 {
                section.words.insert(part.trim().to_owned());
            }
        }
    }
    sections
}

/// Every `.rs` file under `dir`, as a path relative to it.
pub fn sources(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && let Ok(rel) = path.strip_prefix(dir)
            {
                found.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// What the code map gets wrong: the crates with no section or no
/// invariant, the files a section names that do not exist.
pub fn unmapped(doc: &str, crates: &[(String, PathBuf)]) -> Vec<String> {
    let sections = sections(doc);
    let mut faults = Vec::new();
    for (name, dir) in crates {
        let Some(section) = sections.get(name) else {
            faults.push(format!("crate {name} has no section in the code map"));
            continue;
        };
        if !section.invariant {
            faults.push(format!(
                "crate {name}'s section has no `Architecture invariant:` line"
            ));
        }
        let files = sources(&dir.join("src"));
        for word in section.words.iter().filter(|w| is_file_name(w)) {
            let exists = files
                .iter()
                .any(|f| f == word || f.ends_with(&format!("/{word}")));
            if !exists {
                faults.push(format!("{name}: `{word}` is named but is not in src/"));
            }
        }
    }
    faults
}

/// A word that names a source file: a path of plain segments ending in
/// `.rs` (not an example, a test or a bench, which live beside `src/`).
fn is_file_name(word: &str) -> bool {
    word.ends_with(".rs")
        && !word.contains(' ')
        && !word.starts_with("examples/")
        && !word.starts_with("tests/")
        && !word.starts_with("benches/")
        && !word.contains("::")
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '.')
}

/// Write the floors diagram into the document.
pub fn write() -> Result<()> {
    let crates = crates()?;
    crate::docs::replace_section(Path::new(ARCHITECTURE), "floors", &diagram(&crates))
}

/// Fail when the floors diagram is not the one the code gives, the code map misses a crate or its invariant or names a file
/// that is gone, or the crate table misses a crate.
pub fn check() -> Result<()> {
    let crates = crates()?;
    let doc = std::fs::read_to_string(ARCHITECTURE).context("cannot read the architecture")?;
    let want = diagram(&crates);
    if !doc.contains(&format!(
        "<!-- floors:begin -->\n{want}\n<!-- floors:end -->"
    )) {
        bail!("{ARCHITECTURE}'s floors are not the code's: run `cargo xtask map`");
    }
    let dirs: Vec<(String, PathBuf)> = crates
        .iter()
        .map(|c| {
            // A section is headed by the crate's folder (`crates/` left out).
            let key = c
                .dir
                .file_name()
                .and_then(|n| n.to_str())
                .map_or_else(|| c.name.clone(), str::to_owned);
            (key, c.dir.clone())
        })
        .collect();
    let mut faults = unmapped(&doc, &dirs);
    for c in &crates {
        if !doc.contains(&format!("| `{}` |", c.name)) {
            faults.push(format!(
                "{ARCHITECTURE}'s crate table does not list {}",
                c.name
            ));
        }
    }
    if !faults.is_empty() {
        bail!("the maps are out of date:\n  {}", faults.join("\n  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::{Crate, diagram, floors, unmapped};

    fn krate(name: &str, deps: &[&str]) -> Crate {
        Crate {
            name: name.into(),
            dir: std::path::PathBuf::new(),
            description: format!("{name}'s job: more"),
            deps: deps.iter().map(|d| (*d).to_owned()).collect(),
        }
    }

    #[test]
    fn a_crate_sits_one_floor_above_its_highest_dependency() {
        let crates = vec![krate("a", &[]), krate("b", &["a"]), krate("c", &["a", "b"])];
        let f = floors(&crates);
        assert_eq!((f["a"], f["b"], f["c"]), (0, 1, 2));
        let drawn = diagram(&crates);
        assert!(drawn.find("floor 2").unwrap() < drawn.find("floor 0").unwrap());
        assert!(drawn.contains("c's job: more"), "{drawn}");
    }

    #[test]
    fn a_crate_without_a_section_or_an_invariant_fails_and_a_gone_file_too() {
        let dir = tempfile_dir();
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("parts")).unwrap();
        for f in ["lib.rs", "one.rs", "parts/mod.rs", "parts/two.rs"] {
            std::fs::write(src.join(f), "").unwrap();
        }
        let doc = "## Code map\n\n### `crates/demo`\n\nStart at `one.rs`.\n\nArchitecture invariant: none.\n\n## Next\n";
        let crates = vec![("demo".to_owned(), dir.clone())];
        assert!(
            unmapped(doc, &crates).is_empty(),
            "{:?}",
            unmapped(doc, &crates)
        );
        // A file the map names that is gone.
        let doc2 = doc.replace("`one.rs`", "`one.rs`, `gone.rs`, `two.rs`");
        let faults = unmapped(&doc2, &crates);
        assert_eq!(faults, vec!["demo: `gone.rs` is named but is not in src/"]);
        // A section that states no invariant.
        let doc3 = doc.replace("Architecture invariant: none.", "");
        let faults = unmapped(&doc3, &crates);
        assert_eq!(
            faults,
            vec!["crate demo's section has no `Architecture invariant:` line"]
        );
        // A crate with no section.
        let faults = unmapped("### `crates/other`\n", &crates);
        assert_eq!(faults, vec!["crate demo has no section in the code map"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A fresh folder under the system's temporary one.
    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-map-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
