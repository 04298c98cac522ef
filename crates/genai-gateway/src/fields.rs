//! Reading a request's JSON fields, for every API of the gateway: a field's value as the type
//! it must be, refused (400) naming the field when it is not, and the keys of an object that
//! the gateway cannot carry. Also the core's messages built from parts, and the function of a
//! tool and `tool_choice` as both OpenAI APIs give them.
//!
//! It owns these checks only. It must never know an API's fields (each API's file lists its
//! own) nor accept a value of the wrong type by converting it.

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

/// The JSON object of a request body.
pub(crate) fn body(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| ApiError::not_json(&e))?;
    object(value, "body").map_err(|_| ApiError::invalid("body", "must be a JSON object"))
}

/// The request body read as the serde type `T` (no JSON tree of it), refused naming the field
/// that is not what `T` says it is (`messages[0].content: invalid type: ...`).
pub(crate) fn typed<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
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
    match m
        .iter()
        .find(|(k, v)| !v.is_null() && !known.contains(&k.as_str()))
    {
        Some((k, _)) => Err(ApiError::invalid(
            format!("{at}.{k}"),
            "genai's gateway cannot carry it",
        )),
        None => Ok(()),
    }
}

/// A tool's `name` (what every native tool API accepts: 1 to 64 letters, digits, `_`, `-`)
/// and `description` (empty when absent), taken from its object at `at`.
pub fn tool_name(tool: &mut Map<String, Value>, at: &str) -> Result<(String, String), ApiError> {
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

/// A content as every API gives it: a string (one text part), or an array of `noun`s (parts,
/// content blocks) each an object whose `type` is one of the `kinds` this place may hold,
/// read by `read` from its type, its other fields and where it is.
pub(crate) fn content(
    content: Value,
    at: &str,
    noun: &str,
    kinds: &[&str],
    mut read: impl FnMut(&str, Map<String, Value>, &str) -> Result<Part, ApiError>,
) -> Result<Vec<Part>, ApiError> {
    let items = match content {
        Value::String(text) => return Ok(vec![Part::text(text)]),
        Value::Array(items) => items,
        _ => {
            return Err(ApiError::invalid(
                at,
                format!("must be a string or an array of {noun}s"),
            ))
        }
    };
    let mut parts = Vec::with_capacity(items.len());
    for (j, item) in items.into_iter().enumerate() {
        let at = format!("{at}[{j}]");
        let mut fields = object(item, &at)?;
        let kind = match fields.remove("type") {
            Some(Value::String(t)) => t,
            _ => return Err(ApiError::invalid(format!("{at}.type"), "is required")),
        };
        if !kinds.contains(&kind.as_str()) {
            return Err(ApiError::invalid(
                format!("{at}.type"),
                format!(
                    "a `{kind}` {noun} cannot be carried here (only {})",
                    kinds.join(", ")
                ),
            ));
        }
        parts.push(read(&kind, fields, &at)?);
    }
    Ok(parts)
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
