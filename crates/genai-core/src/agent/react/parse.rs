//! The reading side of ReAct: the parser of the model's text (thoughts, actions with their
//! inputs, the final answer, an observation the model invented) and the streaming filter that
//! lets only the final answer through.
//!
//! It owns the labels and their tolerant reading (case, markdown, inline answers). It must
//! never run tools, build requests or talk to a client.

use serde_json::{Map, Value};

use crate::format::ToolSpec;

/// One action the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Action {
    /// The tool's name as the specs have it, or as written when no tool has it.
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    /// Why the action cannot run (unknown tool, malformed input): the observation to send back.
    pub(crate) error: Option<String>,
}

/// What a reply of the model means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// One or more actions (several are parallel calls), with the thought before them.
    Act {
        thought: Option<String>,
        actions: Vec<Action>,
    },
    /// The answer to the user.
    Final(String),
}

/// A parsed reply: the text kept (cut before any observation the model wrote) and its meaning.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) text: String,
    pub(crate) step: Step,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    Thought,
    Action,
    ActionInput,
    FinalAnswer,
    Observation,
}

/// A label found in the text: which, where it starts, where the text after it starts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Found {
    pub(super) label: Label,
    start: usize,
    rest: usize,
}

/// Markdown around a label: bold, italics, headings, bullets, inline code.
fn is_decoration(c: char) -> bool {
    matches!(c, '*' | '_' | '#' | '`' | '-' | '>')
}

/// The label at the start of `line` (after blanks and markdown), and the offset after it (and
/// after its colon and any closing markdown).
fn label_at(line: &str) -> Option<(Label, usize)> {
    let body = line.trim_start_matches(|c: char| c.is_whitespace() || is_decoration(c));
    let offset = line.len() - body.len();
    let lower = body.to_ascii_lowercase();
    let words: &[(&str, Label)] = &[
        ("action input", Label::ActionInput),
        ("action_input", Label::ActionInput),
        ("actioninput", Label::ActionInput),
        ("action", Label::Action),
        ("thought", Label::Thought),
        ("final answer", Label::FinalAnswer),
        ("final_answer", Label::FinalAnswer),
        ("observation", Label::Observation),
    ];
    for (word, label) in words {
        let Some(after) = lower.strip_prefix(word) else {
            continue;
        };
        // Closing markdown before the colon (`**Action**:`), blanks, the colon.
        let trimmed = after.trim_start_matches([' ', '*', '_']);
        let Some(after_colon) = trimmed.strip_prefix(':') else {
            continue;
        };
        // Closing markdown after it (`**Action:**`).
        let rest = after_colon.trim_start_matches(['*', '_']);
        return Some((*label, offset + body.len() - rest.len()));
    }
    None
}

/// Every label in `text`: at the start of a line, and `Final Answer:` anywhere.
pub(super) fn labels(text: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let mut from = 0;
        if let Some((label, rest)) = label_at(content) {
            found.push(Found {
                label,
                start,
                rest: start + rest,
            });
            from = if label == Label::FinalAnswer {
                content.len()
            } else {
                rest
            };
        }
        // `Thought: easy. Final Answer: 5` on one line.
        if let Some(at) = content[from..].to_ascii_lowercase().find("final answer:") {
            found.push(Found {
                label: Label::FinalAnswer,
                start: start + from + at,
                rest: start + from + at + "final answer:".len(),
            });
        }
        start += line.len();
    }
    found
}

/// The text before the first observation the model wrote itself.
fn before_observation(text: &str) -> &str {
    match labels(text).iter().find(|f| f.label == Label::Observation) {
        Some(f) => &text[..f.start],
        None => text,
    }
}

/// The answer after the `Final Answer:` label `found[at]`: to the next action or thought, or to
/// the end.
fn answer_after(text: &str, found: &[Found], at: usize) -> String {
    let end = found[at + 1..]
        .iter()
        .find(|f| matches!(f.label, Label::Action | Label::Thought))
        .map_or(text.len(), |f| f.start);
    text[found[at].rest..end].trim().to_string()
}

