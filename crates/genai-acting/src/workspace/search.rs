//! The search tool of the workspace: the lines of the project's files that match a regular
//! expression, on ripgrep's own crates (grep-regex, grep-searcher) over the same walk as
//! `list`.
//!
//! It owns which files are searched (ignore files honoured, binary files skipped, files the
//! caller's `skip` names left out) and the `REL:LINE:text` answer. It must never search outside
//! the root, never follow a symlink out of it, and never show a line of a file `skip` names.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};

use super::files::{cut_chars, thousands};
use super::listing::{walk, GlobFilter};
use super::paths::Root;
use genai_base::error::{Error, Result};

/// Matches shown at most.
const MAX_MATCHES: usize = 200;
/// Characters of a matching line shown.
const MAX_LINE_CHARS: usize = 500;

/// search {pattern, path?, glob?}: the lines matching the regular expression `pattern` under
/// `path` (a folder walked honouring .gitignore like `list`, or one file), filtered by `glob`,
/// as `REL:LINE:text` (lines cut at 500 chars), at most 200 matches with a note of how many
/// files were searched and whether there are more. Binary files are skipped. A bad regex is an
/// error naming the problem. Files for which `skip` answers true (given the root-relative
/// path) are not searched, and an explicit `path` naming such a file is refused.
pub fn search(
    root: &Root,
    pattern: &str,
    path: Option<&str>,
    glob: Option<&str>,
    skip: &dyn Fn(&str) -> bool,
) -> Result<String> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| Error::invalid_params(format!("bad regular expression `{pattern}`: {e}")))?;
    let start = root.resolve(path.unwrap_or("."))?;
    let start_rel = root.relative(&start);
    let filter = glob.map(|g| GlobFilter::new(root, g)).transpose()?;
    let meta = std::fs::metadata(&start).map_err(|_| {
        Error::invalid_params(format!(
            "`{start_rel}` does not exist: give a folder or a file in the workspace"
        ))
    })?;
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\0'))
        .line_number(true)
        .build();
    let mut found = Found::default();
    if meta.is_file() {
        if skip(&start_rel) {
            return Err(Error::invalid_params(format!(
                "`{start_rel}` may hold secrets: search does not look into it"
            )));
        }
        found.search_file(&mut searcher, &matcher, &start, &start_rel);
    } else {
        for entry in walk(&start).filter_map(|e| e.ok()) {
            // Symlinks are not followed (their entries are not files): a link's target is
            // searched where it lies, if it lies in the root.
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let rel = root.relative(entry.path());
            if skip(&rel) || filter.as_ref().is_some_and(|f| !f.matches(&rel)) {
                continue;
            }
            found.search_file(&mut searcher, &matcher, entry.path(), &rel);
            if found.more {
                break;
            }
        }
    }
    Ok(found.render(pattern))
}

/// The matches gathered so far.
#[derive(Default)]
struct Found {
    lines: Vec<String>,
    files: usize,
    /// Whether a match past [`MAX_MATCHES`] was seen (the search stops there).
    more: bool,
}

impl Found {
    /// Adds the matches of the file at `abs`; a file that cannot be read is passed over.
    fn search_file(
        &mut self,
        searcher: &mut Searcher,
        matcher: &grep_regex::RegexMatcher,
        abs: &Path,
        rel: &str,
    ) {
        self.files += 1;
        let sink = Lossy(|number, line: &str| {
            if self.lines.len() == MAX_MATCHES {
                self.more = true;
                return Ok(false);
            }
            let line = line.trim_end_matches(['\n', '\r']);
            let (text, cut) = cut_chars(line, MAX_LINE_CHARS);
            let mark = if cut { " [line cut at 500 chars]" } else { "" };
            self.lines.push(format!("{rel}:{number}:{text}{mark}"));
            Ok(true)
        });
        // An unreadable file (permissions, vanished) is not worth failing the search for.
        let _ = searcher.search_path(matcher, abs, sink);
    }

    /// The matches and the note on how many files were searched.
    fn render(&self, pattern: &str) -> String {
        let files = counted(self.files, "file", "files");
        if self.lines.is_empty() {
            return format!("no matches for `{pattern}` ({files} searched)");
        }
        let note = if self.more {
            format!(
                "({MAX_MATCHES} matches shown, there are more: narrow the pattern, path or glob; \
                 {files} searched so far)"
            )
        } else {
            let matches = counted(self.lines.len(), "match", "matches");
            format!("({matches}, {files} searched)")
        };
        format!("{}\n{note}", self.lines.join("\n"))
    }
}

