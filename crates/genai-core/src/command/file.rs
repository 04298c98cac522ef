//! Reading one command file: the YAML front matter between `---` lines, then the Markdown
//! prompt. genai's own files have every field checked (an unknown field, a wrong type, a
//! placeholder no argument declares are errors naming the file, line and field); Claude Code's
//! and Codex's files keep the fields genai understands and list the others as unused.
//!
//! It owns the file format only: it never looks for files nor renders a prompt.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::render::placeholders;
use super::{Argument, BadFile, Command, Dialect, Place, Settings};
use crate::config::lsp::ApplyMode;

/// The front matter of genai's own files.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    description: Option<String>,
    title: Option<String>,
    model: Option<String>,
    system: Option<String>,
    parameters: Option<Map<String, Value>>,
    schema: Option<Value>,
    tools: Option<OneOrMany>,
    allow: Option<OneOrMany>,
    deny: Option<OneOrMany>,
    mode: Option<crate::permission::Mode>,
    files: Option<OneOrMany>,
    arguments: Option<Vec<ArgumentEntry>>,
    apply: Option<ApplyMode>,
}

/// A list, or one item alone (`tools: workspace`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// An argument: its name alone, or a table.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ArgumentEntry {
    Name(String),
    Full(FullArgument),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FullArgument {
    name: String,
    description: Option<String>,
    /// A scalar of any type (`default: 3` is `"3"`).
    default: Option<Value>,
}

/// Reads the command file `path` of `dialect`, named `name`.
pub fn parse(name: &str, path: &Path, dialect: Dialect, place: Place) -> Result<Command, BadFile> {
    read_with(name, path, |text| {
        parse_text(name, text, dialect, place, Some(path))
    })
}

/// Reads the file `path` (named `name`) and `parse`s its text; a file that cannot be read or
/// parsed is a [`BadFile`] (commands' and subagents' files alike).
pub(crate) fn read_with<T>(
    name: &str,
    path: &Path,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, BadFile> {
    let bad = |message: String| BadFile {
        name: name.to_string(),
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("{}: cannot read: {e}", path.display())))?;
    parse(&text).map_err(bad)
}

/// Reads a command from its text; the error is `PATH:LINE: what is wrong`.
pub fn parse_text(
    name: &str,
    text: &str,
    dialect: Dialect,
    place: Place,
    path: Option<&Path>,
) -> Result<Command, String> {
    let shown = path.map_or_else(|| format!("<{name}>"), |p| p.display().to_string());
    let at = |line: usize, msg: &str| format!("{shown}:{line}: {msg}");
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (front, body, body_line) = split(text).map_err(|(line, msg)| at(line, &msg))?;
    let mut command = Command {
        name: name.to_string(),
        description: String::new(),
        title: name.to_string(),
        place,
        dialect,
        path: path.map(Path::to_path_buf),
        arguments: Vec::new(),
        argument_hint: None,
        apply: ApplyMode::Show,
        settings: Settings::default(),
        unused: Vec::new(),
        body: body.to_string(),
    };
    match dialect {
        Dialect::Genai => {
            let f: Front = match front {
                Some(front) if !front.trim().is_empty() => {
                    serde_yaml_ng::from_str(front).map_err(|e| {
                        let (line, msg) = yaml_error(&e);
                        at(line + 1, &format!("front matter: {msg}"))
                    })?
                }
                _ => Front::default(),
            };
            let line = |field: &str| front.map_or(1, |f| field_line(f, field));
            fill(&mut command, f, |field, msg| at(line(field), msg))?;
            check_placeholders(&command, body, |l, msg| at(body_line + l, msg))?;
        }
        Dialect::ClaudeCode | Dialect::Codex => {
            let fields = front.map(lenient_fields).unwrap_or_default();
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("description", Value::String(s)) => command.description = s,
                    // As written: `[pr] [priority]` is a hint, not a YAML list.
                    ("argument-hint", v) => {
                        let raw = front.and_then(|f| raw_field(f, "argument-hint"));
                        command.argument_hint = Some(raw.unwrap_or_else(|| scalar(&v)));
                    }
                    (_, v) => command.unused.push(format!("{key}: {}", scalar(&v))),
                }
            }
        }
    }
    if command.description.trim().is_empty() {
        command.description = first_line(body);
    }
    Ok(command)
}