/// Reads a reply of the model. Text with neither an action nor a final answer is the final
/// answer; an action before any final answer makes the reply a step with actions.
pub fn parse(text: &str, tools: &[ToolSpec]) -> Parsed {
    let kept = before_observation(text);
    let found = labels(kept);
    let first_action = found.iter().position(|f| f.label == Label::Action);
    let first_final = found.iter().position(|f| f.label == Label::FinalAnswer);
    let step = match (first_action, first_final) {
        (Some(a), f) if f.is_none_or(|f| a < f) => {
            let end = f.map_or(kept.len(), |f| found[f].start);
            let thought = found[..a]
                .iter()
                .rfind(|f| f.label == Label::Thought)
                .map(|f| kept[f.rest..found[a].start].trim().to_string())
                .filter(|t| !t.is_empty());
            let actions = (0..found.len())
                .filter(|&i| found[i].label == Label::Action && found[i].start < end)
                .map(|i| {
                    let f = found[i];
                    let next = found.get(i + 1).map_or(end, |g| g.start.min(end));
                    let line_end = kept[f.rest..].find('\n').map_or(kept.len(), |n| f.rest + n);
                    let written = &kept[f.rest..line_end.min(next).max(f.rest)];
                    let input = found
                        .get(i + 1)
                        .filter(|g| g.label == Label::ActionInput && g.start < end)
                        .map(|g| {
                            let stop = found.get(i + 2).map_or(end, |h| h.start.min(end));
                            &kept[g.rest..stop.max(g.rest)]
                        });
                    // Without an `Action Input:` label, the lines after the name.
                    let input = input.or_else(|| {
                        let from = line_end.min(next);
                        let after = kept[from..next.max(from)].trim();
                        (!after.is_empty()).then_some(after)
                    });
                    action(written, input, tools)
                })
                .collect();
            Step::Act { thought, actions }
        }
        (_, Some(f)) => Step::Final(answer_after(kept, &found, f)),
        _ => {
            let body = match found.first() {
                Some(f)
                    if f.label == Label::Thought
                        && f.start == kept.len() - kept.trim_start().len() =>
                {
                    &kept[f.rest..]
                }
                _ => kept,
            };
            Step::Final(body.trim().to_string())
        }
    };
    Parsed {
        text: kept.trim_end().to_string(),
        step,
    }
}

/// Strips what models put around a name: blanks, backticks, bold, quotes, brackets.
fn clean_name(name: &str) -> &str {
    name.trim()
        .trim_matches(|c: char| matches!(c, '`' | '*' | '"' | '\'' | '[' | ']' | '.' | ':'))
        .trim()
}

/// Names compare case-insensitively, a dot standing for the wire's double underscore
/// (`calc.add` for `calc__add`).
fn same_name(written: &str, spec: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace('.', "__");
    norm(written) == norm(spec)
}

/// One action from the text after `Action:` (a name, maybe with its input on the same line) and
/// after `Action Input:`.
fn action(written: &str, input: Option<&str>, tools: &[ToolSpec]) -> Action {
    let written = written.trim();
    // `Action: calc.add {"a": 1}` or `Action: calc.add({"a": 1})`.
    let (name, inline) = match written.find(['{', '(']) {
        Some(at) => {
            let inline = written[at..].trim();
            let inline = inline
                .strip_prefix('(')
                .and_then(|i| i.strip_suffix(')'))
                .unwrap_or(inline);
            (clean_name(&written[..at]), Some(inline))
        }
        _ => (clean_name(written), None),
    };
    let input = inline.or(input);
    let Some(spec) = tools.iter().find(|t| same_name(name, &t.name)) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let error = if name.is_empty() {
            format!(
                "the Action line names no tool. The tools are: {}. Write `Action: NAME`, or give the Final Answer.",
                names.join(", ")
            )
        } else {
            format!(
                "`{name}` is not a tool. The tools are: {}. Use one of these names after `Action:`, or give the Final Answer.",
                names.join(", ")
            )
        };
        return Action {
            tool: name.to_string(),
            arguments: Value::Object(Map::new()),
            error: Some(error),
        };
    };
    let (arguments, error) = match arguments(input.unwrap_or(""), &spec.input_schema) {
        Ok(v) => (v, None),
        Err((raw, why)) => (Value::String(raw), Some(why)),
    };
    Action {
        tool: spec.name.clone(),
        arguments,
        error,
    }
}

