//! The file tools of the workspace: read a file, plan and apply an edit or a write (`list` is
//! `listing.rs`).
//!
//! It owns what the model is answered with (numbered lines, a binary file's description, a
//! unified diff) and how a change reaches the disk (atomically, keeping the file's
//! mode). Every path goes through `Root::resolve` first; this module must never touch a path
//! that did not, never write before `apply`, and never dump a binary file's bytes.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::paths::Root;
use genai_base::error::{Error, ErrorKind, Result};

/// Files larger than this are read whole only when the model asks for a part (offset/limit),
/// and are never edited.
const MAX_WHOLE_FILE: u64 = 10 * 1024 * 1024;
/// Lines read_file shows when no limit is given.
const DEFAULT_LIMIT: usize = 2000;
/// Characters of a line read_file shows.
const MAX_LINE_CHARS: usize = 2000;
/// How much of a file's start is looked at for a NUL byte (binary) and its type.
const SNIFF_BYTES: usize = 8 * 1024;
/// Characters of a diff `apply` answers with.
const MAX_DIFF_CHARS: usize = 20_000;
/// Lines of context around each change in a diff.
const DIFF_CONTEXT: usize = 3;

/// read_file {path, offset?, limit?}: the text of a file, lines numbered from 1 like `cat -n`
/// (offset = first line, 1-based, default 1; limit = number of lines, default 2000); each line
/// cut at 2000 chars; says "(lines A-B of N)" when not whole. A binary file (NUL bytes in its
/// first 8 KiB, or not UTF-8) is described, not dumped: "binary file, 12,345 bytes, looks like
/// PNG image". A folder is an error saying to use `list`. Files over 10 MiB are refused unless
/// offset or limit is given; then only the lines asked for are kept in memory.
pub fn read_file(
    root: &Root,
    path: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String> {
    let abs = root.resolve(path)?;
    let rel = root.relative(&abs);
    let size = existing_file_size(&abs, &rel, "read_file", "use list to see the files")?;
    let mut file = std::fs::File::open(&abs).map_err(|e| io_error("cannot read", &rel, e))?;
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_error("cannot read", &rel, e))?;
    if head.contains(&0) {
        return Ok(describe_binary(&head, size, false));
    }
    let (first, count) = window_of(offset, limit)?;
    let window = if size <= MAX_WHOLE_FILE {
        let mut bytes = head;
        file.read_to_end(&mut bytes)
            .map_err(|e| io_error("cannot read", &rel, e))?;
        if std::str::from_utf8(&bytes).is_err() {
            return Ok(describe_binary(&bytes, size, true));
        }
        read_window(&mut bytes.as_slice(), first, count)
    } else if offset.is_none() && limit.is_none() {
        return Err(Error::invalid_params(format!(
            "`{rel}` is {} bytes, over the 10 MiB read_file shows whole: give offset and limit \
             to read a part of it, or use search to find the lines you need",
            thousands(size)
        )));
    } else {
        // Streamed: a big file's lines outside the window are counted, not kept.
        let mut reader = BufReader::new(head.as_slice().chain(file));
        read_window(&mut reader, first, count)
    }
    .map_err(|e| io_error("cannot read", &rel, e))?;
    window.render(&rel, first)
}

/// read_file's first line and line count from its offset and limit.
fn window_of(offset: Option<usize>, limit: Option<usize>) -> Result<(usize, usize)> {
    let first = offset.unwrap_or(1).max(1);
    match limit {
        Some(0) => Err(Error::invalid_params("limit must be at least 1 line")),
        Some(n) => Ok((first, n)),
        None => Ok((first, DEFAULT_LIMIT)),
    }
}

