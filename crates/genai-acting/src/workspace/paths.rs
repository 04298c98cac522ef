//! The workspace root and the confinement of every path the workspace tools are given.
//!
//! It owns [`Root`]: which folder the tools may reach, how a path the model gives (relative or
//! absolute) becomes an absolute path under it, and the root-relative spelling used in rules
//! and messages. It refuses any path that leaves the root, lexically (`..`) or through a
//! symlink. It must never read, write or list a file itself, and never hand out a path it has
//! not checked.

use std::path::{Component, Path, PathBuf};

use genai_base::error::{Error, ErrorKind, Result};

/// The folder the workspace tools are confined to (canonical, absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    path: PathBuf,
}

impl Root {
    /// Canonicalizes `path`; an error when it does not exist or is not a folder.
    pub fn new(path: &Path) -> Result<Root> {
        let canonical = std::fs::canonicalize(path).map_err(|e| {
            Error::invalid_params(format!(
                "workspace root {}: {e}: give an existing folder",
                path.display()
            ))
        })?;
        if !canonical.is_dir() {
            return Err(Error::invalid_params(format!(
                "workspace root {} is not a folder: give the project's folder",
                path.display()
            )));
        }
        Ok(Root { path: canonical })
    }

    /// The canonical, absolute path of the root.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The absolute path inside the root that `given` (relative to the root, or absolute) names.
    ///
    /// Refused with a clear error: any path that leaves the root lexically (`..`), an absolute
    /// path outside, and a path any of whose existing components is a symlink resolving outside
    /// the root (or nowhere). A path that does not exist yet (for write_file) is checked
    /// through its nearest existing ancestor. `.` and "" are the root. The answer has every
    /// symlink resolved, so it names the file that will really be read or written.
    pub fn resolve(&self, given: &str) -> Result<PathBuf> {
        self.resolve_path(given, Path::new(given))
    }

    /// [`Root::resolve`] for a path already held as a `Path` (`shown` is how messages name it).
    pub(crate) fn resolve_path(&self, shown: &str, given: &Path) -> Result<PathBuf> {
        let lexical = self.lexical(shown, given)?;
        let (existing, rest) = split_existing(&lexical);
        // `existing` is the longest prefix present on disk (a dangling symlink counts as
        // present); resolving it follows every symlink on the way.
        let real = std::fs::canonicalize(&existing).map_err(|e| {
            if existing
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                self.outside(shown, Some("through a symlink that points nowhere"))
            } else {
                Error::new(
                    ErrorKind::FeatureError,
                    format!("cannot resolve `{shown}`: {e}"),
                )
            }
        })?;
        if !real.starts_with(&self.path) {
            // Where it leads is not said: the model learns nothing of the disk outside.
            let why = lexical
                .starts_with(&self.path)
                .then_some("through a symlink that leads out of it");
            return Err(self.outside(shown, why));
        }
        Ok(rest.iter().fold(real, |acc, name| acc.join(name)))
    }

    /// The root-relative form with `/` separators ("." for the root), for rules and messages.
    /// A path not under the root (which `resolve` never answers) is shown as it is.
    pub fn relative(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.path) {
            Ok(rel) => {
                let parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.is_empty() {
                    ".".to_string()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => abs.display().to_string(),
        }
    }

    /// `given` made absolute and normalized without touching the disk: `.` dropped, `..`
    /// taken lexically. A relative path whose `..` climbs above the root, and an absolute path
    /// not under the root (nor under the path the root was reached by), are refused.
    fn lexical(&self, shown: &str, given: &Path) -> Result<PathBuf> {
        if given.is_absolute() {
            let normalized = normalize(given).ok_or_else(|| self.outside(shown, None))?;
            // An absolute path may reach the root through a symlinked parent (macOS /tmp is
            // /private/tmp): the disk check in `resolve_path` settles those.
            return Ok(normalized);
        }
        let mut out = self.path.clone();
        let mut depth = 0usize;
        for component in given.components() {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    if depth == 0 {
                        return Err(self.outside(shown, None));
                    }
                    depth -= 1;
                    out.pop();
                }
                Component::Normal(name) => {
                    depth += 1;
                    out.push(name);
                }
                // A Windows drive-relative path (`C:x`, `\x`): not under the root.
                Component::Prefix(_) | Component::RootDir => {
                    return Err(self.outside(shown, None));
                }
            }
        }
        Ok(out)
    }

    /// The refusal of a path that leaves the root.
    fn outside(&self, shown: &str, why: Option<&str>) -> Error {
        let why = why.map(|w| format!(" ({w})")).unwrap_or_default();
        Error::invalid_params(format!(
            "`{shown}` is outside the workspace root {}{why}: tools reach only files under it",
            self.path.display()
        ))
    }
}

/// An absolute path with `.` dropped and `..` applied lexically; `None` when `..` climbs
/// above the filesystem root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// Splits an absolute, normalized path into its longest prefix present on disk and the names
/// after it (which do not exist yet). A dangling symlink is present: it is not skipped over.
fn split_existing(path: &Path) -> (PathBuf, Vec<std::ffi::OsString>) {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while existing.symlink_metadata().is_err() {
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    rest.reverse();
    (existing, rest)
}

#[cfg(test)]
#[path = "paths_tests.rs"]
mod tests;
