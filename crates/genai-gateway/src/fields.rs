//! Reading a request's JSON fields, for every API of the gateway: a field's value as the type
//! it must be, refused (400) naming the field when it is not, and the keys of an object that
//! the gateway cannot carry. Also the core's messages built from parts, and the function of a
//! tool and `tool_choice` as both OpenAI APIs give them.
//!
//! It owns these checks only. It must never know an API's fields (each API's file lists its
//! own) nor accept a value of the wrong type by converting it.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::ApiError;
use genai_core::format::ToolSpec;
use genai_core::message::{Message, Part, Role};

pub(crate) fn string(value: Value, at: &str) -> Result<String, ApiError> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(ApiError::invalid(at, "must be a string")),
    }
}

pub(crate) fn boolean(value: Value, at: &str) -> Result<bool, ApiError> {
    value
        .as_bool()
        .ok_or_else(|| ApiError::invalid(at, "must be true or false"))
}

pub(crate) fn object(value: Value, at: &str) -> Result<Map<String, Value>, ApiError> {
    match value {
        Value::Object(m) => Ok(m),
        _ => Err(ApiError::invalid(at, "must be an object")),
    }
}

pub(crate) fn array(value: Value, at: &str) -> Result<Vec<Value>, ApiError> {
    match value {
        Value::Array(a) => Ok(a),
        _ => Err(ApiError::invalid(at, "must be an array")),
    }
}

/// The request body read as the serde type `T` (no JSON tree of it), refused naming the field
/// that is not what `T` says it is (`messages[0].content: invalid type: ...`).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // Read plainly first; only a body refused is read again to name the field (tracking the
    // path of every field read is work every good request would pay).
    if let Ok(value) = serde_json::from_slice(body) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if !inner.is_data() {
            return ApiError::not_json(&inner);
        }
        if path == "." {
            return ApiError::invalid("body", "must be a JSON object");
        }
        let message = inner.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message);
        ApiError::invalid(path, message)
    })?;
    de.end().map_err(|e| ApiError::not_json(&e))?;
    Ok(value)
}

/// Refuses the keys of `m` (at `at`) that are not `known` and not null.
pub(crate) fn only(m: &Map<String, Value>, at: &str, known: &[&str]) -> Result<(), ApiError> {
    let stray = m
        .iter()
        .find(|(k, v)| !v.is_null() && !known.contains(&k.as_str()));
    carried(at, stray.map(|(k, _)| k.as_str()))
}

/// Refuses `{at}.{stray}`, a field of the object at `at` that genai cannot carry, when there
/// is one.
pub(crate) fn carried(at: impl fmt::Display, stray: Option<&str>) -> Result<(), ApiError> {
    match stray {
        Some(k) => Err(ApiError::invalid(
            format!("{at}.{k}"),
            "genai's gateway cannot carry it",
        )),
        None => Ok(()),
    }
}

/// The first key of `other` whose value is not null: a field a serde type of a request does
/// not name, which genai cannot carry.
pub(crate) fn present_key(other: &Map<String, Value>) -> Option<&str> {
    other
        .iter()
        .find(|(_, v)| !v.is_null())
        .map(|(k, _)| k.as_str())
}

/// A path into the request (`messages[0]`, `messages[0].content`), written only when an
/// error names it: a request without errors formats none of its paths.
#[derive(Clone, Copy)]
pub(crate) enum At<'a> {
    /// The element `i` of the array at the path.
    Index(&'a dyn fmt::Display, usize),
    /// The field of the object at the path.
    Field(&'a dyn fmt::Display, &'a str),
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            At::Index(at, i) => write!(f, "{at}[{i}]"),
            At::Field(at, key) => write!(f, "{at}.{key}"),
        }
    }
}

