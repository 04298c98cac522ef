//! `list`, and what it and `search` see of the workspace: the walk (ignore files honoured,
//! `.git` skipped, symlinks not followed) and the `glob` argument's filter.
//!
//! It owns which paths a listing shows. It must never read a file's content (`files.rs` and
//! `search.rs` do) nor walk outside the root.

use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::WalkBuilder;

use super::files::{not_found_or, thousands};
use super::paths::Root;
use genai_base::error::{Error, Result};

/// Entries `list` shows.
const MAX_LIST_ENTRIES: usize = 1000;

/// list {path?, glob?}: the files and folders under `path` (default the root), recursively,
/// honouring .gitignore/.ignore/git excludes (whether or not the root is a git repository) and
/// skipping `.git`; folders end with `/`; paths are root-relative and sorted; at most 1000
/// entries, with a note of how many more. `glob` (gitignore syntax: `*.rs` at any depth,
/// `src/*.toml` from the root, `**/*.rs`) keeps only the files it matches (and no folders).
pub fn list(root: &Root, path: Option<&str>, glob: Option<&str>) -> Result<String> {
    let given = path.unwrap_or(".");
    let start = root.resolve(given)?;
    let filter = glob.map(|g| GlobFilter::new(root, g)).transpose()?;
    let meta = std::fs::metadata(&start)
        .map_err(|e| not_found_or(&root.relative(&start), e, "list its parent folder"))?;
    if !meta.is_dir() {
        return Ok(root.relative(&start));
    }
    let mut entries = Vec::new();
    for entry in walk(&start).filter_map(|e| e.ok()) {
        if entry.depth() == 0 {
            continue;
        }
        let rel = root.relative(entry.path());
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        match &filter {
            Some(f) if is_dir || !f.matches(&rel) => {}
            _ if is_dir => entries.push(format!("{rel}/")),
            _ => entries.push(rel),
        }
    }
    entries.sort();
    let shown_start = root.relative(&start);
    if entries.is_empty() {
        return Ok(match glob {
            Some(g) => format!("no files under `{shown_start}` match `{g}`"),
            None => format!("`{shown_start}` is empty (or all of it is ignored)"),
        });
    }
    let total = entries.len();
    entries.truncate(MAX_LIST_ENTRIES);
    let mut out = entries.join("\n");
    if total > MAX_LIST_ENTRIES {
        out.push_str(&format!(
            "\n({} more entries not shown: list a subfolder or give a glob)",
            thousands((total - MAX_LIST_ENTRIES) as u64)
        ));
    }
    Ok(out)
}

/// A walk of what `list` and `search` see under `start`: ignore files honoured (.gitignore,
/// .ignore, git's excludes, with or without a git repository), hidden files included, `.git`
/// skipped, symlinks not followed.
pub fn walk(start: &Path) -> ignore::Walk {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder.build()
}

/// A `glob` argument of `list` and `search`, in gitignore syntax, matched against
/// root-relative paths (a folder's glob matches every file under it).
pub(crate) struct GlobFilter(Gitignore);

impl GlobFilter {
    /// The filter of `glob`; an error naming the problem when it is not a valid glob.
    pub fn new(root: &Root, glob: &str) -> Result<GlobFilter> {
        let line = glob.trim().trim_start_matches("./");
        let bad = |why: String| Error::invalid_params(format!("bad glob `{glob}`: {why}"));
        if line.is_empty() || line.starts_with('!') || line.starts_with('#') {
            return Err(bad(
                "give a pattern such as `*.rs` or `src/**/*.toml`".into()
            ));
        }
        let mut builder = GitignoreBuilder::new(root.path());
        builder.allow_unclosed_class(false); // `src/[` is a mistake to report, not a literal
        builder
            .add_line(None, line)
            .map_err(|e| bad(e.to_string()))?;
        builder
            .build()
            .map(GlobFilter)
            .map_err(|e| bad(e.to_string()))
    }

    /// Whether the file at `relative` (root-relative, `/`-separated) matches.
    pub fn matches(&self, relative: &str) -> bool {
        self.0
            .matched_path_or_any_parents(relative, false)
            .is_ignore()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::files::tests::{put, workspace};

    #[test]
    fn list_honours_gitignore_without_a_repository() {
        let (dir, root) = workspace();
        put(&dir, ".gitignore", b"target/\n*.log\n");
        put(&dir, "src/main.rs", b"");
        put(&dir, "src/lib.rs", b"");
        put(&dir, "Cargo.toml", b"");
        put(&dir, "debug.log", b"");
        put(&dir, "target/out.rs", b"");
        put(&dir, ".git/config", b"");
        let text = list(&root, None, None).expect("list");
        assert_eq!(
            text, ".gitignore\nCargo.toml\nsrc/\nsrc/lib.rs\nsrc/main.rs",
            "ignored and .git entries must not show"
        );
        let sub = list(&root, Some("src"), None).expect("list src");
        assert_eq!(sub, "src/lib.rs\nsrc/main.rs");
        assert_eq!(
            list(&root, Some("src/lib.rs"), None).expect("a file"),
            "src/lib.rs"
        );
        let err = list(&root, Some("nope"), None).expect_err("missing");
        assert!(
            err.message.contains("`nope` does not exist"),
            "{}",
            err.message
        );
        list(&root, Some(".."), None).expect_err("outside");
    }

    #[test]
    fn list_filters_files_by_glob() {
        let (dir, root) = workspace();
        put(&dir, "src/main.rs", b"");
        put(&dir, "src/deep/x.rs", b"");
        put(&dir, "src/Cargo.toml", b"");
        put(&dir, "Cargo.toml", b"");
        assert_eq!(
            list(&root, None, Some("**/*.rs")).expect("glob"),
            "src/deep/x.rs\nsrc/main.rs"
        );
        assert_eq!(
            list(&root, None, Some("*.rs")).expect("glob"),
            "src/deep/x.rs\nsrc/main.rs"
        );
        assert_eq!(
            list(&root, None, Some("src/*.toml")).expect("glob"),
            "src/Cargo.toml"
        );
        assert_eq!(
            list(&root, None, Some("src/deep")).expect("glob"),
            "src/deep/x.rs"
        );
        let none = list(&root, None, Some("*.py")).expect("glob");
        assert_eq!(none, "no files under `.` match `*.py`");
        list(&root, None, Some("src/[")).expect_err("bad glob");
    }

    #[test]
    fn list_caps_at_1000_entries() {
        let (dir, root) = workspace();
        for i in 0..1005 {
            put(&dir, &format!("f{i:04}"), b"");
        }
        let text = list(&root, None, None).expect("list");
        assert_eq!(text.lines().count(), 1001);
        assert!(text.ends_with("(5 more entries not shown: list a subfolder or give a glob)"));
    }
}
