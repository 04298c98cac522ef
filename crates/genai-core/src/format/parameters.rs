//! Model parameters: what each format accepts (name, type, range), how a value given by a
//! user (often as shell text) is checked and converted, and the stop sequences a caller adds to
//! one request.
//!
//! It owns validation and its messages. It must never know a format's wire shape: formats list
//! their specs and place the values in their bodies themselves.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// The type of a parameter, with its range.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ParameterType {
    Number {
        min: f64,
        max: f64,
    },
    Integer {
        min: i64,
        max: i64,
    },
    String,
    /// A string or a list of strings (stop sequences).
    StringList,
    Boolean,
    Object,
    /// One of these words (matched case-insensitively, stored as written here).
    OneOf {
        values: &'static [&'static str],
    },
}

/// One parameter a format accepts.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ParameterSpec {
    pub name: &'static str,
    #[serde(flatten)]
    pub(crate) kind: ParameterType,
    pub(crate) description: &'static str,
}

impl ParameterSpec {
    pub const fn new(name: &'static str, kind: ParameterType, description: &'static str) -> Self {
        ParameterSpec {
            name,
            kind,
            description,
        }
    }

    /// A number from `min` to `max`.
    pub const fn number(name: &'static str, min: f64, max: f64, description: &'static str) -> Self {
        Self::new(name, ParameterType::Number { min, max }, description)
    }

    /// An integer from `min` to `max`.
    pub(crate) const fn integer(
        name: &'static str,
        min: i64,
        max: i64,
        description: &'static str,
    ) -> Self {
        Self::new(name, ParameterType::Integer { min, max }, description)
    }

    /// A string or a list of strings, always stored as a list.
    pub(crate) const fn string_list(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ParameterType::StringList, description)
    }

    /// A string.
    pub(crate) const fn string(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ParameterType::String, description)
    }

    /// `true` or `false`.
    pub(crate) const fn boolean(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ParameterType::Boolean, description)
    }

    /// A JSON object.
    pub(crate) const fn object(name: &'static str, description: &'static str) -> Self {
        Self::new(name, ParameterType::Object, description)
    }

    /// One of `values`.
    pub(crate) const fn one_of(
        name: &'static str,
        values: &'static [&'static str],
        description: &'static str,
    ) -> Self {
        Self::new(name, ParameterType::OneOf { values }, description)
    }

    /// This parameter under another name (the same meaning on another wire).
    pub(crate) const fn named(self, name: &'static str) -> Self {
        ParameterSpec { name, ..self }
    }

    /// This parameter with another description (one that says where a format sends it).
    pub(crate) const fn described(self, description: &'static str) -> Self {
        ParameterSpec {
            description,
            ..self
        }
    }

    /// This number parameter with another range.
    pub(crate) const fn numbers_between(self, min: f64, max: f64) -> Self {
        assert!(
            matches!(self.kind, ParameterType::Number { .. }),
            "not a number"
        );
        let kind = ParameterType::Number { min, max };
        ParameterSpec { kind, ..self }
    }

    /// This integer parameter with another range.
    pub(crate) const fn integers_between(self, min: i64, max: i64) -> Self {
        assert!(
            matches!(self.kind, ParameterType::Integer { .. }),
            "not an integer"
        );
        let kind = ParameterType::Integer { min, max };
        ParameterSpec { kind, ..self }
    }
}

