//! The README's library section stays true: its Rust snippet is the shop
//! example as the test suite runs it, and the dependency versions it tells
//! a newcomer to write are the ones the workspace builds with.
//!
//! Not here: the README's crate map (`map`), or running the example (the
//! test suite does).

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

const README: &str = "README.md";
const SECTION: &str = "## Use it as a library";
const EXAMPLE: &str = "crates/rein/examples/shop.rs";

/// Fail when the README's snippet is not the example, or its dependency
/// block asks for a version the workspace does not build with.
pub fn check() -> Result<()> {
    let readme = std::fs::read_to_string(README).context("cannot read the README")?;
    let example = std::fs::read_to_string(EXAMPLE).context("cannot read the shop example")?;
    let workspace = std::fs::read_to_string("Cargo.toml").context("cannot read Cargo.toml")?;
    let faults = faults(&readme, &example, &workspace);
    if !faults.is_empty() {
        bail!(
            "the README's library section is out of date:\n  {}",
            faults.join("\n  ")
        );
    }
    Ok(())
}

fn faults(readme: &str, example: &str, workspace: &str) -> Vec<String> {
    let Some(at) = readme.find(SECTION) else {
        return vec![format!("it has no `{SECTION}` section")];
    };
    let section = &readme[at..];
    let mut faults = Vec::new();
    match block(section, "```rust") {
        Some(snippet) if snippet.trim() == example.trim() => {}
        Some(_) => faults.push(format!("its Rust snippet is not {EXAMPLE}")),
        None => faults.push("it has no Rust snippet".into()),
    }
    let Some(toml) = block(section, "```toml") else {
        faults.push("it has no dependency block".into());
        return faults;
    };
    let built = versions(after(workspace, "[workspace.dependencies]"));
    let own = package_version(workspace);
    for (name, wanted) in versions(toml) {
        let builds = if name == "rein" {
            own.clone()
        } else {
            built.get(&name).cloned()
        };
        match builds {
            Some(builds) if compatible(&wanted, &builds) => {}
            Some(builds) => faults.push(format!(
                "it asks for {name} \"{wanted}\"; the workspace builds with \"{builds}\""
            )),
            None => faults.push(format!("it names {name}, which the workspace does not use")),
        }
    }
    faults
}

/// The text of the first fenced block opening with `fence` (and any
/// attributes after it).
fn block<'a>(text: &'a str, fence: &str) -> Option<&'a str> {
    let open = text.find(fence)?;
    let body = &text[open..];
    let body = &body[body.find('\n')? + 1..];
    Some(&body[..body.find("\n```")?])
}

fn after<'a>(text: &'a str, header: &str) -> &'a str {
    let Some(at) = text.find(header) else {
        return "";
    };
    let rest = &text[at + header.len()..];
    rest.find("\n[").map_or(rest, |end| &rest[..end])
}

/// `name = "1.2"` or `name = { version = "1.2", … }` lines: name → version.
fn versions(toml: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in toml.lines() {
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.starts_with('[') || name.starts_with('#') {
            continue;
        }
        let value = value.trim();
        let quoted = value
            .find("version")
            .map_or(value, |at| &value[at..])
            .split('"')
            .nth(1);
        if let Some(version) = quoted {
            out.insert(name.to_owned(), version.to_owned());
        }
    }
    out
}

fn package_version(workspace: &str) -> Option<String> {
    versions(after(workspace, "[workspace.package]"))
        .get("version")
        .cloned()
}

/// Whether a newcomer writing `wanted` gets what the workspace builds with:
/// `wanted`'s numbers are the leading numbers of `builds` (`1` or `1.54`
/// for `1.54`; `0.1` for `0.1.0`).
fn compatible(wanted: &str, builds: &str) -> bool {
    let wanted: Vec<&str> = wanted.split('.').collect();
    let builds: Vec<&str> = builds.split('.').collect();
    wanted.len() <= builds.len() && wanted.iter().zip(&builds).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use super::{compatible, faults};

    const WORKSPACE: &str = "[workspace.package]\nversion = \"0.1.0\"\n\n\
        [workspace.dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\n\
        tokio = { version = \"1.54\", features = [\"macros\"] }\n\n[profile.dev]\n";

    fn readme(toml: &str, rust: &str) -> String {
        format!(
            "# x\n\n## Use it as a library\n\n```toml\n[dependencies]\n{toml}\n```\n\n```rust,no_run\n{rust}\n```\n"
        )
    }

    #[test]
    fn a_true_section_passes_and_each_drift_is_named() {
        let ok = readme(
            "rein = \"0.1\"\ntokio = { version = \"1\" }",
            "fn main() {}",
        );
        assert!(faults(&ok, "fn main() {}\n", WORKSPACE).is_empty());
        let drifted = readme(
            "rein = \"0.2\"\nserde = \"2\"\nanyhow = \"1\"",
            "fn main() { }",
        );
        let found = faults(&drifted, "fn main() {}", WORKSPACE);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].contains("not crates/rein/examples/shop.rs"));
        assert!(found.iter().any(|f| f.contains("anyhow")));
    }

    #[test]
    fn a_version_is_compatible_when_it_leads_the_built_one() {
        assert!(compatible("1", "1.54"));
        assert!(compatible("1.54", "1.54"));
        assert!(compatible("0.1", "0.1.0"));
        assert!(!compatible("1.2", "1.54"));
        assert!(!compatible("1.54.1", "1.54"));
    }
}
