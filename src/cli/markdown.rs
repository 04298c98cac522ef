//! Markdown for a terminal, rendered while the reply streams: each line is drawn as soon as it
//! is complete (the unfinished last line waits for its newline, or for the end). Headings and
//! emphasis are bold or italic, inline code and links coloured, list bullets and rules drawn,
//! and fenced code blocks highlighted by their language with syntect (its highlighter keeps
//! its state from one line to the next, so a block highlights correctly line by line).
//!
//! Front-ends decide whether to use it (a terminal, no `--raw`, no `NO_COLOR`); this module
//! only turns Markdown text into ANSI-styled text and must never write anywhere itself.

use std::sync::OnceLock;

use pulldown_cmark::{Event, Parser, Tag, TagEnd};
use syntect::easy::HighlightLines;
use syntect::highlighting::{Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::as_24_bit_terminal_escaped;

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const ITALIC: &str = "\x1b[3m";
const UNDERLINE: &str = "\x1b[4m";
const CODE: &str = "\x1b[36m";
const NOT_BOLD: &str = "\x1b[22m";
const NOT_ITALIC: &str = "\x1b[23m";
const NOT_UNDERLINE: &str = "\x1b[24m";
const DEFAULT_COLOUR: &str = "\x1b[39m";

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| {
        let mut set = ThemeSet::load_defaults();
        set.themes.remove("base16-ocean.dark").unwrap_or_default()
    })
}

/// An open fenced code block.
struct CodeBlock {
    /// The fence that closes it (```` ``` ```` or `~~~`, at least as long as the opening).
    fence: String,
    highlighter: Option<HighlightLines<'static>>,
}

/// Renders one reply, piece by piece.
#[derive(Default)]
pub struct MarkdownStream {
    /// The unfinished line.
    line: String,
    code: Option<CodeBlock>,
}

impl MarkdownStream {
    pub fn new() -> MarkdownStream {
        MarkdownStream::default()
    }

    /// Takes a piece of the reply; returns what can be drawn now (complete lines).
    pub fn push(&mut self, piece: &str) -> String {
        self.line.push_str(piece);
        let mut out = String::new();
        while let Some(at) = self.line.find('\n') {
            let line: String = self.line.drain(..=at).collect();
            out.push_str(&self.render_line(&line[..line.len() - 1]));
            out.push('\n');
        }
        out
    }

    /// The unfinished line, as the model wrote it so far.
    pub fn pending(&self) -> &str {
        &self.line
    }

    /// The end of the reply: draws the unfinished line, if any.
    pub fn finish(&mut self) -> String {
        if self.line.is_empty() {
            return String::new();
        }
        let line = std::mem::take(&mut self.line);
        self.render_line(&line)
    }

    fn render_line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start();
        if let Some(code) = &mut self.code {
            if trimmed.starts_with(code.fence.as_str())
                && trimmed.trim_matches(['`', '~']).trim().is_empty()
            {
                self.code = None;
                return format!("{DIM}{line}{RESET}");
            }
            let Some(h) = &mut code.highlighter else {
                return format!("{CODE}{line}{RESET}");
            };
            let with_newline = format!("{line}\n");
            return match h.highlight_line(&with_newline, syntaxes()) {
                Ok(ranges) => {
                    let styled = as_24_bit_terminal_escaped(&ranges, false);
                    format!("{}{RESET}", styled.trim_end_matches('\n'))
                }
                Err(_) => format!("{CODE}{line}{RESET}"),
            };
        }
        if let Some(fence) = opening_fence(trimmed) {
            let lang = trimmed[fence.len()..].trim();
            let highlighter = lang
                .split_whitespace()
                .next()
                .and_then(|l| syntaxes().find_syntax_by_token(l))
                .map(|s| HighlightLines::new(s, theme()));
            self.code = Some(CodeBlock { fence, highlighter });
            return format!("{DIM}{line}{RESET}");
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some((level, text)) = heading(trimmed) {
            let underline = if level == 1 { UNDERLINE } else { "" };
            return format!("{indent}{BOLD}{underline}{}{RESET}", inline(text));
        }
        if is_rule(trimmed) {
            return format!("{DIM}{}{RESET}", "─".repeat(40));
        }
        if let Some(rest) = trimmed
            .strip_prefix("> ")
            .or((trimmed == ">").then_some(""))
        {
            return format!("{indent}{DIM}│{RESET} {}", inline(rest));
        }
        for bullet in ["- ", "* ", "+ "] {
            if let Some(rest) = trimmed.strip_prefix(bullet) {
                return format!("{indent}• {}", inline(rest));
            }
        }
        format!("{indent}{}", inline(trimmed))
    }
}

