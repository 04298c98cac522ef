//! Grammar-constrained sampling for the local engine: a JSON Schema becomes a llama.cpp
//! grammar (structured output), and the offered tools become a grammar for tool calls in the
//! chat template's convention, lazy (free text until the call's opening words) unless a call is
//! required. It also writes the tools' description for the system prompt and reads the calls
//! back out of the generated text.
//!
//! It owns the grammar text, the calling convention and the parsing of calls. It must never
//! evaluate or sample anything (the engine does, with [`Grammar::sampler`] in its chain) nor
//! speak the openai-chat wire (`wire` does).

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use serde_json::{json, Map, Value};

use genai_core::error::{Error, Result};

/// A grammar for the sampler: its GBNF text, and the words that switch it on when it is lazy
/// (`None`: it constrains the whole reply).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grammar {
    pub(crate) text: String,
    pub(crate) triggers: Option<Vec<String>>,
}

impl Grammar {
    /// The grammar of a JSON Schema: the whole reply is one JSON value that matches it.
    pub(crate) fn for_schema(schema: &Value) -> Result<Grammar> {
        Ok(Grammar {
            text: schema_grammar(schema)?,
            triggers: None,
        })
    }

    /// The sampler that enforces it (first in the engine's chain).
    pub(crate) fn sampler(&self, model: &LlamaModel) -> Result<LlamaSampler> {
        let made = match &self.triggers {
            None => LlamaSampler::grammar(model, &self.text, "root"),
            Some(words) => LlamaSampler::grammar_lazy(model, &self.text, "root", words, &[]),
        };
        made.map_err(|e| Error::invalid_params(format!("llama.cpp refuses the grammar: {e}")))
    }
}

fn schema_grammar(schema: &Value) -> Result<String> {
    llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| {
        Error::invalid_params(format!(
            "the local engine cannot turn this JSON Schema into a grammar: {e}"
        ))
    })
}

/// How a model writes a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Convention {
    /// `<tool_call>{"name": ..., "arguments": ...}</tool_call>`, the Hermes and Qwen templates'.
    Hermes,
    /// `{"tool_call": {"name": ..., "arguments": ...}}`, for templates that have no convention.
    PlainJson,
}

impl Convention {
    /// The convention of a chat template (its Jinja source), plain JSON when it has none.
    pub(crate) fn of_template(template: Option<&str>) -> Convention {
        match template {
            Some(t) if t.contains("<tool_call>") => Convention::Hermes,
            _ => Convention::PlainJson,
        }
    }

    /// The text that opens a call (the lazy grammar's trigger).
    fn opening(self) -> &'static str {
        match self {
            Convention::Hermes => "<tool_call>",
            Convention::PlainJson => "{\"tool_call\"",
        }
    }
}

/// A tool as the request offers it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tool {
    pub name: String,
    pub description: String,
    pub(crate) parameters: Value,
}

/// Which calls the model may or must make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Auto,
    Required,
    Tool(String),
}

/// The tools of a request and the choice among them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolOffer {
    pub(crate) tools: Vec<Tool>,
    pub(crate) choice: Choice,
}

/// The most calls one reply may make where the convention has parallel calls (Hermes); the
/// plain JSON convention has one call per reply.
const MAX_CALLS: usize = 4;

impl ToolOffer {
    /// The tools the grammar allows (one, when the choice names it).
    fn allowed(&self) -> Vec<&Tool> {
        match &self.choice {
            Choice::Tool(name) => self.tools.iter().filter(|t| t.name == *name).collect(),
            _ => self.tools.iter().collect(),
        }
    }

    /// The grammar of a reply: text, or calls of the allowed tools with arguments that match
    /// their schemas (lazy, from the call's opening words); calls only when one is required.
    pub(crate) fn grammar(&self, convention: Convention) -> Result<Grammar> {
        let calls: Vec<Value> = self
            .allowed()
            .iter()
            .map(|t| {
                json!({"type": "object",
                       "properties": {"name": {"const": t.name}, "arguments": object_schema(&t.parameters)},
                       "required": ["name", "arguments"], "additionalProperties": false})
            })
            .collect();
        if calls.is_empty() {
            return Err(Error::invalid_params(
                "tool_choice names a tool that is not offered",
            ));
        }
        let call = json!({"anyOf": calls});
        let (schema, block) = match convention {
            Convention::Hermes => (call, r#""<tool_call>" "\n"? call "\n"? "</tool_call>""#),
            Convention::PlainJson => (
                json!({"type": "object", "properties": {"tool_call": call},
                       "required": ["tool_call"], "additionalProperties": false}),
                "call",
            ),
        };
        let rules = schema_grammar(&schema)?;
        // The schema's root becomes the rule of one call; the root is a few calls.
        let rules: String = rules
            .lines()
            .map(|l| match l.strip_prefix("root ::=") {
                Some(rest) => format!("call ::={rest}\n"),
                None => format!("{l}\n"),
            })
            .collect();
        let more = match convention {
            Convention::Hermes => MAX_CALLS - 1,
            Convention::PlainJson => 0,
        };
        let text = format!(
            "root ::= call-block (\"\\n\" call-block){{0,{more}}}\ncall-block ::= {block}\n{rules}"
        );
        let triggers = match self.choice {
            Choice::Auto => Some(vec![convention.opening().to_string()]),
            Choice::Required | Choice::Tool(_) => None,
        };
        Ok(Grammar { text, triggers })
    }

    /// What the system prompt says of the tools and how to call them.
    pub(crate) fn instructions(&self, convention: Convention) -> String {
        let list: Vec<String> = self
            .allowed()
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name,
                       "description": t.description, "parameters": t.parameters}})
                .to_string()
            })
            .collect();
        let how = match convention {
            Convention::Hermes => "For each function call, return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>",
            Convention::PlainJson => "To call a function, answer with only this JSON object:\n{\"tool_call\": {\"name\": <function-name>, \"arguments\": <args-json-object>}}",
        };
        format!(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{}\n</tools>\n\n{how}",
            list.join("\n")
        )
    }
}

