//! The project root the file tools are confined to, and every file
//! operation they make through it.
//!
//! Confinement is decided on the path actually opened, never on an earlier
//! check: the root is an open directory handle (`cap_std::fs::Dir`), and
//! every open, create, mkdir and unlink resolves its path beneath that
//! handle (`openat2` with `RESOLVE_BENEATH` where the kernel has it,
//! cap-std's own component-by-component walk elsewhere). A `..`, an
//! absolute path or a symbolic link — existing or dangling, relative or
//! absolute — that would lead outside the root fails at the open itself.
//! Hard links cannot be told apart from their outside twin by path, so a
//! file with more than one link is refused, read or written, decided on
//! the opened file's own `fstat`.
//!
//! A write is atomic (a new file in the same folder, synced, renamed over
//! the old one): a crash leaves the old file or the new one, never an
//! empty or half-written one.
//!
//! [`Root::precheck_write`] and [`Root::precheck_delete`] answer "could
//! this run?" before a person is asked; they are a courtesy, not the
//! guard: the operation itself checks again.
//!
//! Not here: what the tools say to the model (`super`), or policy about
//! which writes need a person (`rein-approvals`).

use std::io::{self, Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt as _};
use rein_wire::AgentError;
use rein_wire::error::{ErrorCode, codes};

use crate::protected::{Guarded, Protected};

/// The largest file the tools read or search.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The most files a listing or a search visits.
pub const MAX_LIST: usize = 2_000;

/// Why a file operation did not happen: a stable code for the model and
/// a sentence for it and the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The stable code (`outside_root`, `hard_link`, `not_found`, …).
    pub code: ErrorCode,
    /// What happened.
    pub message: String,
}

impl Refused {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Refused {
            code,
            message: message.into(),
        }
    }

    fn outside(path: &str) -> Self {
        Refused::new(
            codes::OUTSIDE_ROOT,
            format!("`{path}` leads outside the project root"),
        )
    }

    fn hard_link(path: &str, links: u64) -> Self {
        Refused::new(
            codes::HARD_LINK,
            format!(
                "`{path}` is a hard link ({links} names for one file): another name may be outside the project root, so rein does not touch it"
            ),
        )
    }

    /// An I/O error of an operation `doing` (`read`, `write`, `delete`)
    /// on `path`, with cap-std's confinement refusal told apart.
    fn io(path: &str, doing: &str, code: ErrorCode, err: &io::Error) -> Self {
        // cap-std reports an escape as PermissionDenied without an OS
        // error number; a real EACCES always carries one.
        if err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none() {
            return Refused::outside(path);
        }
        if err.kind() == io::ErrorKind::NotFound {
            return Refused::new(
                codes::FILE_NOT_FOUND,
                format!("cannot {doing} `{path}`: no such file"),
            );
        }
        if err.raw_os_error() == Some(libc::ENXIO) {
            return Refused::new(codes::NOT_A_FILE, format!("`{path}` is not a regular file"));
        }
        Refused::new(code, format!("cannot {doing} `{path}`: {err}"))
    }
}

/// The root the tools may touch.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    /// Where it is, resolved: what an opened folder is compared with.
    real: PathBuf,
    protected: Protected,
}

impl Root {
    /// A root at `dir`, which must be an existing directory.
    pub fn new(dir: &Path) -> Result<Self, AgentError> {
        let bad = |why: String| {
            AgentError::new(
                rein_wire::error::codes::INVALID_INPUT,
                format!("cannot use {} as the root: {why}", dir.display()),
            )
        };
        let path = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
        if !path.is_dir() {
            return Err(bad("it is not a directory".into()));
        }
        let handle =
            Dir::open_ambient_dir(&path, ambient_authority()).map_err(|e| bad(e.to_string()))?;
        Ok(Root {
            dir: handle,
            real: path,
            protected: Protected::default(),
        })
    }

