//! Rendering a command's prompt: its placeholders filled from the invocation (named
//! arguments, the free text after the command's name, and the input: stdin or an editor's
//! selection). Text and input a prompt does not place are added after it, so nothing given
//! is lost.
//!
//! genai's files take `{{name}}`, `{{input}}` (the input, else the free text) and `{{args}}`
//! (the free text); Claude Code's and Codex's take `$ARGUMENTS` and `$1`..`$9`, and Codex's
//! `$NAME` from `NAME=value` and `$$` for a dollar. It owns this text work only.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::{Command, Dialect};
use crate::error::{Error, Result};

/// What a command is run with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Invocation {
    /// Named arguments (`lang=French`).
    pub arguments: BTreeMap<String, String>,
    /// The free text after the command's name and arguments.
    pub text: String,
    /// Piped stdin, or the editor's selection.
    pub input: Option<String>,
}

static MUSTACHE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\?\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}").expect("a valid pattern")
});
static DOLLAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\$(\$|ARGUMENTS\b|[1-9]|[A-Z][A-Z0-9_]*)").expect("a valid pattern")
});

/// The `{{name}}` placeholders of a genai body with their 0-based lines (escaped ones skipped).
pub(super) fn placeholders(body: &str) -> Vec<(usize, String)> {
    body.lines()
        .enumerate()
        .flat_map(|(i, line)| {
            MUSTACHE
                .captures_iter(line)
                .filter(|c| !c[0].starts_with('\\'))
                .map(move |c| (i, c[1].to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Splits the words after a command's name into named arguments and free text: leading
/// `NAME=VALUE` words name arguments (genai's declared ones, Codex's `UPPER_CASE` ones), the
/// rest is text. A leading `NAME=` that a genai command does not declare is an error.
pub fn split_words(command: &Command, words: &[String]) -> Result<Invocation> {
    let mut invocation = Invocation::default();
    let mut rest = words;
    while let Some((word, tail)) = rest.split_first() {
        let Some((key, value)) = word.split_once('=') else {
            break;
        };
        let named = match command.dialect {
            Dialect::Genai => {
                if !super::valid_argument_name(key) || command.arguments.is_empty() {
                    break;
                }
                if !command.arguments.iter().any(|a| a.name == key) {
                    return Err(unknown_argument(command, key));
                }
                true
            }
            Dialect::Codex => is_upper_name(key),
            Dialect::ClaudeCode => false,
        };
        if !named {
            break;
        }
        invocation
            .arguments
            .insert(key.to_string(), value.to_string());
        rest = tail;
    }
    invocation.text = rest.join(" ");
    Ok(invocation)
}

/// Leading `NAME=VALUE` words as named arguments and the rest as text, for a command whose
/// arguments are not known here (an MCP server's prompt).
pub(crate) fn split_free(words: &[String]) -> Invocation {
    let split = words
        .iter()
        .position(|w| {
            !w.split_once('=')
                .is_some_and(|(k, _)| super::valid_argument_name(k))
        })
        .unwrap_or(words.len());
    Invocation {
        arguments: words[..split]
            .iter()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        text: words[split..].join(" "),
        input: None,
    }
}

fn is_upper_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn unknown_argument(command: &Command, key: &str) -> Error {
    let takes: Vec<&str> = command.arguments.iter().map(|a| a.name.as_str()).collect();
    let takes = match takes.is_empty() {
        true => "it takes none".to_string(),
        false => format!("it takes {}", takes.join(", ")),
    };
    Error::invalid_params(format!(
        "command `{}` has no argument `{key}` ({takes})",
        command.name
    ))
}

/// The text of the user message `command` sends with `invocation`.
pub(super) fn render(command: &Command, invocation: &Invocation) -> Result<String> {
    let text = invocation.text.trim();
    let input = invocation.input.as_deref().filter(|i| !i.trim().is_empty());
    let (mut used_text, mut used_input) = (false, false);
    let body = match command.dialect {
        Dialect::Genai => {
            let values = values(command, invocation)?;
            MUSTACHE
                .replace_all(&command.body, |c: &Captures| {
                    if let Some(escaped) = c[0].strip_prefix('\\') {
                        return escaped.to_string();
                    }
                    match &c[1] {
                        "input" => match input {
                            Some(i) => {
                                used_input = true;
                                i.to_string()
                            }
                            None => {
                                used_text = true;
                                text.to_string()
                            }
                        },
                        "args" => {
                            used_text = true;
                            text.to_string()
                        }
                        name => values.get(name).cloned().unwrap_or_default(),
                    }
                })
                .into_owned()
        }
        Dialect::ClaudeCode | Dialect::Codex => {
            if command.dialect == Dialect::ClaudeCode {
                if let Some(key) = invocation.arguments.keys().next() {
                    return Err(unknown_argument(command, key));
                }
            }
            let positional = shlex::split(text)
                .unwrap_or_else(|| text.split_whitespace().map(str::to_string).collect());
            let codex = command.dialect == Dialect::Codex;
            let mut missing = None;
            let rendered = DOLLAR
                .replace_all(&command.body, |c: &Captures| match &c[1] {
                    "$" if codex => "$".to_string(),
                    "ARGUMENTS" => {
                        used_text = true;
                        text.to_string()
                    }
                    n if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() => {
                        used_text = true;
                        let i = usize::from(n.as_bytes()[0] - b'1');
                        positional.get(i).cloned().unwrap_or_default()
                    }
                    name if codex => match invocation.arguments.get(name) {
                        Some(v) => v.clone(),
                        None => {
                            missing.get_or_insert_with(|| name.to_string());
                            String::new()
                        }
                    },
                    _ => c[0].to_string(),
                })
                .into_owned();
            if let Some(name) = missing {
                return Err(Error::invalid_params(format!(
                    "command `{}` needs {name}: give {name}=VALUE",
                    command.name
                )));
            }
            rendered
        }
    };
    let mut out = body.trim_end().to_string();
    for (extra, used) in [(Some(text), used_text), (input, used_input)] {
        if let Some(extra) = extra.filter(|e| !used && !e.trim().is_empty()) {
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(extra);
        }
    }
    Ok(out)
}

/// The value of each declared argument: given, else its default; a missing one is an error
/// naming it, and so is one the command does not declare.
fn values(command: &Command, invocation: &Invocation) -> Result<BTreeMap<String, String>> {
    if let Some(key) = invocation
        .arguments
        .keys()
        .find(|k| !command.arguments.iter().any(|a| &a.name == *k))
    {
        return Err(unknown_argument(command, key));
    }
    let mut values = BTreeMap::new();
    for a in &command.arguments {
        let value = match (invocation.arguments.get(&a.name), &a.default) {
            (Some(v), _) => v.clone(),
            (None, Some(d)) => d.clone(),
            (None, None) => {
                let about = a
                    .description
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default();
                return Err(Error::invalid_params(format!(
                    "command `{}` needs its argument `{}`{about}: give {}=VALUE",
                    command.name, a.name, a.name
                )));
            }
        };
        values.insert(a.name.clone(), value);
    }
    Ok(values)
}