/// The arguments object from the text after `Action Input:`: JSON (inside code fences or
/// backticks, followed by any text), or a bare value for a tool with one parameter. On failure,
/// the raw input and the observation that explains it.
fn arguments(input: &str, schema: &Value) -> std::result::Result<Value, (String, String)> {
    let mut text = input.trim();
    if let Some(fenced) = text.strip_prefix("```") {
        // ```json\n{...}\n```
        let body = fenced.split_once('\n').map_or(fenced, |(_, b)| b);
        text = body.split("```").next().unwrap_or(body).trim();
    }
    let text = text.trim_matches('`').trim();
    let params: Vec<&String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    if text.is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    if text.starts_with('{') {
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        return match values.next() {
            Some(Ok(v @ Value::Object(_))) => Ok(v),
            Some(Err(e)) => Err((
                text.to_string(),
                format!(
                    "the Action Input is not valid JSON ({e}). Write the arguments as one JSON object matching {schema}."
                ),
            )),
            _ => Err((text.to_string(), "the Action Input is empty".to_string())),
        };
    }
    // A bare value: for a tool with one parameter only.
    match params.as_slice() {
        [one] => {
            let value = match serde_json::from_str::<Value>(text) {
                Ok(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => v,
                _ => Value::from(text.trim_matches(['"', '\'']).to_string()),
            };
            let mut args = Map::new();
            args.insert((*one).clone(), value);
            Ok(Value::Object(args))
        }
        _ => Err((
            text.to_string(),
            format!(
                "the Action Input must be one JSON object with the arguments, matching {schema}."
            ),
        )),
    }
}

/// Lets only the final answer of a streamed reply through: text is held until the filter can
/// tell whether it is inside `Final Answer:` (then it flows), or part of an action (then none of
/// the reply does). A reply with neither is released at the end (by `finish`).
#[derive(Debug, Default)]
pub(crate) struct StreamFilter {
    text: String,
    /// The answer text sent so far.
    sent: String,
    hidden: bool,
}

impl StreamFilter {
    pub(crate) fn new() -> StreamFilter {
        StreamFilter::default()
    }

    /// Takes the next delta; returns the text that may be shown now (maybe empty).
    pub(crate) fn push(&mut self, delta: &str) -> String {
        self.text.push_str(delta);
        if self.hidden {
            return String::new();
        }
        let kept = before_observation(&self.text);
        let found = labels(kept);
        let first_action = found.iter().position(|f| f.label == Label::Action);
        let first_final = found.iter().position(|f| f.label == Label::FinalAnswer);
        let answer = match (first_action, first_final) {
            (Some(a), f) if f.is_none_or(|f| a < f) => {
                self.hidden = true;
                return String::new();
            }
            (_, Some(f)) => &kept[found[f].rest..],
            _ => return String::new(),
        };
        let answer = answer.trim_start();
        // Hold a line that may become `Observation:`, and trailing blanks (the answer is trimmed).
        let last_line = answer.rfind('\n').map_or(0, |n| n + 1);
        let tail = answer[last_line..]
            .trim_start_matches(|c: char| c.is_whitespace() || is_decoration(c))
            .to_ascii_lowercase();
        let upto = if !tail.is_empty() && "observation:".starts_with(&tail) {
            last_line
        } else {
            answer.len()
        };
        let shown = answer[..upto].trim_end();
        match shown.strip_prefix(self.sent.as_str()) {
            Some(new) if !new.is_empty() => {
                let new = new.to_string();
                self.sent = shown.to_string();
                new
            }
            _ => String::new(),
        }
    }

    /// The end of the reply, whose final answer is `answer`: what of it was not shown yet.
    pub(crate) fn finish(&mut self, answer: &str) -> String {
        let rest = answer
            .strip_prefix(self.sent.as_str())
            .unwrap_or_default()
            .to_string();
        self.sent = answer.to_string();
        rest
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
pub(super) mod tests;