/// A tool's parameters as an object schema (a tool without parameters takes `{}`).
fn object_schema(parameters: &Value) -> Value {
    match parameters {
        Value::Object(o) if !o.is_empty() => parameters.clone(),
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// A call read from the generated text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) arguments: Value,
}

/// Splits generated text into the text before the calls and the calls. Text that makes no
/// call in the convention, or whose first call does not parse, is left as text; a later call
/// cut short (the reply reached its length) is dropped.
pub(crate) fn parse_calls(text: &str, convention: Convention) -> (String, Vec<Call>) {
    let start = match convention {
        Convention::Hermes => text.find(convention.opening()),
        // The object may be spread over lines: `{` then `"tool_call"` after any spaces.
        Convention::PlainJson => text
            .match_indices('{')
            .map(|(i, _)| i)
            .find(|i| text[i + 1..].trim_start().starts_with("\"tool_call\"")),
    };
    let Some(start) = start else {
        return (text.to_string(), Vec::new());
    };
    let mut calls = Vec::new();
    let mut rest = &text[start..];
    while let Some((call, after)) = next_call(rest.trim_start(), convention) {
        calls.push(call);
        rest = after;
    }
    if calls.is_empty() {
        return (text.to_string(), calls);
    }
    (text[..start].trim_end().to_string(), calls)
}

/// The call at the start of `text`, and the text after it.
fn next_call(text: &str, convention: Convention) -> Option<(Call, &str)> {
    let json_start = match convention {
        Convention::Hermes => text.strip_prefix(convention.opening())?,
        Convention::PlainJson => text.strip_prefix('{').map(|_| text)?,
    };
    let mut values = serde_json::Deserializer::from_str(json_start).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let after = &json_start[values.byte_offset()..];
    let (call, after) = match convention {
        Convention::Hermes => (value, after.trim_start().strip_prefix("</tool_call>")?),
        Convention::PlainJson => (value.get("tool_call")?.clone(), after),
    };
    let name = call.get("name")?.as_str()?.to_string();
    let arguments = call
        .get("arguments")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    Some((Call { name, arguments }, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(choice: Choice) -> ToolOffer {
        ToolOffer {
            tools: vec![Tool {
                name: "add".into(),
                description: "Adds.".into(),
                parameters: json!({"type": "object", "properties": {"a": {"type": "integer"}},
                                   "required": ["a"]}),
            }],
            choice,
        }
    }

    #[test]
    fn calls_are_read_in_both_conventions() {
        let (text, calls) = parse_calls(
            "Sure.\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1}}\n</tool_call>\n<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 2}}</tool_call>",
            Convention::Hermes,
        );
        assert_eq!(text, "Sure.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].arguments, json!({"a": 2}));
        let (text, calls) = parse_calls(
            r#"{"tool_call": {"name": "add", "arguments": {"a": 3}}}"#,
            Convention::PlainJson,
        );
        assert_eq!((text.as_str(), calls[0].name.as_str()), ("", "add"));
        let broken = "<tool_call>{\"name\": \"add\"";
        assert_eq!(
            parse_calls(broken, Convention::Hermes),
            (broken.to_string(), vec![])
        );
        assert_eq!(parse_calls("plain", Convention::Hermes).1, vec![]);
    }

    #[test]
    fn grammars_are_lazy_unless_a_call_is_required() {
        let g = offer(Choice::Auto).grammar(Convention::Hermes).unwrap();
        assert_eq!(g.triggers, Some(vec!["<tool_call>".to_string()]));
        assert!(g.text.starts_with("root ::= call-block"), "{}", g.text);
        assert!(g.text.contains("\ncall ::="), "{}", g.text);
        assert!(!g.text.contains("\nroot ::= ") || g.text.matches("root ::=").count() == 1);
        let g = offer(Choice::Required)
            .grammar(Convention::PlainJson)
            .unwrap();
        assert_eq!(g.triggers, None);
        assert!(g.text.contains("tool_call"), "{}", g.text);
        assert!(offer(Choice::Tool("other".into()))
            .grammar(Convention::Hermes)
            .is_err());
        assert!(offer(Choice::Auto)
            .instructions(Convention::Hermes)
            .contains("<tool_call>"));
        assert_eq!(
            Convention::of_template(Some("{% if tools %}<tool_call>{% endif %}")),
            Convention::Hermes
        );
        assert_eq!(Convention::of_template(None), Convention::PlainJson);
    }

    #[test]
    fn a_schema_becomes_a_grammar() {
        let g = Grammar::for_schema(
            &json!({"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"]}),
        )
        .unwrap();
        assert!(g.text.contains("root ::="), "{}", g.text);
        assert_eq!(g.triggers, None);
    }
}
