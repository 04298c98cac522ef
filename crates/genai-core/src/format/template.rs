//! The template engine of the `http-template` format: `${parameters.NAME}` placeholders (with
//! `:-default`), JSON-escaped inside a JSON string and raw elsewhere, and `${credential.NAME}`
//! left as a marker for the provider.
//!
//! It owns cutting, checking and rendering templates. It must never see a credential's value
//! nor know what the parameters mean: the format fills them.

use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// Delimits a credential marker in a rendered body (U+0001, scrubbed from every inserted value).
pub(crate) const CREDENTIAL_MARK: char = '\u{1}';

/// Placeholders genai fills itself; they cannot be set as parameters.
pub(crate) const BUILT_IN: &[&str] = &[
    "messages",
    "prompt",
    "system",
    "model",
    "stream",
    "images",
    "image_urls",
    "response_schema",
];

/// A body cut short for an error message.
pub(super) fn cut(text: &str, max: usize) -> String {
    let t = text.trim();
    let short: String = t.chars().take(max).collect();
    if short.len() < t.len() {
        format!("{short}…")
    } else {
        short
    }
}

/// One placeholder found in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Placeholder {
    Parameter {
        name: String,
        default: Option<String>,
    },
    Credential(String),
}

/// Splits `${...}` into a placeholder; `None` when it is neither kind.
pub(super) fn parse_placeholder(inner: &str) -> Option<Placeholder> {
    if let Some(rest) = inner.strip_prefix("parameters.") {
        let (name, default) = match rest.split_once(":-") {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (rest, None),
        };
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
        return ok.then(|| Placeholder::Parameter {
            name: name.to_string(),
            default,
        });
    }
    let name = inner.strip_prefix("credential.")?;
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    ok.then(|| Placeholder::Credential(name.to_string()))
}

/// A piece of a template: literal text or a placeholder, and whether it sits inside a JSON string.
#[derive(Debug)]
pub(super) enum Piece<'a> {
    Text(&'a str),
    Slot {
        placeholder: Placeholder,
        in_string: bool,
        raw: &'a str,
    },
}

/// Cuts a template into pieces, tracking JSON strings (quotes and backslash escapes) so each
/// placeholder knows whether its value must be escaped. An unclosed `${` or an unknown kind is
/// an error naming it.
pub(super) fn pieces(template: &str) -> Result<Vec<Piece<'_>>> {
    let mut out = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut start = 0;
    let mut i = 0;
    let bytes = template.as_bytes();
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'$' && bytes.get(i + 1) == Some(&b'{') && !escaped {
            let close = template[i..].find('}').map(|c| i + c).ok_or_else(|| {
                template_error(format!(
                    "request_body has an unclosed placeholder at `{}`",
                    cut(&template[i..], 40)
                ))
            })?;
            let raw = &template[i..=close];
            let placeholder = parse_placeholder(&template[i + 2..close]).ok_or_else(|| {
                template_error(format!(
                    "request_body has an unknown placeholder `{raw}`: use ${{parameters.NAME}}, \
                     ${{parameters.NAME:-default}} or ${{credential.NAME}}"
                ))
            })?;
            if start < i {
                out.push(Piece::Text(&template[start..i]));
            }
            out.push(Piece::Slot {
                placeholder,
                in_string,
                raw,
            });
            i = close + 1;
            start = i;
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        }
        i += 1;
    }
    if start < template.len() {
        out.push(Piece::Text(&template[start..]));
    }
    Ok(out)
}

pub(super) fn template_error(message: String) -> Error {
    Error::new(ErrorKind::InvalidParameter, message)
}

/// The parameter names a template's placeholders use (built-in ones included).
pub(super) fn placeholder_names(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    for p in pieces(template).unwrap_or_default() {
        if let Piece::Slot {
            placeholder: Placeholder::Parameter { name, .. },
            ..
        } = p
        {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// Removes the credential marker's delimiter from every string of a value.
fn scrub(v: &mut Value) {
    match v {
        Value::String(s) if s.contains(CREDENTIAL_MARK) => s.retain(|c| c != CREDENTIAL_MARK),
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(map) => map.values_mut().for_each(scrub),
        _ => {}
    }
}

/// The JSON-escaped inside of a string literal holding `text` (no surrounding quotes).
fn escape_in_string(text: &str) -> String {
    let quoted = Value::from(text).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

/// Renders a template: `values` gives each parameter's value. Every missing parameter (no value,
/// no default) is named in one error, before anything is sent. Credentials become markers
/// (`\u0001credential:NAME\u0001` inside the JSON string) for the provider to fill.
pub fn render(template: &str, values: &Map<String, Value>) -> Result<String> {
    let mut out = String::with_capacity(template.len() + 256);
    let mut missing: Vec<&str> = Vec::new();
    for piece in pieces(template)? {
        let (placeholder, in_string, raw) = match piece {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Slot {
                placeholder,
                in_string,
                raw,
            } => (placeholder, in_string, raw),
        };
        match placeholder {
            Placeholder::Credential(name) => {
                if !in_string {
                    return Err(template_error(format!(
                        "request_body: {raw} must sit inside a JSON string, such as \"Bearer {raw}\""
                    )));
                }
                out.push_str(&format!("\\u0001credential:{name}\\u0001"));
            }
            Placeholder::Parameter { name, default } => match values.get(&name) {
                Some(value) => {
                    let mut value = value.clone();
                    scrub(&mut value);
                    // genai's own text (a prompt of `42`) is always text.
                    let parse = !BUILT_IN.contains(&name.as_str());
                    out.push_str(&insert(&value, in_string, parse));
                }
                None => match default {
                    // A default is template text, written as it must read at its place.
                    Some(d) => out.push_str(&d),
                    None => {
                        if !missing.contains(&raw) {
                            missing.push(raw);
                        }
                    }
                },
            },
        }
    }
    if !missing.is_empty() {
        return Err(template_error(format!(
            "request_body uses {} with no value and no default: set {} with -p NAME=VALUE, in \
             [model_configurations.NAME.parameters], or write ${{parameters.NAME:-default}}",
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" }
        )));
    }
    Ok(out)
}

/// A value as template text: inside a string, its text escaped (a non-string value as its JSON
/// text); elsewhere, raw JSON (with `parse`, a string that holds JSON, as `-p n=42` gives, is
/// inserted as that JSON; any other string is quoted).
fn insert(value: &Value, in_string: bool, parse: bool) -> String {
    match (value, in_string) {
        (Value::String(s), true) => escape_in_string(s),
        (other, true) => escape_in_string(&other.to_string()),
        (Value::String(s), false) if parse && serde_json::from_str::<Value>(s).is_ok() => {
            s.trim().to_string()
        }
        (other, false) => other.to_string(),
    }
}

/// Parses rendered text as JSON; the error points at the place in the rendered text.
pub(super) fn parse_rendered(rendered: &str) -> Result<Value> {
    serde_json::from_str(rendered).map_err(|e| {
        let line = rendered.lines().nth(e.line().saturating_sub(1)).unwrap_or("");
        let col = e.column().saturating_sub(1);
        let from = line
            .char_indices()
            .map(|(i, _)| i)
            .filter(|i| *i + 40 >= col)
            .find(|_| true)
            .unwrap_or(0)
            .min(line.len());
        let around: String = line[from..].chars().take(80).collect();
        template_error(format!(
            "request_body is not valid JSON once rendered ({e}), near `{around}`: quote string \
             placeholders (\"${{parameters.NAME}}\") and leave numbers and ${{parameters.messages}} bare"
        ))
    })
}