/// Checks one parameter against a format's specs; strings are converted to the spec's type,
/// so `-p temperature=0.2` works from a shell.
pub fn validate_parameter(
    format: &str,
    specs: &'static [ParameterSpec],
    name: &str,
    value: Value,
) -> Result<(&'static str, Value)> {
    let Some(spec) = specs.iter().find(|s| s.name.eq_ignore_ascii_case(name)) else {
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        return Err(Error::new(
            ErrorKind::InvalidParameter,
            format!(
                "`{name}` is not a parameter of {format}{}; accepted: {}",
                crate::suggest::did_you_mean(name, names.iter().copied()),
                names.join(", ")
            ),
        ));
    };
    if value.is_null() {
        return Ok((spec.name, value));
    }
    let bad = |why: String| {
        Error::new(
            ErrorKind::InvalidParameter,
            format!("{format} parameter `{}`: {why}", spec.name),
        )
    };
    let text_value = value.as_str().map(|t| t.trim().to_string());
    let as_text = text_value.as_deref();
    let value = match spec.kind {
        ParameterType::Number { min, max } => {
            let n = match (&value, as_text) {
                (Value::Number(n), _) => n.as_f64(),
                (_, Some(t)) => t.parse::<f64>().ok(),
                _ => None,
            }
            .filter(|n| n.is_finite())
            .ok_or_else(|| bad(format!("expected a number, got {value}")))?;
            if n < min || n > max {
                return Err(bad(format!("{n} is outside {min}..={max}")));
            }
            Value::from(n)
        }
        ParameterType::Integer { min, max } => {
            let n = match (&value, as_text) {
                (Value::Number(n), _) => n.as_i64(),
                (_, Some(t)) => t.parse::<i64>().ok(),
                _ => None,
            }
            .ok_or_else(|| bad(format!("expected an integer, got {value}")))?;
            if n < min || n > max {
                return Err(bad(format!("{n} is outside {min}..={max}")));
            }
            Value::from(n)
        }
        ParameterType::String => match value {
            Value::String(_) => value,
            other => return Err(bad(format!("expected a string, got {other}"))),
        },
        ParameterType::StringList => match value {
            Value::String(s) => Value::from(vec![s]),
            Value::Array(items) if items.iter().all(Value::is_string) => Value::Array(items),
            other => {
                return Err(bad(format!(
                    "expected a string or a list of strings, got {other}"
                )))
            }
        },
        ParameterType::Boolean => match (&value, as_text) {
            (Value::Bool(_), _) => value,
            (_, Some("true")) => Value::Bool(true),
            (_, Some("false")) => Value::Bool(false),
            _ => return Err(bad(format!("expected true or false, got {value}"))),
        },
        ParameterType::OneOf { values } => as_text
            .and_then(|t| values.iter().find(|v| v.eq_ignore_ascii_case(t)))
            .map(|v| Value::from(*v))
            .ok_or_else(|| {
                bad(format!(
                    "expected one of {}, got {value}",
                    values.join(", ")
                ))
            })?,
        ParameterType::Object => match (value, text_value) {
            (Value::Object(o), _) => Value::Object(o),
            (_, Some(t)) => match serde_json::from_str::<Value>(&t) {
                Ok(Value::Object(o)) => Value::Object(o),
                _ => return Err(bad("expected a JSON object".into())),
            },
            (other, None) => return Err(bad(format!("expected a JSON object, got {other}"))),
        },
    };
    Ok((spec.name, value))
}

/// Checks `value` for `name` against `specs` and stores it in `parameters` under its canonical
/// name (`null` removes it): what a format does unless it takes types the table cannot say.
pub(crate) fn set_checked(
    format: &str,
    specs: &'static [ParameterSpec],
    parameters: &mut Map<String, Value>,
    name: &str,
    value: Value,
) -> Result<()> {
    let (canonical, value) = validate_parameter(format, specs, name, value)?;
    store(parameters, canonical, value);
    Ok(())
}

/// Stores a checked value (`null` removes the parameter).
pub(crate) fn store(parameters: &mut Map<String, Value>, name: &str, value: Value) {
    if value.is_null() {
        parameters.remove(name);
    } else {
        parameters.insert(name.to_string(), value);
    }
}

/// The most stop sequences a request carries (OpenAI's limit): a caller's extra ones replace the
/// last ones set.
const MAX_STOPS: usize = 4;

/// The parameter of `specs` that holds stop sequences (a list named `stop` or
/// `stop_sequences`), if the format has one.
pub fn stop_parameter(specs: &[ParameterSpec]) -> Option<&'static str> {
    specs
        .iter()
        .find(|s| {
            matches!(s.kind, ParameterType::StringList)
                && matches!(s.name, "stop" | "stop_sequences")
        })
        .map(|s| s.name)
}

