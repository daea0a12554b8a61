//! Circles of files: within a crate, files that import each other round
//! in a circle (`a.rs` names `b.rs`, which names `a.rs`, directly or
//! through others). A circle is one owner split over files; `lint` fails
//! on one the architecture does not name, and prints every one it finds.
//!
//! What counts as an import: a path through `crate::` or `super::` (in a
//! `use` or anywhere in the code) that reaches another file's module. The
//! crate root (`lib.rs`, `main.rs`) is not a node: it declares and
//! re-exports, it is not an owner. Comments are left out, and a file is
//! read only up to its first `#[cfg(test)]` (its tests import their own
//! module by `super::`).
//!
//! Not here: the crates' own order (`map.rs`'s floors).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::map::ARCHITECTURE;

/// A module path (`["conversation", "gate"]`), the crate root empty.
type ModPath = Vec<String>;

/// The circles of files in the crate whose sources are under `src`, each
/// as its files (relative to `src`), sorted.
pub fn circles_in(src: &Path) -> Vec<Vec<String>> {
    let files = modules(src);
    let by_path: BTreeMap<&ModPath, &String> = files.iter().map(|(m, f)| (m, f)).collect();
    let mut edges: BTreeMap<&String, BTreeSet<&String>> = BTreeMap::new();
    for (module, file) in &files {
        if module.is_empty() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(src.join(file)) else {
            continue;
        };
        // `super` is the module's parent, for `a/b.rs` and `a/b/mod.rs` alike.
        let here = module[..module.len() - 1].to_vec();
        for target in imports(&code_of(&text), &here) {
            if let Some(to) = longest_module(&by_path, &target)
                && to != file
            {
                edges.entry(file).or_default().insert(to);
            }
        }
    }
    strongly_connected(&edges)
}

/// Each `.rs` file under `src` with the module it is.
fn modules(src: &Path) -> Vec<(ModPath, String)> {
    let mut found = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                // `src/bin` holds programs of their own, not modules.
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            let Ok(rel) = path.strip_prefix(src) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            let Some(stem) = rel.strip_suffix(".rs") else {
                continue;
            };
            let mut module: ModPath = stem.split('/').map(str::to_owned).collect();
            if matches!(module.last().map(String::as_str), Some("mod")) {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            found.push((module, rel));
        }
    }
    found.sort();
    found
}

