//! The files of the checkpoints: the user's (read by content, restored atomically, the
//! folders a write created) and the stored versions (`objects/<sha256>`, written once). It
//! must never create anything in the user's project but a restored file (through a
//! temporary file beside it, renamed over it) and the folders that file needs.

use std::collections::{BTreeSet, HashSet};
use std::fs;
use std::io::{ErrorKind as IoKind, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::path_text;
use genai_base::error::{Error, ErrorKind, Result};

/// What is at a path, by content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    Absent,
    File { hash: String, mode: Option<u32> },
    Folder,
}

/// The stored versions: one file per content, named by its SHA-256.
pub(super) struct Blobs {
    dir: PathBuf,
}

impl Blobs {
    /// The store in `dir`, created (readable by the user only) when missing.
    pub(super) fn open(dir: PathBuf) -> Result<Blobs> {
        create_private_dir(&dir)?;
        Ok(Blobs { dir })
    }

    /// Writes a blob once: temporary file, then rename to its hash.
    pub fn store(&self, hash: &str, bytes: &[u8]) -> Result<()> {
        let target = self.dir.join(hash);
        if target.is_file() {
            return Ok(());
        }
        let tmp = self.dir.join(format!(
            ".tmp-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        // No fsync: a version lost to a power cut is caught by the hash check of undo, and a
        // sync per edited file would cost each tool call milliseconds.
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .and_then(|mut f| f.write_all(bytes))
            .and_then(|()| fs::rename(&tmp, &target));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io_error("cannot store a checkpoint in", &self.dir, e));
        }
        Ok(())
    }

    /// A blob's bytes, checked against its hash.
    pub(super) fn load(&self, hash: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(hash);
        let bytes = fs::read(&path).map_err(|e| {
            Error::new(
                ErrorKind::Store,
                format!(
                    "the checkpoint {} is unreadable ({e}): this file cannot be restored",
                    path.display()
                ),
            )
        })?;
        if sha256_hex(&bytes) != hash {
            return Err(Error::new(
                ErrorKind::Store,
                format!(
                    "the checkpoint {} is damaged (its content no longer matches its hash): this \
                     file cannot be restored",
                    path.display()
                ),
            ));
        }
        Ok(bytes)
    }

    /// Deletes every file but the versions in `keep` (pruned versions, and temporary files
    /// a crashed writer left: the caller holds the index's write lock, so no writer is
    /// active). Answers the versions deleted and the bytes freed.
    pub(crate) fn sweep(&self, keep: &HashSet<String>) -> Result<(u64, u64)> {
        let (mut count, mut bytes) = (0, 0);
        let entries = fs::read_dir(&self.dir).map_err(|e| io_error("cannot read", &self.dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_error("cannot read", &self.dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if keep.contains(&name) {
                continue;
            }
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            match fs::remove_file(entry.path()) {
                Ok(()) => {
                    if !name.starts_with(".tmp-") {
                        count += 1;
                    }
                    bytes += size;
                }
                Err(e) if e.kind() == IoKind::NotFound => {}
                Err(e) => return Err(io_error("cannot delete", &entry.path(), e)),
            }
        }
        Ok((count, bytes))
    }
}

/// Removes the folders the turn created that are empty again, deepest first.
pub(super) fn remove_created_dirs<'a>(dirs: impl Iterator<Item = &'a String>) -> Vec<String> {
    let dirs: BTreeSet<&String> = dirs.collect();
    let mut dirs: Vec<&String> = dirs.into_iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(Path::new(d).components().count()));
    // remove_dir fails on a folder that is not empty: that one stays, with what is in it.
    dirs.into_iter()
        .filter(|d| fs::remove_dir(d).is_ok())
        .cloned()
        .collect()
}

/// The folders above `path`, inside `root`, that do not exist yet (the write will create
/// them), deepest first.
pub(crate) fn missing_dirs(root: &Path, path: &Path) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    for dir in path.ancestors().skip(1) {
        if dir == root || !dir.starts_with(root) || dir.symlink_metadata().is_ok() {
            break;
        }
        missing.push(path_text(dir)?.to_string());
    }
    Ok(missing)
}

/// A file's bytes and mode, or `None` when it does not exist.
pub(super) fn read_file(path: &Path) -> Result<Option<(Vec<u8>, Option<u32>)>> {
    match fs::metadata(path) {
        Err(e) if e.kind() == IoKind::NotFound => Ok(None),
        Err(e) => Err(io_error("cannot read", path, e)),
        Ok(meta) if meta.is_dir() => Err(Error::invalid_params(format!(
            "{} is a folder: only files are checkpointed",
            path.display()
        ))),
        Ok(meta) => {
            let bytes = fs::read(path).map_err(|e| io_error("cannot read", path, e))?;
            Ok(Some((bytes, mode_of(&meta))))
        }
    }
}

/// The mode of the file at `path`, if there is one.
pub(super) fn mode_at(path: &Path) -> Option<u32> {
    fs::metadata(path).ok().and_then(|m| mode_of(&m))
}

pub(super) fn current_state(path: &Path) -> Result<State> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(State::Folder),
        _ => Ok(match read_file(path)? {
            None => State::Absent,
            Some((bytes, mode)) => State::File {
                hash: sha256_hex(&bytes),
                mode,
            },
        }),
    }
}

/// Replaces `path` by `bytes` with `mode`: a temporary file beside it, renamed over it (the
/// file is never seen half written). A symbolic link is written through, as a tool would.
pub(super) fn write_atomically(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    let target = match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => fs::canonicalize(path).unwrap_or(path.to_path_buf()),
        _ => path.to_path_buf(),
    };
    let dir = target
        .parent()
        .ok_or_else(|| Error::invalid_params(format!("{} has no folder", target.display())))?;
    fs::create_dir_all(dir).map_err(|e| io_error("cannot create", dir, e))?;
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.genai-undo-{:016x}", fastrand::u64(..)));
    let written = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| set_mode(&tmp, mode))
        .and_then(|()| fs::rename(&tmp, &target));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io_error("cannot restore", &target, e));
    }
    Ok(())
}

#[cfg(unix)]
fn mode_of(meta: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_of(_: &fs::Metadata) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: Option<u32>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    match mode {
        Some(mode) => fs::set_permissions(path, fs::Permissions::from_mode(mode)),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: Option<u32>) -> std::io::Result<()> {
    Ok(())
}

/// The checkpoints hold the user's code: only the user may read them.
fn create_private_dir(dir: &Path) -> Result<()> {
    genai_base::private::dir(dir).map_err(|e| io_error("cannot create", dir, e))
}

/// Lower-case hex of SHA-256 (by hand: two lines do not need the `hex` crate).
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(super) fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(ErrorKind::Store, format!("{what} {}: {e}", path.display()))
}