/// "1 file", "12,345 files".
fn counted(n: usize, one: &str, many: &str) -> String {
    let word = if n == 1 { one } else { many };
    format!("{} {word}", thousands(n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::files::tests::{put, workspace};

    fn no_skip(_: &str) -> bool {
        false
    }

    #[test]
    fn finds_matching_lines_with_their_numbers() {
        let (dir, root) = workspace();
        put(&dir, "src/a.rs", b"fn main() {\n    helper();\n}\n");
        put(&dir, "src/b.rs", b"fn helper() {}\r\n");
        put(&dir, "README.md", b"nothing here\n");
        let text = search(&root, r"helper\(", None, None, &no_skip).expect("search");
        let mut lines: Vec<&str> = text.lines().collect();
        let note = lines.pop().expect("note");
        lines.sort();
        assert_eq!(
            lines,
            ["src/a.rs:2:    helper();", "src/b.rs:1:fn helper() {}"]
        );
        assert_eq!(note, "(2 matches, 3 files searched)");
        let one = search(&root, "main", Some("src/a.rs"), None, &no_skip).expect("one file");
        assert_eq!(one, "src/a.rs:1:fn main() {\n(1 match, 1 file searched)");
        let none = search(&root, "absent", None, None, &no_skip).expect("none");
        assert_eq!(none, "no matches for `absent` (3 files searched)");
    }

    #[test]
    fn respects_gitignore_and_glob() {
        let (dir, root) = workspace();
        put(&dir, ".gitignore", b"target/\n");
        put(&dir, "target/gen.rs", b"needle\n");
        put(&dir, "src/a.rs", b"needle\n");
        put(&dir, "src/a.txt", b"needle\n");
        put(&dir, ".git/HEAD", b"needle\n");
        let text = search(&root, "needle", None, Some("*.rs"), &no_skip).expect("search");
        assert_eq!(text, "src/a.rs:1:needle\n(1 match, 1 file searched)");
        let all = search(&root, "needle", None, None, &no_skip).expect("search");
        assert!(!all.contains("target/") && !all.contains(".git/"), "{all}");
        assert!(all.contains("src/a.txt:1:needle"), "{all}");
    }

    #[test]
    fn skipped_files_are_not_searched_nor_named() {
        let (dir, root) = workspace();
        put(&dir, ".env", b"TOKEN=needle\n");
        put(&dir, "a.txt", b"needle\n");
        let skip = |rel: &str| rel == ".env";
        let text = search(&root, "needle", None, None, &skip).expect("search");
        assert_eq!(text, "a.txt:1:needle\n(1 match, 1 file searched)");
        let err = search(&root, "needle", Some(".env"), None, &skip).expect_err("named");
        assert!(err.message.contains("may hold secrets"), "{}", err.message);
        assert!(!err.message.contains("TOKEN"), "{}", err.message);
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_root_are_not_followed() {
        let (dir, root) = workspace();
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.txt"), "needle\n").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("ln");
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("s.txt"))
            .expect("ln");
        let text = search(&root, "needle", None, None, &no_skip).expect("search");
        assert_eq!(text, "no matches for `needle` (0 files searched)");
        search(&root, "needle", Some("s.txt"), None, &no_skip).expect_err("link out");
    }

    #[test]
    fn binary_files_are_skipped() {
        let (dir, root) = workspace();
        put(&dir, "blob.bin", b"needle\0\x01\x02");
        put(&dir, "a.txt", b"needle\n");
        let text = search(&root, "needle", None, None, &no_skip).expect("search");
        assert_eq!(text, "a.txt:1:needle\n(1 match, 2 files searched)");
    }

    #[test]
    fn a_bad_regex_is_an_error_naming_the_problem() {
        let (_dir, root) = workspace();
        let err = search(&root, "fn (", None, None, &no_skip).expect_err("bad");
        assert!(
            err.message.starts_with("bad regular expression `fn (`: "),
            "{}",
            err.message
        );
        assert!(err.message.contains("unclosed group"), "{}", err.message);
        search(&root, "x", Some("../up"), None, &no_skip).expect_err("outside");
    }

    #[test]
    fn matches_are_capped_with_a_note() {
        let (dir, root) = workspace();
        let content: String = (0..150).map(|i| format!("hit {i}\n")).collect();
        put(&dir, "a.txt", content.as_bytes());
        put(&dir, "b.txt", content.as_bytes());
        put(
            &dir,
            "long.txt",
            format!("hit {}\n", "y".repeat(600)).as_bytes(),
        );
        let text = search(&root, "^hit", None, None, &no_skip).expect("search");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), MAX_MATCHES + 1);
        let note = lines.last().expect("note");
        assert!(
            note.starts_with("(200 matches shown, there are more: "),
            "{note}"
        );
        assert!(note.ends_with("files searched so far)"), "{note}");
        let long = search(&root, "y{600}", None, None, &no_skip).expect("long");
        let first = long.lines().next().expect("a line");
        assert!(first.ends_with(" [line cut at 500 chars]"), "{first}");
        assert_eq!(first.chars().count(), "long.txt:1:".len() + 500 + 24);
    }
}