/// read_file's answer for `text`, a file's content as an editor holds it (unsaved changes
/// included): the same numbered window as from the disk.
pub(crate) fn render_text(
    rel: &str,
    text: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String> {
    if text.as_bytes()[..text.len().min(SNIFF_BYTES)].contains(&0) {
        return Ok(describe_binary(text.as_bytes(), text.len() as u64, false));
    }
    let (first, count) = window_of(offset, limit)?;
    read_window(&mut text.as_bytes(), first, count)
        .map_err(|e| io_error("cannot read", rel, e))?
        .render(rel, first)
}

/// What an edit or write is about to do: the file, its new bytes, and the unified diff the
/// model is answered with. Nothing is written until [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The absolute, resolved path of the file (symlinks followed, inside the root).
    pub(crate) path: PathBuf,
    /// The root-relative form of `path`, `/`-separated.
    pub(crate) relative: String,
    /// The file's whole new content.
    pub(crate) bytes: Vec<u8>,
    /// The unified diff from the old content to the new (`--- a/REL` `+++ b/REL`).
    pub(crate) diff: String,
    /// Whether the file does not exist yet.
    pub(crate) created: bool,
    /// The file's old text, when it was text (for a client's diff view).
    pub(crate) old: Option<String>,
}

impl Change {
    /// The change as a client's diff view shows it.
    pub fn edit(&self) -> genai_base::tool::FileEdit {
        genai_base::tool::FileEdit {
            path: self.path.clone(),
            old_text: self.old.clone(),
            new_text: String::from_utf8_lossy(&self.bytes).into_owned(),
        }
    }
}

/// edit_file {path, old_text, new_text}: `old_text` must occur exactly once in the file (not
/// found: say so and suggest reading the file again; found N times: say N and ask for more
/// context); an empty `old_text` is refused (write_file writes whole files). In a file with
/// CRLF line ends, `\n` in both texts stands for `\r\n` when the text as given is not found.
/// The diff has 3 lines of context and headers `--- a/REL` `+++ b/REL`.
pub(crate) fn plan_edit(root: &Root, path: &str, old_text: &str, new_text: &str) -> Result<Change> {
    check_edit(old_text, new_text)?;
    let abs = root.resolve(path)?;
    let rel = root.relative(&abs);
    let size = existing_file_size(&abs, &rel, "edit_file", "use write_file to create it")?;
    if size > MAX_WHOLE_FILE {
        return Err(Error::invalid_params(format!(
            "`{rel}` is {} bytes, over the 10 MiB edit_file changes",
            thousands(size)
        )));
    }
    let bytes = std::fs::read(&abs).map_err(|e| io_error("cannot read", &rel, e))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) if !t.as_bytes()[..t.len().min(SNIFF_BYTES)].contains(&0) => t,
        _ => {
            return Err(Error::invalid_params(format!(
                "`{rel}` is a binary file: edit_file changes text files only"
            )))
        }
    };
    edit_text(abs.clone(), rel, text, old_text, new_text)
}

/// The texts of an edit must differ and the old one must not be empty.
fn check_edit(old_text: &str, new_text: &str) -> Result<()> {
    if old_text.is_empty() {
        return Err(Error::invalid_params(
            "old_text is empty: give the exact text to replace, or use write_file to write \
             the whole file",
        ));
    }
    if old_text == new_text {
        return Err(Error::invalid_params(
            "old_text and new_text are the same: there is nothing to change",
        ));
    }
    Ok(())
}

/// The edit of [`plan_edit`] on `text`, the file's current content wherever it is held (the
/// disk, or an editor's buffer).
pub(crate) fn edit_text(
    abs: PathBuf,
    rel: String,
    text: &str,
    old_text: &str,
    new_text: &str,
) -> Result<Change> {
    check_edit(old_text, new_text)?;
    let (mut old, mut new) = (old_text.to_string(), new_text.to_string());
    let mut at = occurrences(text, &old);
    if at.is_empty() && text.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
        old = old.replace('\n', "\r\n");
        new = new.replace('\n', "\r\n");
        at = occurrences(text, &old);
    }
    let start = match at.as_slice() {
        [] => {
            return Err(Error::invalid_params(format!(
                "old_text was not found in `{rel}`: it must match the file exactly, whitespace \
                 and indentation included; read the file again and copy the text from it"
            )))
        }
        [one] => *one,
        many => {
            return Err(Error::invalid_params(format!(
                "old_text occurs {} times in `{rel}`: include more of the lines around the \
                 place to change so that it matches exactly one",
                many.len()
            )))
        }
    };
    let updated = format!("{}{new}{}", &text[..start], &text[start + old.len()..]);
    let diff = unified_diff(text, &updated, &format!("a/{rel}"), &format!("b/{rel}"));
    Ok(Change {
        path: abs,
        relative: rel,
        bytes: updated.into_bytes(),
        diff,
        created: false,
        old: Some(text.to_string()),
    })
}

