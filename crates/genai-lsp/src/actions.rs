//! The code actions on a selection: the built-in ones and the config's `[lsp.actions.NAME]`,
//! the prompt each sends (instruction, file name, language, the selection and the lines around
//! it), and what becomes of the reply (its code block replaces the selection or goes below it,
//! or the whole reply is shown). Pure text work: it never talks to the editor or the model.

use tower_lsp_server::ls_types::{Position, Range, TextEdit};

use super::documents::{byte_range, offset, position};
use genai_core::command::Command;
use genai_core::config::lsp::ApplyMode;

/// One action as the editor offers it: a command that needs no argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Action {
    /// The command's name, which `genai.action` carries.
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) apply: ApplyMode,
}

/// The actions of the commands seen from a file: those that need no argument (the
/// built-in ones, the command files, `[lsp.actions]`), by name.
pub(crate) fn from_commands<'a>(commands: impl Iterator<Item = &'a Command>) -> Vec<Action> {
    commands
        .filter(|c| c.required().next().is_none())
        .map(|c| Action {
            name: c.name.clone(),
            title: format!("genai: {}", c.title),
            apply: c.apply,
        })
        .collect()
}

/// What an action (or `genai.ask`) is about: a file and a range of it.
pub(crate) struct Selection<'a> {
    pub(crate) text: &'a str,
    pub(crate) range: Range,
    pub(crate) file_name: &'a str,
    pub(crate) language_id: &'a str,
    /// Lines shown above and below the selection.
    pub(crate) context_lines: u32,
}

impl Selection<'_> {
    /// The selected text, and the lines around it (before, after); an error when the range is
    /// not in the document.
    fn parts(&self) -> Result<(&str, &str, &str), String> {
        let (start, end) = byte_range(self.text, self.range)?;
        let first = self.range.start.line.saturating_sub(self.context_lines);
        let before_start = offset(self.text, Position::new(first, 0))?;
        let last = self.last_line().saturating_add(self.context_lines + 1);
        let after_end = offset(self.text, Position::new(last, 0)).unwrap_or(self.text.len());
        Ok((
            &self.text[start..end],
            &self.text[before_start..start],
            &self.text[end..after_end.max(end)],
        ))
    }

    /// The last selected line (a range ending at the start of a line ends on the line before).
    fn last_line(&self) -> u32 {
        let end = self.range.end;
        if end.character == 0 && end.line > self.range.start.line {
            end.line - 1
        } else {
            end.line
        }
    }

    /// The prompt for `instruction` on this selection; `edits` asks for one code block; the
    /// selection itself is left out when the instruction holds it already.
    pub(crate) fn prompt(
        &self,
        instruction: &str,
        edits: Option<ApplyMode>,
        with_selection: bool,
    ) -> Result<String, String> {
        let (selected, before, after) = self.parts()?;
        let (selected, before, after) = (
            selected.strip_suffix('\n').unwrap_or(selected),
            before.strip_suffix('\n').unwrap_or(before),
            after.strip_suffix('\n').unwrap_or(after),
        );
        let lang = fence_language(self.language_id);
        let mut p = format!(
            "{instruction}\n\nFile: {} (language: {})\nThe selection is lines {}-{}.\n",
            self.file_name,
            self.language_id,
            self.range.start.line + 1,
            self.last_line() + 1,
        );
        if !before.trim().is_empty() {
            p.push_str(&format!(
                "\nBefore the selection:\n```{lang}\n{before}\n```\n"
            ));
        }
        if with_selection {
            p.push_str(&format!("\nThe selection:\n```{lang}\n{selected}\n```\n"));
        }
        if !after.trim().is_empty() {
            p.push_str(&format!(
                "\nAfter the selection:\n```{lang}\n{after}\n```\n"
            ));
        }
        match edits {
            Some(ApplyMode::Replace) => p.push_str(
                "\nAnswer with the code that replaces the selection, in one fenced code block.\n",
            ),
            Some(ApplyMode::InsertBelow) => p.push_str(
                "\nAnswer with the code to insert below the selection, in one fenced code block.\n",
            ),
            _ => {}
        }
        Ok(p)
    }
}

/// The language tag of a fence for an LSP language id (they mostly agree).
fn fence_language(language_id: &str) -> &str {
    match language_id {
        "typescriptreact" => "tsx",
        "javascriptreact" => "jsx",
        "plaintext" => "",
        other => other,
    }
}

/// The selected text; an error when the range is not in the document.
pub(crate) fn selected(text: &str, range: Range) -> Result<&str, String> {
    let (start, end) = byte_range(text, range)?;
    Ok(&text[start..end])
}

/// The range with its end moved back to the document's end when it is past it.
pub(crate) fn clamp(text: &str, range: Range) -> Range {
    let end = if offset(text, range.end).is_err() {
        position(text, text.len())
    } else {
        range.end
    };
    Range::new(range.start, end)
}