/// `text` without comment lines and without what follows its first
/// `#[cfg(test)]`.
fn code_of(text: &str) -> String {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` reaches through `crate::` and `super::`, in a
/// module whose `super` is `here`.
fn imports(code: &str, here: &ModPath) -> Vec<ModPath> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let preceded = at > 0 && {
            let b = bytes[at - 1];
            b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b':'
        };
        let (base, skip) = if rest.starts_with("crate::") && !preceded {
            (Vec::new(), "crate::".len())
        } else if rest.starts_with("super::") && !preceded {
            let mut base = here.clone();
            let mut skip = 0;
            while code[at + skip..].starts_with("super::") {
                if skip > 0 {
                    base.pop();
                }
                skip += "super::".len();
            }
            (base, skip)
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let (paths, used) = path_tree(&code[at + skip..]);
        for path in paths {
            let mut full = base.clone();
            full.extend(path);
            found.push(full);
        }
        at += skip + used.max(1);
    }
    found
}

/// The paths a `use` tree at the start of `text` names (`a::b`, or
/// `a::{b, c::d}`), and how many bytes it took.
fn path_tree(text: &str) -> (Vec<ModPath>, usize) {
    let mut prefix = Vec::new();
    let mut at = 0;
    loop {
        let ident: String = text[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() {
            if text[at..].starts_with('{') {
                let (inner, used) = group(&text[at + 1..]);
                let paths = inner
                    .into_iter()
                    .map(|mut p| {
                        let mut full = prefix.clone();
                        full.append(&mut p);
                        full
                    })
                    .collect();
                return (paths, at + 1 + used);
            }
            return (vec![prefix], at);
        }
        at += ident.len();
        prefix.push(ident);
        if text[at..].starts_with("::") {
            at += 2;
        } else {
            return (vec![prefix], at);
        }
    }
}

/// The paths of a `{…}` group whose opening brace is just before `text`,
/// and the bytes up to and with its closing brace.
fn group(text: &str) -> (Vec<ModPath>, usize) {
    let mut paths = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let c = text[at..].chars().next().unwrap_or(' ');
        if c == '}' {
            return (paths, at + 1);
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == '{' {
            let (mut inner, used) = path_tree(&text[at..]);
            paths.append(&mut inner);
            at += used.max(1);
        } else {
            at += c.len_utf8();
        }
    }
    (paths, at)
}

/// The file of the longest known module that `path` begins with (`None`
/// for the crate root).
fn longest_module<'a>(
    by_path: &BTreeMap<&ModPath, &'a String>,
    path: &ModPath,
) -> Option<&'a String> {
    (1..=path.len())
        .rev()
        .find_map(|n| by_path.get(&path[..n].to_vec()).copied())
}

/// The strongly connected parts of `edges` with more than one file,
/// each sorted, in order (Tarjan's).
fn strongly_connected(edges: &BTreeMap<&String, BTreeSet<&String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a String, BTreeSet<&'a String>>,
        index: BTreeMap<&'a String, usize>,
        low: BTreeMap<&'a String, usize>,
        stack: Vec<&'a String>,
        on_stack: BTreeSet<&'a String>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a String) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.edges.get(node).into_iter().flatten().copied() {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut part = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    part.push(top.clone());
                    if top == node {
                        break;
                    }
                }
                if part.len() > 1 {
                    part.sort();
                    self.found.push(part);
                }
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in edges.keys().copied() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found.sort();
    walk.found
}

/// Each circle in the workspace's crates, as the architecture names one:
/// `crate: a.rs, b.rs`.
pub fn all() -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for krate in crate::map::crates()? {
        let src = krate.dir.join("src");
        for circle in circles_in(&src) {
            lines.push(format!("{}: {}", krate.name, circle.join(", ")));
        }
    }
    Ok(lines)
}

/// Fail when a circle of files is not one the architecture names between
/// `<!-- circles:begin -->` and `<!-- circles:end -->`, or one named there
/// is gone (the list stays true).
pub fn check() -> Result<()> {
    let doc = std::fs::read_to_string(ARCHITECTURE).context("cannot read the architecture")?;
    let named: BTreeSet<&str> = doc
        .split_once("<!-- circles:begin -->")
        .and_then(|(_, rest)| rest.split_once("<!-- circles:end -->"))
        .map(|(block, _)| {
            block
                .lines()
                .filter_map(|l| l.trim().strip_prefix("- "))
                .map(|l| l.split(" — ").next().unwrap_or(l).trim_matches('`'))
                .collect()
        })
        .unwrap_or_default();
    let found = all()?;
    let new: Vec<&String> = found
        .iter()
        .filter(|c| !named.contains(c.as_str()))
        .collect();
    if !new.is_empty() {
        bail!(
            "circles of files the architecture does not name (files that import each other round; one owner split over files):\n  {}",
            new.iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        );
    }
    let gone: Vec<&str> = named
        .iter()
        .copied()
        .filter(|n| !found.iter().any(|c| c == n))
        .collect();
    if !gone.is_empty() {
        bail!(
            "circles the architecture names that are no longer there (take them off its list):\n  {}",
            gone.join("\n  ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{ModPath, imports, path_tree};

    fn path(p: &str) -> ModPath {
        p.split("::").map(str::to_owned).collect()
    }

    #[test]
    fn use_trees_are_read_whole() {
        let (paths, _) = path_tree("a::{b, c::{d, e}, f::G};");
        assert_eq!(
            paths,
            vec![
                path("a::b"),
                path("a::c::d"),
                path("a::c::e"),
                path("a::f::G")
            ]
        );
    }

    #[test]
    fn crate_and_super_paths_are_resolved_from_the_file() {
        let code = "use crate::x::Y;\nlet z = super::w::f();\nuse super::super::q;\n$crate::no;";
        let here = path("a::b");
        let found = imports(code, &here);
        assert_eq!(found, vec![path("x::Y"), path("a::b::w::f"), path("a::q")]);
    }
}