    /// The root with `protected` as its protected paths (`.git` and
    /// `.rein` are in every set).
    pub fn protecting(mut self, protected: Protected) -> Self {
        self.protected = protected;
        self
    }

    /// Where the root is, resolved.
    pub fn path(&self) -> &Path {
        &self.real
    }

    /// Where `path` leads inside the root, links resolved — for a path
    /// that does not exist yet, its nearest existing folder resolved and
    /// the rest joined. `None` when it leads nowhere inside the root.
    fn resolved(&self, rel: &Path) -> Option<PathBuf> {
        let mut head = rel.to_path_buf();
        let mut tail = Vec::new();
        loop {
            if head.as_os_str().is_empty() {
                return Some(tail.iter().rev().collect());
            }
            if let Ok(real) = self.dir.canonicalize(&head) {
                return Some(tail.iter().rev().fold(real, |p, part| p.join(part)));
            }
            tail.push(head.file_name()?.to_owned());
            head.pop();
        }
    }

    /// Whether a write or delete of `path` touches a protected path — by
    /// its own name or by where it leads — and what that path does.
    pub fn guarded(&self, path: &str) -> Option<Guarded> {
        let rel = self.relative(path).ok()?;
        let resolved = self.resolved(rel);
        resolved
            .as_deref()
            .and_then(|r| self.protected.guarded(r))
            .or_else(|| self.protected.guarded(rel))
    }

    /// Whether `path` by its own name (links not followed) is protected.
    pub fn names_protected(&self, path: &str) -> bool {
        self.protected
            .guarded(Path::new(&Root::resource(path)))
            .is_some()
    }

    /// `path` as a person is shown it: with where it leads when that is
    /// elsewhere (`notes.md → .git/config`).
    pub fn shown(&self, path: &str) -> String {
        let Ok(rel) = self.relative(path) else {
            return path.to_owned();
        };
        match self.resolved(rel) {
            Some(target) if Path::new(&Root::resource(path)) != target => {
                format!("{path} → {}", target.display())
            }
            _ => path.to_owned(),
        }
    }

    /// Refuse a change of `name` in the opened `folder` when that is a
    /// protected path and the person was not asked about this very call:
    /// decided on the folder actually opened, so a link swapped since the
    /// question changes nothing.
    fn unprotected(
        &self,
        folder: &Dir,
        name: &std::ffi::OsStr,
        path: &str,
        asked: bool,
    ) -> Result<(), Refused> {
        use std::os::fd::AsRawFd as _;
        if asked {
            return Ok(());
        }
        let opened = std::fs::read_link(format!("/proc/self/fd/{}", folder.as_raw_fd()))
            .map_err(|e| Refused::io(path, "write", codes::WRITE_FAILED, &e))?;
        let inside = opened
            .strip_prefix(&self.real)
            .unwrap_or(&opened)
            .join(name);
        match self.protected.guarded(&inside) {
            Some(guarded) => Err(Refused::new(
                codes::PROTECTED_PATH,
                format!(
                    "`{path}` leads to {} ({}); it is changed only with the person's yes to that very call",
                    guarded.target, guarded.what
                ),
            )),
            None => Ok(()),
        }
    }