/// The first fenced code block of a reply (its body), if any.
pub(crate) fn code_block(reply: &str) -> Option<String> {
    let mut lines = reply.lines();
    lines.by_ref().find(|l| l.trim_start().starts_with("```"))?;
    let mut body = Vec::new();
    for line in lines {
        if line.trim_start().starts_with("```") {
            let mut text = body.join("\n");
            text.push('\n');
            return Some(text);
        }
        body.push(line);
    }
    None // an unclosed fence: the reply was cut, do not edit with half of it
}

/// The edit an action makes with a code block: replace the range, or insert below its last
/// line. A replacement keeps the selection's trailing newline as it was.
pub(crate) fn edit(
    text: &str,
    range: Range,
    mode: ApplyMode,
    code: &str,
) -> Result<TextEdit, String> {
    let (start, end) = byte_range(text, range)?;
    match mode {
        ApplyMode::Replace => {
            let mut new_text = code.to_string();
            if !text[start..end].ends_with('\n') {
                while new_text.ends_with('\n') {
                    new_text.pop();
                }
            }
            Ok(TextEdit::new(range, new_text))
        }
        ApplyMode::InsertBelow => {
            // Below the last selected line: at the start of the next line, or at the end.
            let line_end = text[end..].find('\n').map(|i| end + i + 1);
            let (at, new_text) = match line_end {
                Some(at) if range.end.character > 0 || start == end => (at, format!("\n{code}")),
                _ if range.end.character == 0 && end > start => (end, format!("\n{code}")),
                _ => (text.len(), format!("\n\n{code}")),
            };
            let pos = position(text, at);
            Ok(TextEdit::new(Range::new(pos, pos), new_text))
        }
        ApplyMode::Show => Err("a `show` action edits nothing".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(a: u32, b: u32, c: u32, d: u32) -> Range {
        Range::new(Position::new(a, b), Position::new(c, d))
    }

    #[test]
    fn commands_without_required_arguments_are_actions() {
        let commands = genai_core::command::builtin();
        let mut needs = commands[0].clone();
        needs.name = "translate".into();
        needs.arguments.push(genai_core::command::Argument {
            name: "lang".into(),
            description: None,
            default: None,
        });
        let all = from_commands(commands.iter().chain([&needs]));
        let names: Vec<&str> = all.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["explain", "improve", "document", "test", "fix"]);
        assert_eq!(all[3].title, "genai: Write tests");
        assert_eq!(all[3].apply, ApplyMode::InsertBelow);
    }

    #[test]
    fn the_prompt_carries_file_language_selection_and_the_lines_around_it() {
        let text = "l0\nl1\nl2\nsel3\nsel4\nl5\nl6\nl7\n";
        let s = Selection {
            text,
            range: range(3, 0, 5, 0),
            file_name: "src/a.py",
            language_id: "python",
            context_lines: 1,
        };
        let p = s.prompt("Fix it.", Some(ApplyMode::Replace), true).unwrap();
        assert!(
            p.starts_with("Fix it.\n\nFile: src/a.py (language: python)"),
            "{p}"
        );
        assert!(p.contains("Before the selection:\n```python\nl2\n"), "{p}");
        assert!(
            p.contains("The selection:\n```python\nsel3\nsel4\n```"),
            "{p}"
        );
        assert!(p.contains("lines 4-5."), "{p}");
        assert!(p.contains("After the selection:\n```python\nl5\n"), "{p}");
        assert!(!p.contains("l1") && !p.contains("l6"), "{p}");
        assert!(p.contains("one fenced code block"));
        let outside = Selection {
            range: range(40, 0, 41, 0),
            ..s
        };
        assert!(outside.prompt("x", None, true).is_err());
        let placed = s.prompt("Fix sel3 sel4.", None, false).unwrap();
        assert!(!placed.contains("The selection:"), "{placed}");
    }

    #[test]
    fn the_first_closed_code_block_is_taken() {
        let reply = "Here:\n```rust\nfn a() {}\n```\nand\n```\nother\n```";
        assert_eq!(code_block(reply).unwrap(), "fn a() {}\n");
        assert_eq!(code_block("no code"), None);
        assert_eq!(code_block("```rust\ncut off"), None);
    }

    #[test]
    fn edits_replace_the_selection_or_go_below_it() {
        let text = "a\nb\nc\n";
        // Whole lines selected (ends at column 0 of the next line).
        let e = edit(text, range(1, 0, 2, 0), ApplyMode::Replace, "B\n").unwrap();
        assert_eq!((e.range, e.new_text.as_str()), (range(1, 0, 2, 0), "B\n"));
        // Part of a line: no newline added.
        let e = edit(text, range(1, 0, 1, 1), ApplyMode::Replace, "B\n").unwrap();
        assert_eq!(e.new_text, "B");
        let e = edit(text, range(0, 0, 1, 1), ApplyMode::InsertBelow, "t\n").unwrap();
        assert_eq!((e.range, e.new_text.as_str()), (range(2, 0, 2, 0), "\nt\n"));
        let e = edit("a\nb", range(1, 0, 1, 1), ApplyMode::InsertBelow, "t\n").unwrap();
        assert_eq!(
            (e.range.start, e.new_text.as_str()),
            (Position::new(1, 1), "\n\nt\n")
        );
        assert!(edit(text, range(0, 0, 0, 1), ApplyMode::Show, "x").is_err());
    }
}