/// A content as every API gives it: a string (one text part), or an array of `T` (parts,
/// content blocks, items), read without a JSON tree.
pub(crate) enum TextOr<T> {
    Text(String),
    List(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TextOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TextOr<T>, D::Error> {
        struct Either<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Either<T> {
            type Value = TextOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<TextOr<T>, E> {
                Ok(TextOr::Text(s.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<TextOr<T>, E> {
                Ok(TextOr::Text(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextOr<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(TextOr::List(items))
            }
        }
        d.deserialize_any(Either(PhantomData))
    }
}

/// The first field of a typed object that a thing of its type does not take: of the `named`
/// fields (name, given), the first given not in `takes`, else the first of `other`'s.
pub(crate) fn stray<'a>(
    named: &[(&'a str, bool)],
    takes: &[&str],
    other: &'a Map<String, Value>,
) -> Option<&'a str> {
    named
        .iter()
        .find(|(name, given)| *given && !takes.contains(name))
        .map(|(name, _)| *name)
        .or_else(|| present_key(other))
}

/// The `type` of a `noun` (part, content block) at `at`, when it is one of the `kinds` this
/// place may hold.
pub(crate) fn kind_of<'a>(
    kind: Option<&'a str>,
    at: impl fmt::Display,
    noun: &str,
    kinds: &[&str],
) -> Result<&'a str, ApiError> {
    let kind = kind.ok_or_else(|| ApiError::invalid(format!("{at}.type"), "is required"))?;
    if !kinds.contains(&kind) {
        return Err(ApiError::invalid(
            format!("{at}.type"),
            format!(
                "a `{kind}` {noun} cannot be carried here (only {})",
                kinds.join(", ")
            ),
        ));
    }
    Ok(kind)
}

/// A tool's `name` (what every native tool API accepts: 1 to 64 letters, digits, `_`, `-`)
/// and `description` (empty when absent), taken from its object at `at`.
pub(crate) fn tool_name(
    tool: &mut Map<String, Value>,
    at: &str,
) -> Result<(String, String), ApiError> {
    let name = string(
        tool.remove("name").unwrap_or_default(),
        &format!("{at}.name"),
    )?;
    let name = checked_tool_name(name, at)?;
    let description = match tool.remove("description") {
        None | Some(Value::Null) => String::new(),
        Some(d) => string(d, &format!("{at}.description"))?,
    };
    Ok((name, description))
}

/// A tool's name as every native tool API accepts it (1 to 64 letters, digits, `_`, `-`), or
/// the refusal naming `{at}.name`.
pub(crate) fn checked_tool_name(name: String, at: &str) -> Result<String, ApiError> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(ApiError::invalid(
            format!("{at}.name"),
            "must be 1 to 64 letters, digits, `_` or `-`",
        ));
    }
    Ok(name)
}

/// A function tool as both OpenAI APIs give it (Chat Completions' `function` object, a
/// Responses tool): its name, description and `parameters` (an empty object schema when
/// absent). `strict` is checked and accepted, not enforced: the schema goes to the provider as
/// the tool's parameters, and the client checks the arguments it gets back. The caller checks
/// which other keys the object may have.
pub(crate) fn function_tool(tool: &mut Map<String, Value>, at: &str) -> Result<ToolSpec, ApiError> {
    if let Some(strict) = tool.remove("strict").filter(|s| !s.is_null()) {
        boolean(strict, &format!("{at}.strict"))?;
    }
    let (name, description) = tool_name(tool, at)?;
    let input_schema = match tool.remove("parameters") {
        None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{at}.parameters"),
                "must be a JSON Schema object",
            ))
        }
    };
    Ok(ToolSpec {
        name,
        description,
        input_schema,
    })
}

/// `tool_choice` as both OpenAI APIs give it, as the core's parameter: `auto`, `none`,
/// `required`, or the name of the function `{"type": "function", ...}` names at `name_at` (a
/// path of keys: Chat Completions' `function.name`, Responses' `name`).
pub(crate) fn tool_choice(value: &Value, name_at: &[&str]) -> Result<Value, ApiError> {
    match value {
        Value::String(s) if matches!(s.as_str(), "auto" | "none" | "required") => Ok(value.clone()),
        Value::Object(_) if value["type"] == "function" => {
            let name = name_at.iter().fold(value, |v, key| &v[*key]);
            match name {
                Value::String(_) => Ok(name.clone()),
                _ => Err(ApiError::invalid(
                    format!("tool_choice.{}", name_at.join(".")),
                    "is required",
                )),
            }
        }
        _ => {
            let named = name_at.iter().rev().fold("...".to_string(), |inner, key| {
                format!("{{\"{key}\":{inner}}}")
            });
            let shape = format!("{{\"type\":\"function\",{}", &named[1..]);
            Err(ApiError::invalid(
                "tool_choice",
                format!("must be auto, none, required or {shape}"),
            ))
        }
    }
}

/// A message of the core with this role and these parts.
pub(crate) fn with_role(role: Role, content: Vec<Part>) -> Message {
    Message {
        role,
        content,
        from: None,
    }
}

/// The text of these parts.
pub(crate) fn text_of(parts: &[Part]) -> String {
    with_role(Role::System, parts.to_vec()).text()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_choice_reads_each_apis_shape_and_names_what_is_wrong() {
        let chat = ["function", "name"];
        let responses = ["name"];
        for words in ["auto", "none", "required"] {
            assert_eq!(tool_choice(&json!(words), &chat).unwrap(), json!(words));
        }
        let named = json!({"type": "function", "function": {"name": "read"}});
        assert_eq!(tool_choice(&named, &chat).unwrap(), json!("read"));
        let named = json!({"type": "function", "name": "read"});
        assert_eq!(tool_choice(&named, &responses).unwrap(), json!("read"));

        let nameless = json!({"type": "function", "function": {}});
        let e = tool_choice(&nameless, &chat)
            .unwrap_err()
            .body()
            .to_string();
        assert!(e.contains("tool_choice.function.name"), "{e}");
        let e = tool_choice(&json!({"type": "function"}), &responses)
            .unwrap_err()
            .body()
            .to_string();
        assert!(e.contains("tool_choice.name"), "{e}");
        let e = tool_choice(&json!("any"), &chat)
            .unwrap_err()
            .body()
            .to_string();
        assert!(
            e.contains(r#"{\"type\":\"function\",\"function\":{\"name\":...}}"#),
            "{e}"
        );
        let e = tool_choice(&json!(3), &responses)
            .unwrap_err()
            .body()
            .to_string();
        assert!(e.contains(r#"{\"type\":\"function\",\"name\":...}"#), "{e}");
    }
}