    /// `path` as a relative path inside the root, or why not. Decides on
    /// the words only: empty, absolute and `..` paths never reach a system
    /// call.
    fn relative<'p>(&self, path: &'p str) -> Result<&'p Path, Refused> {
        let rel = Path::new(path);
        let lexical_ok = !path.is_empty()
            && rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if lexical_ok {
            Ok(rel)
        } else {
            Err(Refused::new(
                codes::OUTSIDE_ROOT,
                format!("`{path}` is not a path inside the project root"),
            ))
        }
    }

    /// Whether `len` bytes may be written to `path`: at most
    /// [`MAX_FILE_BYTES`], what a read takes back — rein never writes a file
    /// it could not read again.
    pub fn writable_size(path: &str, len: usize) -> Result<(), Refused> {
        if len as u64 > MAX_FILE_BYTES {
            return Err(Refused::new(
                codes::FILE_TOO_LARGE,
                format!(
                    "the new `{path}` would be {len} bytes; the limit is {MAX_FILE_BYTES}, what a read takes back"
                ),
            ));
        }
        Ok(())
    }

    /// Read a whole regular file (at most [`MAX_FILE_BYTES`]).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, Refused> {
        let rel = self.relative(path)?;
        let mut options = OpenOptions::new();
        // Non-blocking: a FIFO planted in the tree cannot hang the read.
        options
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        let file = self
            .dir
            .open_with(rel, &options)
            .map_err(|e| Refused::io(path, "read", codes::READ_FAILED, &e))?;
        let meta = file
            .metadata()
            .map_err(|e| Refused::io(path, "read", codes::READ_FAILED, &e))?;
        one_regular_file(path, &meta)?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(Refused::new(
                codes::FILE_TOO_LARGE,
                format!(
                    "`{path}` is {} bytes; the limit is {MAX_FILE_BYTES}",
                    meta.len()
                ),
            ));
        }
        let mut bytes = Vec::new();
        file.into_std()
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| Refused::io(path, "read", codes::READ_FAILED, &e))?;
        Ok(bytes)
    }

    /// Could a write of `path` run? The components that exist must stay
    /// inside the root; a symbolic link on the way must lead to something
    /// that exists inside it; an existing target must be a regular file
    /// with one link.
    pub fn precheck_write(&self, path: &str) -> Result<(), Refused> {
        let rel = self.relative(path)?;
        let mut prefix = PathBuf::new();
        for part in rel.components() {
            prefix.push(part);
            let here = match self.dir.symlink_metadata(&prefix) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(Refused::io(path, "write", codes::WRITE_FAILED, &e)),
            };
            if here.is_symlink() {
                match self.dir.metadata(&prefix) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(Refused::new(
                            codes::DANGLING_LINK,
                            format!(
                                "`{}` is a symbolic link to nothing; rein does not create files through links",
                                prefix.display()
                            ),
                        ));
                    }
                    Err(e) => return Err(Refused::io(path, "write", codes::WRITE_FAILED, &e)),
                }
            }
        }
        let meta = self
            .dir
            .metadata(rel)
            .map_err(|e| Refused::io(path, "write", codes::WRITE_FAILED, &e))?;
        one_regular_file(path, &meta)?;
        Ok(())
    }

    /// Create or replace a regular file with `bytes`, creating its folders,
    /// atomically: the bytes go to a new hidden file in the same folder,
    /// are synced, and the new file is renamed over the old one (the
    /// folder synced after), so a crash at any point leaves the old file
    /// or the new one, never an empty or a half-written one. The file keeps
    /// its permission bits and (where rein may) its owner; `mode` sets the
    /// bits instead (an undo gives back what a change took). A symbolic
    /// link inside the root stays a link: its target is replaced.
    /// A protected path is written only when `asked` (the person said yes
    /// to this very call, or it is the person's own undo).
    pub fn write(
        &self,
        path: &str,
        bytes: &[u8],
        mode: Option<u32>,
        asked: bool,
    ) -> Result<(), Refused> {
        use cap_std::fs::{MetadataExt as _, PermissionsExt as _};
        let rel = self.relative(path)?;
        let failed = |e: io::Error| Refused::io(path, "write", codes::WRITE_FAILED, &e);
        let target = self.through_link(path, rel)?;
        let (folder, name) = match (target.parent(), target.file_name()) {
            (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
                self.dir.create_dir_all(parent).map_err(failed)?;
                (self.dir.open_dir(parent).map_err(failed)?, name.to_owned())
            }
            (_, Some(name)) => (self.dir.try_clone().map_err(failed)?, name.to_owned()),
            _ => return Err(Refused::outside(path)),
        };
        self.unprotected(&folder, &name, path, asked)?;
        let existing = match folder.symlink_metadata(&name) {
            Ok(meta) => {
                one_regular_file(path, &meta)?;
                Some(meta)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(failed(e)),
        };
        let bits = mode.or_else(|| existing.as_ref().map(|m| m.permissions().mode() & 0o7777));
        let temp = format!(
            ".{}.rein-{}.tmp",
            name.to_string_lossy(),
            rein_wire::ids::new_id()
        );
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY);
        let file = folder.open_with(&temp, &options).map_err(failed)?;
        let written = (|| {
            let file = file.into_std();
            if let Some(meta) = &existing {
                // Best effort: only a privileged rein may give a file away.
                let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
            }
            if let Some(bits) = bits {
                file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(bits))?;
            }
            (&file).write_all(bytes)?;
            file.sync_all()?;
            folder.rename(&temp, &folder, &name)
        })();
        if let Err(e) = written {
            let _ = folder.remove_file(&temp);
            return Err(failed(e));
        }
        sweep_stale(&folder, &name);
        // The rename is durable once the folder is.
        folder
            .open(".")
            .and_then(|dir| dir.into_std().sync_all())
            .map_err(failed)
    }

    /// Where a write of `path` lands: `rel` itself, or — when it is a
    /// symbolic link — the file it leads to, resolved beneath the root.
    fn through_link(&self, path: &str, rel: &Path) -> Result<PathBuf, Refused> {
        match self.dir.symlink_metadata(rel) {
            Ok(meta) if meta.is_symlink() => self
                .dir
                .canonicalize(rel)
                .map_err(|e| Refused::io(path, "write", codes::WRITE_FAILED, &e)),
            _ => Ok(rel.to_path_buf()),
        }
    }

    /// The name a change to `path` is kept under: its parts joined by `/`,
    /// `.` left out (`./a//b` and `a/b` are one file).
    pub fn resource(path: &str) -> String {
        Path::new(path)
            .components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_string_lossy()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// `path` at the revision it has now: its content's hash, none when it
    /// does not exist (what cannot be read is named by why).
    pub fn revision(&self, path: &str) -> rein_wire::Revision {
        let token = match self.read(path) {
            Ok(bytes) => Some(rein_sessions::hash_hex(&bytes)),
            Err(refused) if refused.code == codes::FILE_NOT_FOUND => None,
            Err(refused) => Some(format!("unreadable: {}", refused.code)),
        };
        rein_wire::Revision::new(Root::resource(path), token)
    }

    /// Could a delete of `path` run? It must exist inside the root and
    /// not be a folder.
    pub fn precheck_delete(&self, path: &str) -> Result<(), Refused> {
        let rel = self.relative(path)?;
        let meta = self
            .dir
            .symlink_metadata(rel)
            .map_err(|e| Refused::io(path, "delete", codes::DELETE_FAILED, &e))?;
        if meta.is_dir() {
            return Err(Refused::new(
                codes::NOT_A_FILE,
                format!("`{path}` is a folder"),
            ));
        }
        Ok(())
    }

    /// A regular file's permission bits (`None` when it cannot be told).
    pub fn mode(&self, path: &str) -> Option<u32> {
        use cap_std::fs::PermissionsExt;
        let rel = self.relative(path).ok()?;
        let meta = self.dir.metadata(rel).ok()?;
        meta.is_file().then(|| meta.permissions().mode() & 0o7777)
    }

    /// Where the symbolic link at `path` points, as written in it, or
    /// `None` when `path` is no link.
    pub fn link_target(&self, path: &str) -> Option<PathBuf> {
        let rel = self.relative(path).ok()?;
        let meta = self.dir.symlink_metadata(rel).ok()?;
        if !meta.is_symlink() {
            return None;
        }
        self.dir.read_link_contents(rel).ok()
    }

    /// Make `path` a symbolic link to `target` again (an undone delete: the
    /// link the person had, never a copy of what it points to).
    pub fn make_link(&self, path: &str, target: &Path) -> Result<(), Refused> {
        let rel = self.relative(path)?;
        self.dir
            .symlink_contents(target, rel)
            .map_err(|e| Refused::io(path, "write", codes::WRITE_FAILED, &e))
    }

    /// Remove a file (a symbolic link is removed itself, never its
    /// target); a protected one only when `asked`, as [`Root::write`].
    pub fn remove(&self, path: &str, asked: bool) -> Result<(), Refused> {
        let rel = self.relative(path)?;
        let failed = |e: io::Error| Refused::io(path, "delete", codes::DELETE_FAILED, &e);
        let (folder, name) = match (rel.parent(), rel.file_name()) {
            (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
                (self.dir.open_dir(parent).map_err(failed)?, name)
            }
            (_, Some(name)) => (self.dir.try_clone().map_err(failed)?, name),
            _ => return Err(Refused::outside(path)),
        };
        self.unprotected(&folder, name, path, asked)?;
        folder.remove_file(name).map_err(failed)
    }

    /// The regular files under `folder` (`None`: the whole root), hidden
    /// names and `target/` left out, symbolic links not followed, in name
    /// order, at most [`MAX_LIST`]. Paths are relative to the root.
    pub fn walk(&self, folder: Option<&str>) -> Result<Vec<String>, Refused> {
        let start = match folder {
            Some(path) => {
                let rel = self.relative(path)?;
                Some(
                    self.dir
                        .open_dir(rel)
                        .map_err(|e| Refused::io(path, "list", codes::LIST_FAILED, &e))?,
                )
            }
            None => None,
        };
        let base = folder.map(PathBuf::from).unwrap_or_default();
        let mut out = Vec::new();
        walk_into(start.as_ref().unwrap_or(&self.dir), &base, &mut out);
        Ok(out)
    }
}