/// The fence of a line that opens a code block (```` ``` ```` or `~~~`, three or more).
fn opening_fence(line: &str) -> Option<String> {
    let c = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = line.chars().take_while(|x| *x == c).count();
    (n >= 3).then(|| c.to_string().repeat(n))
}

fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[level..];
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(' ')))
        .then(|| (level, rest.trim()))
}

fn is_rule(line: &str) -> bool {
    let l: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    l.len() >= 3
        && ["-", "*", "_"]
            .iter()
            .any(|c| l.chars().all(|x| x.to_string() == *c))
}

/// One line's inline Markdown (emphasis, code, links) as styled text.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for event in Parser::new(text) {
        match event {
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => out.push_str(&t),
            Event::Code(c) => {
                out.push_str(CODE);
                out.push_str(&c);
                out.push_str(DEFAULT_COLOUR);
            }
            Event::Start(Tag::Strong) => out.push_str(BOLD),
            Event::End(TagEnd::Strong) => out.push_str(NOT_BOLD),
            Event::Start(Tag::Emphasis) => out.push_str(ITALIC),
            Event::End(TagEnd::Emphasis) => out.push_str(NOT_ITALIC),
            Event::Start(Tag::Link { .. }) => out.push_str(UNDERLINE),
            Event::End(TagEnd::Link) => out.push_str(NOT_UNDERLINE),
            Event::SoftBreak | Event::HardBreak => out.push(' '),
            _ => {}
        }
    }
    // A line pulldown-cmark reads as an ordered list item ("1. x") loses its number: keep it.
    if let Some(n) = ordered_number(text) {
        return format!("{n} {out}");
    }
    out
}

fn ordered_number(text: &str) -> Option<&str> {
    let digits = text.chars().take_while(|c| c.is_ascii_digit()).count();
    let rest = &text[digits..];
    (digits > 0 && (rest.starts_with(". ") || rest.starts_with(") "))).then(|| &text[..digits + 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(pieces: &[&str]) -> String {
        let mut md = MarkdownStream::new();
        let mut out: String = pieces.iter().map(|p| md.push(p)).collect();
        out.push_str(&md.finish());
        out
    }

    /// The text without its ANSI escapes.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut esc = false;
        for c in s.chars() {
            match (esc, c) {
                (false, '\x1b') => esc = true,
                (true, 'm') => esc = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    }

    #[test]
    fn lines_are_drawn_once_complete_and_the_last_one_at_the_end() {
        let mut md = MarkdownStream::new();
        assert_eq!(md.push("Hello **wor"), "");
        let line = md.push("ld**!\nmore");
        assert_eq!(line, format!("Hello {BOLD}world{NOT_BOLD}!\n"));
        assert_eq!(md.finish(), "more");
        assert_eq!(md.finish(), "");
    }

    #[test]
    fn headings_lists_quotes_code_spans_and_numbers_keep_their_text() {
        let out = render(&[
            "# Title\n",
            "- one `x`\n",
            "2. two *it*\n",
            "> said\n",
            "---\n",
        ]);
        assert_eq!(
            plain(&out),
            format!("Title\n• one x\n2. two it\n│ said\n{}\n", "─".repeat(40))
        );
        assert!(out.contains(&format!("{BOLD}{UNDERLINE}Title")), "{out:?}");
        assert!(out.contains(&format!("{CODE}x{DEFAULT_COLOUR}")), "{out:?}");
        assert!(out.contains(&format!("{ITALIC}it{NOT_ITALIC}")), "{out:?}");
    }

    #[test]
    fn a_fenced_block_is_highlighted_by_its_language_even_split_across_pieces() {
        let out = render(&[
            "Code:\n```ru",
            "st\nfn main() {\n    let x = \"s\";\n}\n``",
            "`\nafter **b**\n",
        ]);
        assert_eq!(
            plain(&out),
            "Code:\n```rust\nfn main() {\n    let x = \"s\";\n}\n```\nafter b\n"
        );
        // 24-bit colours inside the block, and the text after it is Markdown again.
        let block = &out[out.find("fn").unwrap()..out.find("after").unwrap()];
        assert!(block.contains("\x1b[38;2;"), "{block:?}");
        assert!(
            out.ends_with(&format!("after {BOLD}b{NOT_BOLD}\n")),
            "{out:?}"
        );
        // `**` inside a code block stays as written.
        let out = render(&["```\na **b**\n```\n"]);
        assert!(plain(&out).contains("a **b**"), "{out:?}");
    }
}
