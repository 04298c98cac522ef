//! The text of the editor's open documents, kept in step with `didOpen`, `didChange` (full and
//! incremental) and `didClose`, so that actions see unsaved text; and the LSP position ↔ byte
//! offset arithmetic (positions count UTF-16 code units, the protocol's default encoding).
//! It must never ask the model anything; it only holds text.

use std::collections::HashMap;

use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};

/// One open document.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) text: String,
    pub(crate) language_id: String,
    pub(crate) version: i32,
}

/// The open documents by URI.
#[derive(Debug, Default)]
pub(crate) struct Documents {
    open: HashMap<String, Document>,
}

impl Documents {
    pub(crate) fn open(&mut self, uri: &str, language_id: &str, version: i32, text: String) {
        self.open.insert(
            uri.to_string(),
            Document {
                text,
                language_id: language_id.to_string(),
                version,
            },
        );
    }

    pub(crate) fn close(&mut self, uri: &str) {
        self.open.remove(uri);
    }

    pub(crate) fn get(&self, uri: &str) -> Option<&Document> {
        self.open.get(uri)
    }

    /// Applies the changes of `version` in order, all or none: a change for a document that is
    /// not open, or a range outside the text, is an error and the text stays as it was. The
    /// server calls this synchronously as each notification arrives (no `await` before it), so
    /// changes apply in the order the client sent them.
    pub(crate) fn change(
        &mut self,
        uri: &str,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    ) -> Result<(), String> {
        let doc = self
            .open
            .get_mut(uri)
            .ok_or_else(|| format!("{uri} was changed but never opened"))?;
        let mut text = doc.text.clone();
        for c in changes {
            text = apply_change(&text, c)?;
        }
        doc.text = text;
        doc.version = version;
        Ok(())
    }
}

/// One change: the whole text without a range, else the range replaced.
fn apply_change(text: &str, change: TextDocumentContentChangeEvent) -> Result<String, String> {
    let Some(range) = change.range else {
        return Ok(change.text);
    };
    let (start, end) = byte_range(text, range)?;
    let mut out = String::with_capacity(text.len() + change.text.len());
    out.push_str(&text[..start]);
    out.push_str(&change.text);
    out.push_str(&text[end..]);
    Ok(out)
}

/// The byte offsets of an LSP range; an error when it is reversed or past the end.
pub(crate) fn byte_range(text: &str, range: Range) -> Result<(usize, usize), String> {
    let start = offset(text, range.start)?;
    let end = offset(text, range.end)?;
    if end < start {
        return Err(format!(
            "the range ends ({}:{}) before it starts ({}:{})",
            range.end.line, range.end.character, range.start.line, range.start.character
        ));
    }
    Ok((start, end))
}

/// The byte offset of an LSP position: a character past the end of its line means the end of
/// the line (as the protocol says); a line past the end is an error.
pub(crate) fn offset(text: &str, pos: Position) -> Result<usize, String> {
    let mut line_start = 0;
    for _ in 0..pos.line {
        match text[line_start..].find('\n') {
            Some(i) => line_start += i + 1,
            None => {
                return Err(format!(
                    "line {} is past the end of the document ({} lines)",
                    pos.line,
                    text.lines().count()
                ))
            }
        }
    }
    let line = &text[line_start..];
    let line = &line[..line.find('\n').unwrap_or(line.len())];
    let mut units = 0u32;
    for (i, ch) in line.char_indices() {
        if units >= pos.character {
            return Ok(line_start + i);
        }
        units += ch.len_utf16() as u32;
    }
    Ok(line_start + line.len())
}

/// The LSP position of a byte offset (which must be on a char boundary).
pub(crate) fn position(text: &str, at: usize) -> Position {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let character = before[line_start..].encode_utf16().count() as u32;
    Position { line, character }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(
        range: Option<((u32, u32), (u32, u32))>,
        text: &str,
    ) -> TextDocumentContentChangeEvent {
        TextDocumentContentChangeEvent {
            range: range
                .map(|((a, b), (c, d))| Range::new(Position::new(a, b), Position::new(c, d))),
            range_length: None,
            text: text.to_string(),
        }
    }

    #[test]
    fn incremental_and_full_changes_apply_in_order() {
        let mut docs = Documents::default();
        docs.open("file:///a.rs", "rust", 1, "fn main() {\n}\n".into());
        docs.change(
            "file:///a.rs",
            2,
            vec![change(Some(((1, 0), (1, 0))), "    a();\n")],
        )
        .unwrap();
        // Two changes in one notification: the second's range is in the first's result.
        docs.change(
            "file:///a.rs",
            3,
            vec![
                change(Some(((2, 0), (2, 0))), "    b();\n"),
                change(Some(((1, 4), (1, 5))), "z"),
            ],
        )
        .unwrap();
        let doc = docs.get("file:///a.rs").unwrap();
        assert_eq!(doc.text, "fn main() {\n    z();\n    b();\n}\n");
        assert_eq!(doc.version, 3);
        docs.change("file:///a.rs", 4, vec![change(None, "whole")])
            .unwrap();
        assert_eq!(docs.get("file:///a.rs").unwrap().text, "whole");
    }

    #[test]
    fn positions_count_utf16_units_and_bad_ranges_are_errors() {
        let text = "é😀x\nsecond";
        // é is 1 unit, 😀 is 2: character 3 is before `x`.
        assert_eq!(offset(text, Position::new(0, 3)).unwrap(), "é😀".len());
        assert_eq!(offset(text, Position::new(0, 99)).unwrap(), "é😀x".len());
        assert_eq!(position(text, "é😀x\nsec".len()), Position::new(1, 3));
        assert!(offset(text, Position::new(5, 0)).is_err());
        let reversed = Range::new(Position::new(1, 2), Position::new(0, 0));
        assert!(byte_range(text, reversed).is_err());
        let mut docs = Documents::default();
        assert!(docs.change("file:///nope", 2, vec![]).is_err());
        docs.open("file:///b", "text", 1, "abc".into());
        assert!(docs
            .change("file:///b", 2, vec![change(Some(((9, 0), (9, 1))), "x")])
            .is_err());
        assert_eq!(docs.get("file:///b").unwrap().text, "abc");
    }
}