/// How old a writer's leftover temporary file must be before the next
/// write of its file removes it: older than any write in progress.
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(60);

/// Remove what a writer killed mid-write left beside `name` in `folder`
/// (`.NAME.rein-ID.tmp`, never renamed over it), once it is old enough to
/// be no live writer's.
fn sweep_stale(folder: &Dir, name: &std::ffi::OsStr) {
    let prefix = format!(".{}.rein-", name.to_string_lossy());
    let Ok(entries) = folder.entries() else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        if !(file.starts_with(&prefix) && file.ends_with(".tmp")) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| t.into_std().elapsed().unwrap_or_default() > STALE_TEMP);
        if matches!(old, Ok(true)) {
            let _ = folder.remove_file(&*file);
        }
    }
}

/// The one rule for what a file tool may open: a regular file with one
/// link (a second name may be outside the root), decided on its metadata.
fn one_regular_file(path: &str, meta: &cap_std::fs::Metadata) -> Result<(), Refused> {
    if !meta.is_file() {
        return Err(Refused::new(
            codes::NOT_A_FILE,
            format!("`{path}` is not a file"),
        ));
    }
    let links = cap_std::fs::MetadataExt::nlink(meta);
    if links > 1 {
        return Err(Refused::hard_link(path, links));
    }
    Ok(())
}

fn walk_into(dir: &Dir, at: &Path, out: &mut Vec<String>) {
    let Ok(entries) = dir.entries() else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if out.len() >= MAX_LIST {
            return;
        }
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') || name == "target" {
            continue;
        }
        // The entry's own type: a symbolic link is neither file nor folder.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = at.join(&name);
        if kind.is_dir() {
            if let Ok(sub) = entry.open_dir() {
                walk_into(&sub, &path, out);
            }
        } else if kind.is_file() {
            out.push(path.to_string_lossy().into_owned());
        }
    }
}
