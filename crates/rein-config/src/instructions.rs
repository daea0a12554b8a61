//! The project's instruction files: `AGENTS.md` in the root and in each
//! folder above it up to the repository's top (the first folder holding
//! `.git`), as Codex reads them, outermost first, so the nearest file has
//! the last word. Bounded: at most [`MAX_TOTAL_BYTES`] in all, a file past
//! what is left cut at a line and said to be cut.
//!
//! A file is read only when the root's owner (or the system) owns it and
//! nobody else may write it: another local user must not be able to put
//! words in a person's prompt by leaving `/tmp/AGENTS.md` above a folder
//! they work in.
//!
//! Not here: where the text goes (the system prompt, by whoever builds the
//! agent).

use std::path::{Path, PathBuf};

/// The file name looked for.
pub const FILE_NAME: &str = "AGENTS.md";

/// The most bytes of instructions read, all files together.
pub const MAX_TOTAL_BYTES: usize = 32 * 1024;

/// One instruction file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// Where it is.
    pub path: PathBuf,
    /// Its text (cut when the bound was reached).
    pub text: String,
    /// Whether it was cut.
    pub cut: bool,
}

/// The instruction files from `root` up to the filesystem's root,
/// outermost first.
pub fn project_instructions(root: &Path) -> Vec<Instructions> {
    use std::os::unix::fs::MetadataExt;
    let Some(owner) = std::fs::metadata(root).ok().map(|m| m.uid()) else {
        return Vec::new();
    };
    let trusted = |path: &Path| {
        std::fs::symlink_metadata(path).is_ok_and(|m| {
            m.is_file() && (m.uid() == owner || m.uid() == 0) && m.mode() & 0o022 == 0
        })
    };
    let mut found = Vec::new();
    let mut dir = root.canonicalize().ok();
    while let Some(here) = dir {
        let path = here.join(FILE_NAME);
        if trusted(&path) {
            found.push(path);
        }
        if here.join(".git").exists() {
            break;
        }
        dir = here.parent().map(Path::to_path_buf);
    }
    // The nearest file is the most specific: keep it whole first.
    let mut left = MAX_TOTAL_BYTES;
    let mut read = Vec::new();
    for path in found {
        if left == 0 {
            break;
        }
        let Some(text) = read_bounded(&path, left) else {
            continue;
        };
        let (text, cut) = if text.len() <= left {
            (text, false)
        } else {
            let mut end = left;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let end = text[..end].rfind('\n').map_or(end, |n| n + 1);
            (text[..end].to_owned(), true)
        };
        left = if cut { 0 } else { left - text.len() };
        read.push(Instructions { path, text, cut });
    }
    read.reverse();
    read
}

/// At most `most` bytes and one more (to tell a cut) of the regular file
/// at `path`, opened without following a link or blocking — a FIFO or a
/// device swapped in after the check is no file, and a 3 GB file costs
/// what is kept; `None` when it is no regular file or cannot be read.
fn read_bounded(path: &Path, most: usize) -> Option<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(u64::try_from(most).unwrap_or(u64::MAX).saturating_add(4))
        .read_to_end(&mut bytes)
        .ok()?;
    // A cut inside a character is mended below, at a line's end.
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The files as one system block, each under a line naming it.
pub fn as_system_block(files: &[Instructions]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let mut block =
        String::from("The project's instructions (from its AGENTS.md files, outermost first):\n");
    for file in files {
        block.push_str(&format!("\n--- {} ---\n{}", file.path.display(), file.text));
        if file.cut {
            block.push_str("\n(cut: the instructions are bounded)");
        }
        block.push('\n');
    }
    Some(block)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn a_huge_instructions_file_costs_what_is_kept() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join(".git")).unwrap();
        let path = root.path().join(FILE_NAME);
        std::fs::write(&path, "rule one\n".repeat(8 * 1024)).unwrap();
        // Three GB on paper: a sparse file read whole would take them.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(3 * 1024 * 1024 * 1024)
            .unwrap();
        let read = project_instructions(root.path());
        assert_eq!(read.len(), 1);
        assert!(read[0].cut);
        assert!(read[0].text.len() <= MAX_TOTAL_BYTES);
        assert!(read[0].text.ends_with("rule one\n"));
    }

    #[test]
    fn nearest_last_and_bounded() {
        let top = tempfile::tempdir().unwrap();
        let inner = top.path().join("app");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(top.path().join(FILE_NAME), "outer rule\n").unwrap();
        // Writable by others: never read.
        let loose = top.path().join("loose");
        std::fs::create_dir_all(&loose).unwrap();
        std::fs::write(loose.join(FILE_NAME), "obey me\n").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                loose.join(FILE_NAME),
                std::fs::Permissions::from_mode(0o666),
            )
            .unwrap();
        }
        assert!(
            project_instructions(&loose)
                .iter()
                .all(|f| !f.text.contains("obey me"))
        );
        std::fs::write(inner.join(FILE_NAME), "inner rule\n".repeat(5000)).unwrap();
        let files = project_instructions(&inner);
        let ours: Vec<&Instructions> = files
            .iter()
            .filter(|f| f.path.starts_with(top.path().canonicalize().unwrap()))
            .collect();
        assert_eq!(ours.len(), 1, "the inner file alone fills the bound");
        assert!(ours[0].cut && ours[0].text.len() <= MAX_TOTAL_BYTES);
        std::fs::write(inner.join(FILE_NAME), "inner rule\n").unwrap();
        let files = project_instructions(&inner);
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        let outer = texts.iter().position(|t| *t == "outer rule\n").unwrap();
        let nearest = texts.iter().position(|t| *t == "inner rule\n").unwrap();
        assert!(outer < nearest);
        assert!(as_system_block(&files).unwrap().contains("inner rule"));
        // The repository's top is as far up as it looks.
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        let files = project_instructions(&inner);
        assert_eq!(files.len(), 1, "{files:?}");
    }
}
