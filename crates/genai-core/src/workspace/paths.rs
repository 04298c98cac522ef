//! The workspace root and the confinement of every path the workspace tools are given.
//!
//! It owns [`Root`]: which folder the tools may reach, how a path the model gives (relative or
//! absolute) becomes an absolute path under it, and the root-relative spelling used in rules
//! and messages. It refuses any path that leaves the root, lexically (`..`) or through a
//! symlink. It must never read, write or list a file itself, and never hand out a path it has
//! not checked.

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

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
    pub fn resolve_path(&self, shown: &str, given: &Path) -> Result<PathBuf> {
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
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Root) {
        let work = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(work.path().join("src/inner")).expect("mkdir");
        std::fs::write(work.path().join("src/a.rs"), "fn a() {}\n").expect("write");
        std::fs::write(outside.path().join("secret.txt"), "x").expect("write");
        let root = Root::new(work.path()).expect("root");
        (work, outside, root)
    }

    fn refused(root: &Root, given: &str) -> String {
        match root.resolve(given) {
            Ok(p) => panic!("`{given}` was allowed as {}", p.display()),
            Err(e) => e.message,
        }
    }

    #[test]
    fn root_itself_is_dot_and_empty() {
        let (_w, _o, root) = setup();
        assert_eq!(root.resolve(".").expect("dot"), root.path());
        assert_eq!(root.resolve("").expect("empty"), root.path());
        assert_eq!(root.resolve("src/..").expect("src/.."), root.path());
        assert_eq!(root.relative(root.path()), ".");
    }

    #[test]
    fn relative_paths_inside_resolve_under_the_root() {
        let (_w, _o, root) = setup();
        let p = root.resolve("./src/inner/../a.rs").expect("inside");
        assert_eq!(p, root.path().join("src/a.rs"));
        assert_eq!(root.relative(&p), "src/a.rs");
    }

    #[test]
    fn dot_dot_leaving_the_root_is_refused() {
        let (_w, _o, root) = setup();
        let msg = refused(&root, "../x");
        assert!(
            msg.starts_with("`../x` is outside the workspace root "),
            "{msg}"
        );
        assert!(msg.ends_with(": tools reach only files under it"), "{msg}");
        refused(&root, "a/../../x");
        refused(&root, "src/../../src");
    }

    #[test]
    fn absolute_paths_inside_are_allowed_and_outside_refused() {
        let (_w, outside, root) = setup();
        let inside = root.path().join("src/a.rs");
        let given = inside.to_str().expect("utf8");
        assert_eq!(root.resolve(given).expect("inside"), inside);
        let out = outside.path().join("secret.txt");
        refused(&root, out.to_str().expect("utf8"));
        refused(&root, "/etc/passwd");
        let sneaky = format!("{}/../x", root.path().display());
        refused(&root, &sneaky);
    }

    #[test]
    fn a_new_path_is_checked_through_its_existing_ancestor() {
        let (_w, _o, root) = setup();
        let p = root.resolve("src/new/deeper/file.md").expect("new");
        assert_eq!(p, root.path().join("src/new/deeper/file.md"));
    }

    #[test]
    fn a_missing_root_is_an_error() {
        let err = Root::new(Path::new("/no/such/folder/anywhere")).expect_err("missing");
        assert!(
            err.message.contains("/no/such/folder/anywhere"),
            "{}",
            err.message
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").expect("write");
        let err = Root::new(&file).expect_err("a file");
        assert!(err.message.contains("not a folder"), "{}", err.message);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_outside_are_refused() {
        use std::os::unix::fs::symlink;
        let (work, outside, root) = setup();
        symlink(
            outside.path().join("secret.txt"),
            work.path().join("link.txt"),
        )
        .expect("ln");
        symlink(outside.path(), work.path().join("out")).expect("ln");
        symlink("/no/such/target", work.path().join("dangling")).expect("ln");
        let msg = refused(&root, "link.txt");
        assert!(msg.contains("through a symlink that leads out"), "{msg}");
        refused(&root, "out");
        refused(&root, "out/secret.txt");
        refused(&root, "out/new/nested/file.txt");
        let msg = refused(&root, "dangling");
        assert!(msg.contains("points nowhere"), "{msg}");
        // An absolute path elsewhere: plainly outside, and where links lead is never said.
        let elsewhere = outside.path().join("secret.txt");
        let msg = refused(&root, elsewhere.to_str().unwrap());
        assert!(!msg.contains("symlink"), "{msg}");
        let msg = refused(&root, "link.txt");
        assert!(
            !msg.contains(&elsewhere.display().to_string()[1..]),
            "{msg}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_inside_pointing_inside_are_allowed() {
        use std::os::unix::fs::symlink;
        let (work, _o, root) = setup();
        symlink(work.path().join("src/a.rs"), work.path().join("alias.rs")).expect("ln");
        symlink("src", work.path().join("code")).expect("ln");
        assert_eq!(
            root.resolve("alias.rs").expect("alias"),
            root.path().join("src/a.rs")
        );
        assert_eq!(
            root.resolve("code/new.rs").expect("through folder link"),
            root.path().join("src/new.rs")
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_root_reached_through_a_symlink_is_canonical() {
        use std::os::unix::fs::symlink;
        let (work, outside, _root) = setup();
        let alias = outside.path().join("alias");
        symlink(work.path(), &alias).expect("ln");
        let root = Root::new(&alias).expect("root via link");
        assert_eq!(
            root.path(),
            std::fs::canonicalize(work.path()).expect("canon")
        );
        let via_alias = alias.join("src/a.rs");
        let p = root
            .resolve(via_alias.to_str().expect("utf8"))
            .expect("inside via alias");
        assert_eq!(root.relative(&p), "src/a.rs");
    }
}
