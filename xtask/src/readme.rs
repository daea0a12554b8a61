//! The examples the newcomer reads stay true: the README's Rust snippet is
//! the quickstart example, the library guide's is the shop example (both
//! run by the test suite), and the dependency versions the guide tells a
//! newcomer to write are the ones the workspace builds with.
//!
//! Not here: the crate map (`map`), or running the examples (`cargo xtask
//! test` does).

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};

/// The facade's name on crates.io (its library is `rein`).
const FACADE: &str = "rein-harness";

/// A page a newcomer copies from: the example its first Rust snippet is,
/// and whether it carries the manifest.
struct Page {
    doc: &'static str,
    example: &'static str,
    manifest: bool,
}

const PAGES: [Page; 2] = [
    Page {
        doc: "README.md",
        example: "crates/rein/examples/quickstart.rs",
        manifest: false,
    },
    Page {
        doc: "docs/guide/library.md",
        example: "crates/rein/examples/shop.rs",
        manifest: true,
    },
];

/// Fail when a page's snippet is not its example, or the manifest asks
/// for a version the workspace does not build with.
pub fn check() -> Result<()> {
    let workspace = std::fs::read_to_string("Cargo.toml").context("cannot read Cargo.toml")?;
    let mut all = Vec::new();
    for page in &PAGES {
        let text = std::fs::read_to_string(page.doc)
            .with_context(|| format!("cannot read {}", page.doc))?;
        let example = std::fs::read_to_string(page.example)
            .with_context(|| format!("cannot read {}", page.example))?;
        let manifest = page.manifest.then_some(workspace.as_str());
        for fault in faults(&text, page.example, &example, manifest) {
            all.push(format!("{}: {fault}", page.doc));
        }
    }
    if !all.is_empty() {
        bail!(
            "the newcomer's examples are out of date:\n  {}",
            all.join("\n  ")
        );
    }
    Ok(())
}

fn faults(doc: &str, name: &str, example: &str, workspace: Option<&str>) -> Vec<String> {
    let mut faults = Vec::new();
    match block(doc, "```rust") {
        Some(snippet) if snippet.trim() == example.trim() => {}
        Some(_) => faults.push(format!("its Rust snippet is not {name}")),
        None => faults.push("it has no Rust snippet".into()),
    }
    let Some(workspace) = workspace else {
        return faults;
    };
    let Some(toml) = block(doc, "```toml") else {
        faults.push("it has no dependency block".into());
        return faults;
    };
    let built = versions(after(workspace, "[workspace.dependencies]"));
    let own = package_version(workspace);
    for (name, wanted) in versions(toml) {
        let builds = if name == FACADE {
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

    fn page(toml: &str, rust: &str) -> String {
        format!(
            "# x\n\n## Depend on it\n\n```toml\n[dependencies]\n{toml}\n```\n\n```rust,no_run\n{rust}\n```\n"
        )
    }

    const SHOP: &str = "crates/rein/examples/shop.rs";

    #[test]
    fn a_true_section_passes_and_each_drift_is_named() {
        let ok = page(
            "rein-harness = \"0.1\"\ntokio = { version = \"1\" }",
            "fn main() {}",
        );
        assert!(faults(&ok, SHOP, "fn main() {}\n", Some(WORKSPACE)).is_empty());
        assert!(faults(&ok, SHOP, "fn main() {}\n", None).is_empty());
        let drifted = page(
            "rein-harness = \"0.2\"\nserde = \"2\"\nanyhow = \"1\"",
            "fn main() { }",
        );
        let found = faults(&drifted, SHOP, "fn main() {}", Some(WORKSPACE));
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
