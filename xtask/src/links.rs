//! Every link between rein's own pages leads somewhere: in the README and
//! every Markdown file under `docs/`, a relative link names a file or
//! folder that exists, and a `#fragment` names a heading of that page (as
//! GitHub makes its anchors). Links out (`https:`, `mailto:`) are not
//! followed — no network here.
//!
//! Not here: the examples a page copies (`readme`), the generated pages'
//! contents (their own checks).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Fail naming every link that leads nowhere.
pub fn check() -> Result<()> {
    let mut pages = vec![PathBuf::from("README.md")];
    markdown_under(Path::new("docs"), &mut pages)?;
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page)
            .with_context(|| format!("cannot read {}", page.display()))?;
        for (line, target) in links(&text) {
            if let Err(why) = leads_somewhere(page, &text, &target) {
                broken.push(format!("  {}:{line}: ({target}) {why}", page.display()));
            }
        }
    }
    if !broken.is_empty() {
        bail!("links that lead nowhere:\n{}", broken.join("\n"));
    }
    Ok(())
}

fn markdown_under(dir: &Path, pages: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, pages)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    Ok(())
}

/// Each `](target)` outside code, with its 1-based line.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut fenced = false;
    for (at, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = without_code_spans(line);
        while let Some(open) = rest.find("](") {
            let after = &rest[open + 2..];
            let Some(close) = after.find(')') else { break };
            let target = after[..close].split_whitespace().next().unwrap_or("");
            found.push((at + 1, target.to_owned()));
            rest = after[close..].to_owned();
        }
    }
    found
}

/// `line` with its `code spans` blanked (a link inside one is code).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        }
        out.push(if in_code { ' ' } else { c });
    }
    out
}

fn leads_somewhere(page: &Path, text: &str, target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("is empty".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(());
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let (file, body) = if path.is_empty() {
        (page.to_path_buf(), text.to_owned())
    } else {
        let file = page.parent().unwrap_or(Path::new(".")).join(path);
        if !file.exists() {
            return Err(format!("{} does not exist", file.display()));
        }
        let body = if file.extension().is_some_and(|e| e == "md") {
            std::fs::read_to_string(&file).unwrap_or_default()
        } else {
            String::new()
        };
        (file, body)
    };
    match fragment {
        Some(anchor) if !anchors(&body).iter().any(|a| a == anchor) => {
            Err(format!("{} has no heading #{anchor}", file.display()))
        }
        _ => Ok(()),
    }
}

/// The anchors GitHub gives a page's headings: lower case, spaces to `-`,
/// punctuation other than `-` and `_` dropped.
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        let Some(heading) = line.strip_prefix('#').filter(|_| !fenced) else {
            continue;
        };
        let title = heading.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        found.push(slug);
    }
    found
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_heading_is_anchored_as_github_does() {
        let anchors = super::anchors("# The library\n## Depend on it\n## `ask`, typed\n");
        assert_eq!(anchors, ["the-library", "depend-on-it", "ask-typed"]);
    }

    #[test]
    fn links_in_code_are_not_links() {
        let text = "see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n";
        let found: Vec<String> = super::links(text).into_iter().map(|(_, t)| t).collect();
        assert_eq!(found, ["a.md"]);
    }
}