/// write_file {path, content}: creates or replaces a file (missing parent folders are created
/// by [`apply`]); the diff is against the old content (`/dev/null` for a new file).
pub(crate) fn plan_write(root: &Root, path: &str, content: &str) -> Result<Change> {
    let abs = root.resolve(path)?;
    let rel = root.relative(&abs);
    let new_header = format!("b/{rel}");
    let (created, diff) = match std::fs::metadata(&abs) {
        Ok(meta) if meta.is_dir() => {
            return Err(Error::invalid_params(format!(
                "`{rel}` is a folder: give the path of a file to write"
            )))
        }
        Ok(meta) => {
            let old_header = format!("a/{rel}");
            let old = if meta.len() <= MAX_WHOLE_FILE {
                std::fs::read(&abs).map_err(|e| io_error("cannot read", &rel, e))?
            } else {
                Vec::new()
            };
            match std::str::from_utf8(&old) {
                Ok(text) if meta.len() <= MAX_WHOLE_FILE && !old.contains(&0) => {
                    return Ok(write_text(abs.clone(), rel, Some(text), content))
                }
                _ => {
                    let diff = format!(
                        "--- {old_header}\n+++ {new_header}\n(a binary or very large file of {} \
                         bytes replaced by {} lines of text)\n",
                        thousands(meta.len()),
                        content.lines().count()
                    );
                    (false, diff)
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(write_text(abs, rel, None, content))
        }
        Err(e) => return Err(io_error("cannot look at", &rel, e)),
    };
    Ok(Change {
        path: abs,
        relative: rel,
        bytes: content.as_bytes().to_vec(),
        diff,
        created,
        old: None,
    })
}

/// The write of [`plan_write`] over `old`, the file's current text wherever it is held
/// (`None`: the file does not exist).
pub fn write_text(abs: PathBuf, rel: String, old: Option<&str>, content: &str) -> Change {
    let new_header = format!("b/{rel}");
    let diff = match old {
        Some(text) => unified_diff(text, content, &format!("a/{rel}"), &new_header),
        None => unified_diff("", content, "/dev/null", &new_header),
    };
    Change {
        path: abs,
        relative: rel,
        bytes: content.as_bytes().to_vec(),
        diff,
        created: old.is_none(),
        old: old.map(str::to_string),
    }
}

/// Writes the change: re-checks that the path still resolves to the same place inside the root
/// (refusing a symlink swapped in meanwhile), creates missing parent folders, keeps an
/// existing file's permissions, and writes through a temporary file in the same folder renamed
/// over the target (atomic). Answers the text for the model: "edited src/a.rs\n<diff>" or
/// "created notes.md (12 lines)\n<diff>", the diff cut at 20,000 chars with a note.
pub fn apply(root: &Root, change: &Change) -> Result<String> {
    let rel = &change.relative;
    let again = root.resolve_path(rel, &change.path)?;
    if again != change.path {
        return Err(Error::invalid_params(format!(
            "`{rel}` changed on disk since the change was planned (it now leads to `{}`): read \
             it again and redo the change",
            root.relative(&again)
        )));
    }
    let parent = change
        .path
        .parent()
        .ok_or_else(|| Error::invalid_params(format!("`{rel}` is not a file path")))?;
    std::fs::create_dir_all(parent).map_err(|e| io_error("cannot create the folder of", rel, e))?;
    let kept_permissions = std::fs::metadata(&change.path)
        .ok()
        .map(|m| m.permissions());
    // tempfile names, creates (O_EXCL) and cleans up the temporary file, and renames it over.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".genai-").suffix(".tmp");
    #[cfg(unix)]
    let new_file_mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::Permissions::from_mode(0o666) // less the umask, as any new file
    };
    #[cfg(unix)]
    if kept_permissions.is_none() {
        builder.permissions(new_file_mode);
    }
    let mut tmp = builder
        .tempfile_in(parent)
        .map_err(|e| io_error("cannot write", rel, e))?;
    if let Some(perms) = kept_permissions {
        tmp.as_file()
            .set_permissions(perms)
            .map_err(|e| io_error("cannot keep the permissions of", rel, e))?;
    }
    tmp.write_all(&change.bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error("cannot write", rel, e))?;
    tmp.persist(&change.path)
        .map_err(|e| io_error("cannot replace", rel, e.error))?;
    Ok(answer(change))
}

/// What the model is told of a change made: "edited src/a.rs\n<diff>" or "created notes.md
/// (12 lines)\n<diff>", the diff cut at 20,000 chars with a note.
pub fn answer(change: &Change) -> String {
    let rel = &change.relative;
    let (diff, cut) = cut_chars(&change.diff, MAX_DIFF_CHARS);
    let note = if cut {
        "\n(diff cut at 20,000 chars: read the file to see the rest)"
    } else {
        ""
    };
    let lines = String::from_utf8_lossy(&change.bytes).lines().count();
    match (change.created, change.diff.is_empty()) {
        (true, _) => format!("created {rel} ({lines} lines)\n{diff}{note}"),
        (false, true) => format!("edited {rel} (no change)"),
        (false, false) => format!("edited {rel}\n{diff}{note}"),
    }
}

/// `s` cut to at most `max` characters, and whether it was cut.
pub(crate) fn cut_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// `n` with thousands separators: 12,345.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The lines of a file read_file shows, and how many the file has.
struct Window {
    /// (text, whether it was cut) of each line shown.
    lines: Vec<(String, bool)>,
    total: usize,
}

impl Window {
    /// The numbered lines, with "(lines A-B of N)" when not the whole file.
    fn render(&self, rel: &str, first: usize) -> Result<String> {
        if self.total == 0 {
            return Ok(format!("(`{rel}` is empty)"));
        }
        if self.lines.is_empty() {
            return Err(Error::invalid_params(format!(
                "offset {first} is past the end of `{rel}` ({} lines)",
                self.total
            )));
        }
        let mut out = String::new();
        for (i, (text, cut)) in self.lines.iter().enumerate() {
            let mark = if *cut {
                " [line cut at 2000 chars]"
            } else {
                ""
            };
            out.push_str(&format!("{:>6}\t{text}{mark}\n", first + i));
        }
        let last = first + self.lines.len() - 1;
        if first > 1 || last < self.total {
            out.push_str(&format!("(lines {first}-{last} of {}", self.total));
            if last < self.total {
                out.push_str(&format!("; read on with offset {}", last + 1));
            }
            out.push(')');
        }
        Ok(out.trim_end_matches('\n').to_string())
    }
}

/// Lines `first..first+count` (1-based) of `reader`, each kept to [`MAX_LINE_CHARS`], and the
/// number of lines in all. Written by hand because `BufRead::lines` would hold a whole line
/// (a minified file's line can be megabytes) and stop at invalid UTF-8.
fn read_window(reader: &mut impl BufRead, first: usize, count: usize) -> std::io::Result<Window> {
    let mut window = Window {
        lines: Vec::new(),
        total: 0,
    };
    let mut kept = Vec::new();
    loop {
        let number = window.total + 1;
        let wanted = number >= first && number < first.saturating_add(count);
        let keep = if wanted { MAX_LINE_CHARS * 4 } else { 0 };
        let Some(bytes_cut) = next_line(reader, &mut kept, keep)? else {
            break;
        };
        window.total = number;
        if wanted {
            let raw = kept.strip_suffix(b"\r").unwrap_or(&kept);
            let text = String::from_utf8_lossy(raw);
            let (shown, chars_cut) = cut_chars(&text, MAX_LINE_CHARS);
            window
                .lines
                .push((shown.to_string(), bytes_cut || chars_cut));
        }
    }
    Ok(window)
}

/// The next line of `reader` without its `\n`, at most `keep` bytes of it put in `kept`;
/// `None` at the end, else whether bytes were dropped.
fn next_line(
    reader: &mut impl BufRead,
    kept: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<Option<bool>> {
    kept.clear();
    let (mut any, mut dropped) = (false, false);
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(dropped));
        }
        any = true;
        let newline = buf.iter().position(|&b| b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let room = keep.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
        dropped |= chunk.len() > room;
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(Some(dropped));
        }
    }
}