/// `parameters` with `extra` stop sequences added to the format's stop parameter (the ones set
/// kept, up to [`MAX_STOPS`] in all); unchanged when there are none to add or the format has no
/// stop parameter.
pub(crate) fn with_stops<'p>(
    specs: &[ParameterSpec],
    parameters: &'p Map<String, Value>,
    extra: &[&str],
) -> Cow<'p, Map<String, Value>> {
    let Some(name) = stop_parameter(specs).filter(|_| !extra.is_empty()) else {
        return Cow::Borrowed(parameters);
    };
    let mut stops: Vec<Value> = match parameters.get(name) {
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(s)) => vec![Value::from(s.clone())],
        _ => Vec::new(),
    };
    let missing: Vec<&str> = extra
        .iter()
        .copied()
        .filter(|e| !stops.iter().any(|s| s.as_str() == Some(e)))
        .collect();
    if missing.is_empty() {
        return Cow::Borrowed(parameters);
    }
    stops.truncate(MAX_STOPS.saturating_sub(missing.len()));
    stops.extend(missing.into_iter().map(Value::from));
    let mut out = parameters.clone();
    out.insert(name.to_string(), Value::Array(stops));
    Cow::Owned(out)
}

/// Whether `name` is a setting genai acts on itself (`tool_choice`, prompt caching) rather
/// than a field the Claude and Converse formats copy into the body.
pub(crate) fn is_genai_setting(name: &str) -> bool {
    name == super::schema::TOOL_CHOICE.name || super::cache::is_setting(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::testing::assert_mentions;

    const SPECS: &[ParameterSpec] = &[
        ParameterSpec::number("temperature", 0.0, 2.0, ""),
        ParameterSpec::integer("max_tokens", 1, 1000, ""),
        ParameterSpec::string_list("stop", ""),
    ];

    #[test]
    fn names_match_case_insensitively_and_values_keep_their_case() {
        let (n, v) = validate_parameter("f", SPECS, "Temperature", Value::from("0.5")).unwrap();
        assert_eq!((n, v), ("temperature", Value::from(0.5)));
        let (_, v) = validate_parameter("f", SPECS, "STOP", Value::from("END")).unwrap();
        assert_eq!(v, serde_json::json!(["END"]));
    }

    #[test]
    fn refusals_name_the_accepted_parameters() {
        let e = validate_parameter("f", SPECS, "temp", Value::from(1)).unwrap_err();
        assert_mentions(&e, "temperature, max_tokens, stop");
        assert!(!e.message.contains("did you mean"), "{}", e.message);
        let e = validate_parameter("f", SPECS, "tempreature", Value::from(1)).unwrap_err();
        assert_eq!(
            e.message,
            "`tempreature` is not a parameter of f (did you mean `temperature`?); accepted: \
             temperature, max_tokens, stop"
        );
        let e = validate_parameter("f", SPECS, "temperature", Value::from(3)).unwrap_err();
        assert_mentions(&e, "outside");
        assert!(validate_parameter("f", SPECS, "max_tokens", Value::from(1.5)).is_err());
    }

    #[test]
    fn extra_stops_replace_the_last_ones_set() {
        let specs: &[ParameterSpec] = &SPECS[2..];
        let mut set = Map::new();
        set.insert("stop".into(), serde_json::json!(["A", "B", "C", "D"]));
        let merged = with_stops(specs, &set, &["Observation:"]);
        assert_eq!(
            merged["stop"],
            serde_json::json!(["A", "B", "C", "Observation:"])
        );
        assert!(matches!(
            with_stops(specs, &merged, &["Observation:"]),
            Cow::Borrowed(_)
        ));
        assert!(with_stops(&SPECS[..2], &set, &["Observation:"]).get("stop") == set.get("stop"));
        assert_eq!(stop_parameter(&SPECS[..2]), None);
    }
}