/// Moves the checked front matter into the command; `err(field, msg)` names the field's line.
fn fill(command: &mut Command, f: Front, err: impl Fn(&str, &str) -> String) -> Result<(), String> {
    let dir = command
        .path
        .as_deref()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let s = &mut command.settings;
    if let Some(d) = f.description {
        command.description = d;
    }
    if let Some(t) = f.title {
        command.title = t;
    }
    if let Some(m) = f.model {
        if m.trim().is_empty() {
            return Err(err("model", "model: give an agent or PROVIDER:MODEL"));
        }
        s.model = Some(m);
    }
    s.system = f.system;
    s.parameters = f.parameters.unwrap_or_default();
    s.schema = match f.schema {
        None => None,
        Some(Value::Object(o)) => Some(Value::Object(o)),
        // A path, relative to the command's file.
        Some(Value::String(p)) => {
            let path = dir.join(&p);
            let read = std::fs::read_to_string(&path).map_err(|e| {
                err(
                    "schema",
                    &format!("schema: cannot read {}: {e}", path.display()),
                )
            })?;
            let v: Value = serde_json::from_str(&read).map_err(|e| {
                err(
                    "schema",
                    &format!("schema: {} is not JSON: {e}", path.display()),
                )
            })?;
            Some(v)
        }
        Some(_) => {
            return Err(err(
                "schema",
                "schema: give a JSON Schema (a mapping) or the path of a file holding one",
            ))
        }
    };
    s.tools = f.tools.map(OneOrMany::into_vec);
    s.allow = f.allow.map(OneOrMany::into_vec).unwrap_or_default();
    s.deny = f.deny.map(OneOrMany::into_vec).unwrap_or_default();
    for (field, rules) in [("allow", &s.allow), ("deny", &s.deny)] {
        for rule in rules {
            crate::permission::rules::Rule::parse(rule)
                .map_err(|e| err(field, &format!("{field}: {}", e.message)))?;
        }
    }
    s.mode = f.mode;
    s.files = f.files.map(OneOrMany::into_vec).unwrap_or_default();
    for file in &s.files {
        if Path::new(file).is_absolute() || file.starts_with('~') {
            return Err(err(
                "files",
                &format!("files: `{file}` is not relative: a command's files are relative to the working folder, inside it"),
            ));
        }
    }
    if let Some(apply) = f.apply {
        command.apply = apply;
    }
    for entry in f.arguments.unwrap_or_default() {
        let a = match entry {
            ArgumentEntry::Name(name) => Argument {
                name,
                description: None,
                default: None,
            },
            ArgumentEntry::Full(a) => Argument {
                name: a.name,
                description: a.description,
                default: a.default.as_ref().map(scalar),
            },
        };
        let reserved = matches!(a.name.as_str(), "input" | "args");
        if !super::valid_argument_name(&a.name) || reserved {
            return Err(err(
                "arguments",
                &format!(
                    "arguments: `{}` cannot name an argument: use letters, digits and `_`, not `input` or `args`",
                    a.name
                ),
            ));
        }
        if command.arguments.iter().any(|b| b.name == a.name) {
            return Err(err(
                "arguments",
                &format!("arguments: `{}` is declared twice", a.name),
            ));
        }
        command.arguments.push(a);
    }
    Ok(())
}

/// Every `{{name}}` of a genai file's body is `input`, `args` or a declared argument.
fn check_placeholders(
    command: &Command,
    body: &str,
    err: impl Fn(usize, &str) -> String,
) -> Result<(), String> {
    for (line, name) in placeholders(body) {
        let known = matches!(name.as_str(), "input" | "args")
            || command.arguments.iter().any(|a| a.name == name);
        if !known {
            return Err(err(
                line,
                &format!(
                    "{{{{{name}}}}} is not an argument: declare it under `arguments` in the front matter (or use {{{{input}}}} or {{{{args}}}})"
                ),
            ));
        }
    }
    Ok(())
}

/// Splits a file into its front matter (None without one), its body and the body's first
/// line number (1-based); an unclosed front matter is an error at its first line.
pub(crate) fn split(text: &str) -> Result<(Option<&str>, &str, usize), (usize, String)> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((None, text, 1));
    };
    let mut offset = 0;
    for (i, line) in rest.split_inclusive('\n').enumerate() {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if trimmed == "---" || trimmed == "..." {
            let body = &rest[offset + line.len()..];
            return Ok((Some(&rest[..offset]), body, i + 3));
        }
        offset += line.len();
    }
    Err((
        1,
        "the front matter opened by `---` is never closed: end it with a line `---`".into(),
    ))
}

/// The text after `key:` on the front matter's line for `key`, unquoted.
fn raw_field(front: &str, key: &str) -> Option<String> {
    front.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.trim_start().strip_prefix(':')?.trim();
        Some(unquote(v).to_string())
    })
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(v)
}

/// The fields of another tool's front matter. Claude Code reads its front matter leniently,
/// and its own documentation writes values YAML refuses (`argument-hint: [pr] [priority]`),
/// so when YAML fails each `key: value` line is taken as it is written.
pub(crate) fn lenient_fields(front: &str) -> Map<String, Value> {
    if let Ok(Value::Object(map)) = serde_yaml_ng::from_str::<Value>(front) {
        return map;
    }
    front
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '#']))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| {
            let unquoted = unquote(v.trim());
            (k.trim().to_string(), Value::String(unquoted.to_string()))
        })
        .collect()
}

/// A YAML error's line in the front matter (1-based) and its message without the position.
pub(crate) fn yaml_error(e: &serde_yaml_ng::Error) -> (usize, String) {
    let line = e.location().map_or(1, |l| l.line());
    let msg = e.to_string();
    let msg = match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    (line, msg)
}

/// The file line of a top-level field of the front matter (the `---` line is line 1).
pub(crate) fn field_line(front: &str, field: &str) -> usize {
    front
        .lines()
        .position(|l| {
            l.strip_prefix(field)
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
        .map_or(1, |i| i + 2)
}

/// A YAML scalar as text (`3`, `true`, `text`); other values as JSON.
pub(crate) fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The first non-empty line of the body, for a file without a description.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