/// "binary file, 12,345 bytes, looks like PNG image" (or "of unknown type").
fn describe_binary(head: &[u8], size: u64, not_utf8: bool) -> String {
    let size = thousands(size);
    match infer::get(head) {
        Some(kind) => {
            let what = match kind.matcher_type() {
                infer::MatcherType::App => "executable",
                infer::MatcherType::Archive => "archive",
                infer::MatcherType::Audio => "audio",
                infer::MatcherType::Book => "e-book",
                infer::MatcherType::Doc => "document",
                infer::MatcherType::Font => "font",
                infer::MatcherType::Image => "image",
                infer::MatcherType::Text => "text",
                infer::MatcherType::Video => "video",
                infer::MatcherType::Custom => "file",
            };
            let ext = kind.extension().to_uppercase();
            format!("binary file, {size} bytes, looks like {ext} {what}")
        }
        None if not_utf8 => format!("binary file, {size} bytes, not UTF-8 text"),
        None => format!("binary file, {size} bytes, of unknown type"),
    }
}

/// The size of the file at `abs`; an error when it is missing (saying `missing_hint`) or a
/// folder.
pub(crate) fn existing_file_size(
    abs: &Path,
    rel: &str,
    tool: &str,
    missing_hint: &str,
) -> Result<u64> {
    let meta = std::fs::metadata(abs).map_err(|e| not_found_or(rel, e, missing_hint))?;
    if meta.is_dir() {
        return Err(Error::invalid_params(format!(
            "`{rel}` is a folder: {tool} takes a file; use list to see what is in it"
        )));
    }
    Ok(meta.len())
}

