//! What a turn's tools do to the user's files, as a terminal shows it: before a call is
//! allowed, the diff of an edit (coloured on a terminal, cut when long) or the whole command
//! it would run; after a turn that changed files, one line per file and the command that puts
//! them back.
//!
//! It renders only: the policy decides what asks, `genai_core::workspace` makes the diff, the
//! checkpoints undo.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use genai_core::feature::port::PermissionAsk;
use genai_core::tools::FileEdit;

/// Lines of a diff shown before the rest is counted.
const DIFF_LINES: usize = 60;

/// The escapes of one kind of diff line, when colour is on.
fn paint(line: &str, colour: bool) -> String {
    if !colour {
        return line.to_string();
    }
    let code = match line.as_bytes().first() {
        _ if line.starts_with("+++") || line.starts_with("---") => "1",
        Some(b'+') => "32",
        Some(b'-') => "31",
        Some(b'@') => "36",
        _ => return line.to_string(),
    };
    format!("\x1b[{code}m{line}\x1b[0m")
}

/// A path as the user reads it: relative to the working folder when inside it.
fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    cwd.and_then(|c| path.strip_prefix(c).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// The diff of an edit, cut after [`DIFF_LINES`] lines with a count of the rest.
pub fn diff(edit: &FileEdit, colour: bool) -> String {
    let name = shown(&edit.path);
    let old = edit.old_text.as_deref().unwrap_or("");
    let old_header = match edit.old_text {
        Some(_) => format!("a/{name}"),
        None => "/dev/null".to_string(),
    };
    let text = genai_core::workspace::files::unified_diff(
        old,
        &edit.new_text,
        &old_header,
        &format!("b/{name}"),
    );
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(DIFF_LINES)
        .map(|l| paint(l, colour))
        .collect();
    if lines.len() > DIFF_LINES {
        let (added, removed) = counts(&text);
        out.push(format!(
            "… {} more lines of the diff ({added} added and {removed} removed in all)",
            lines.len() - DIFF_LINES
        ));
    }
    out.join("\n")
}

/// Lines an edit added and removed.
pub fn line_counts(edit: &FileEdit) -> (usize, usize) {
    let old = edit.old_text.as_deref().unwrap_or("");
    counts(&genai_core::workspace::files::unified_diff(
        old,
        &edit.new_text,
        "a",
        "b",
    ))
}

/// Lines added and removed in a unified diff.
fn counts(diff: &str) -> (usize, usize) {
    let mut added = 0;
    let mut removed = 0;
    for line in diff.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        match line.as_bytes().first() {
            Some(b'+') => added += 1,
            Some(b'-') => removed += 1,
            _ => {}
        }
    }
    (added, removed)
}

/// What a permission question shows above itself: the edit's diff, or the whole command a
/// call would run (its title may be cut to one line); nothing for other calls.
pub fn preview(ask: &PermissionAsk, colour: bool) -> Option<String> {
    if let Some(edit) = &ask.edit {
        return Some(diff(edit, colour));
    }
    let command = ask.arguments.get("command").and_then(|c| c.as_str())?;
    let mut text = format!("  $ {}", command.trim_end().replace('\n', "\n    "));
    if let Some(cwd) = ask.arguments.get("cwd").and_then(|c| c.as_str()) {
        text.push_str(&format!("\n  (in {cwd})"));
    }
    Some(text)
}

/// The files a turn changed: each file's text before the turn's first change and after its
/// last.
#[derive(Default)]
pub struct Changed {
    files: BTreeMap<PathBuf, (Option<String>, String)>,
}

impl Changed {
    /// Notes an edit a tool made.
    pub fn add(&mut self, edit: FileEdit) {
        self.files
            .entry(edit.path)
            .and_modify(|(_, new)| *new = edit.new_text.clone())
            .or_insert((edit.old_text, edit.new_text));
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// One line per file (`calc.py: +2 -1`, `notes.md: created, +10`), then how to undo.
    pub fn summary(&self, undo: &str) -> String {
        let mut lines = Vec::with_capacity(self.files.len() + 1);
        for (path, (old, new)) in &self.files {
            let diff = genai_core::workspace::files::unified_diff(
                old.as_deref().unwrap_or(""),
                new,
                "a",
                "b",
            );
            let (added, removed) = counts(&diff);
            let what = if old.is_none() { "created, " } else { "" };
            lines.push(format!(
                "genai: changed {}: {what}+{added} -{removed}",
                shown(path)
            ));
        }
        lines.push(format!("genai: to put them back: {undo}"));
        lines.join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(path: &str, old: Option<&str>, new: &str) -> FileEdit {
        FileEdit {
            path: PathBuf::from(path),
            old_text: old.map(str::to_string),
            new_text: new.to_string(),
        }
    }

    #[test]
    fn a_diff_is_coloured_and_cut_when_long() {
        let e = edit("/p/calc.py", Some("a = 1\nb = 2\n"), "a = 1\nb = 3\n");
        let plain = diff(&e, false);
        assert!(
            plain.contains("--- a//p/calc.py\n+++ b//p/calc.py"),
            "{plain}"
        );
        assert!(plain.contains("\n-b = 2\n+b = 3"), "{plain}");
        let coloured = diff(&e, true);
        assert!(
            coloured.contains("\x1b[31m-b = 2\x1b[0m\n\x1b[32m+b = 3\x1b[0m"),
            "{coloured}"
        );
        let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let cut = diff(&edit("/p/big.txt", None, &long), false);
        assert_eq!(cut.lines().count(), DIFF_LINES + 1, "{cut}");
        assert!(
            cut.ends_with("more lines of the diff (200 added and 0 removed in all)"),
            "{cut}"
        );
    }

    #[test]
    fn a_turns_files_are_summed_up_from_first_to_last() {
        let mut c = Changed::default();
        c.add(edit("/p/calc.py", Some("a\nb\n"), "a\nc\n"));
        c.add(edit("/p/calc.py", Some("a\nc\n"), "a\nc\nd\n"));
        c.add(edit("/p/new.md", None, "x\ny\n"));
        assert_eq!(
            c.summary("genai undo"),
            "genai: changed /p/calc.py: +2 -1\ngenai: changed /p/new.md: created, +2 -0\n\
             genai: to put them back: genai undo"
        );
    }
}