/// "`x` does not exist: <hint>", or the I/O error as it is.
pub(crate) fn not_found_or(rel: &str, e: std::io::Error, hint: &str) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        Error::invalid_params(format!("`{rel}` does not exist: {hint}"))
    } else {
        io_error("cannot look at", rel, e)
    }
}

/// A filesystem failure on `rel`.
fn io_error(doing: &str, rel: &str, e: std::io::Error) -> Error {
    Error::new(ErrorKind::FeatureError, format!("{doing} `{rel}`: {e}"))
}

/// Start offsets of every occurrence of `needle` in `text`, overlapping ones included (an
/// edit must name one place, so `aa` in `aaa` is two places).
fn occurrences(text: &str, needle: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(needle) {
        let at = from + i;
        found.push(at);
        from = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// The unified diff from `old` to `new` with [`DIFF_CONTEXT`] lines of context; empty when
/// they are equal.
pub fn unified_diff(old: &str, new: &str, old_header: &str, new_header: &str) -> String {
    if old == new {
        return String::new();
    }
    // The deadline bounds the time a huge rewrite takes; past it the diff is coarser, still true.
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, new);
    diff.unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header(old_header, new_header)
        .to_string()
}

#[cfg(test)]
#[path = "files_tests.rs"]
pub(super) mod tests;
