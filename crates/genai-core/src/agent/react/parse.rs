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
pub struct Action {
    /// The tool's name as the specs have it, or as written when no tool has it.
    pub tool: String,
    pub arguments: Value,
    /// Why the action cannot run (unknown tool, malformed input): the observation to send back.
    pub error: Option<String>,
}

/// What a reply of the model means.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
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
pub struct Parsed {
    pub text: String,
    pub step: Step,
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
pub struct StreamFilter {
    text: String,
    /// The answer text sent so far.
    sent: String,
    hidden: bool,
}

impl StreamFilter {
    pub fn new() -> StreamFilter {
        StreamFilter::default()
    }

    /// Takes the next delta; returns the text that may be shown now (maybe empty).
    pub fn push(&mut self, delta: &str) -> String {
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
    pub fn finish(&mut self, answer: &str) -> String {
        let rest = answer
            .strip_prefix(self.sent.as_str())
            .unwrap_or_default()
            .to_string();
        self.sent = answer.to_string();
        rest
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;

    pub(in crate::agent) fn tools() -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: "calc__add".into(),
                description: "Adds two numbers.".into(),
                input_schema: json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]}),
            },
            ToolSpec {
                name: "search".into(),
                description: "Searches the web.".into(),
                input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            },
        ]
    }

    fn acts(text: &str) -> Vec<Action> {
        match parse(text, &tools()).step {
            Step::Act { actions, .. } => actions,
            other => panic!("not an action: {other:?} from {text:?}"),
        }
    }

    fn one(text: &str) -> Action {
        let a = acts(text);
        assert_eq!(a.len(), 1, "{a:?}");
        a.into_iter().next().unwrap()
    }

    fn final_of(text: &str) -> String {
        match parse(text, &tools()).step {
            Step::Final(t) => t,
            other => panic!("not final: {other:?} from {text:?}"),
        }
    }

    #[test]
    fn a_plain_action_is_read_with_its_thought() {
        let p = parse(
            "Thought: I must add.\nAction: calc__add\nAction Input: {\"a\": \"2\", \"b\": \"3\"}",
            &tools(),
        );
        assert_eq!(
            p.step,
            Step::Act {
                thought: Some("I must add.".into()),
                actions: vec![Action {
                    tool: "calc__add".into(),
                    arguments: json!({"a": "2", "b": "3"}),
                    error: None
                }]
            }
        );
    }

    #[test]
    fn labels_are_case_insensitive_and_may_be_in_markdown() {
        let a = one("**thought:** hm\n**ACTION:** `calc.add`\n**Action Input**: ```json\n{\"a\": \"1\", \"b\": \"2\"}\n```\n");
        assert_eq!(
            (a.tool.as_str(), &a.arguments),
            ("calc__add", &json!({"a": "1", "b": "2"}))
        );
        assert_eq!(a.error, None);
        let a = one("## Action: Calc__Add\n- action_input: `{\"a\": \"1\", \"b\": \"2\"}`");
        assert_eq!(a.arguments, json!({"a": "1", "b": "2"}));
    }

    #[test]
    fn json_followed_by_text_is_read() {
        let a = one("Action: calc__add\nAction Input: {\"a\": \"1\", \"b\": \"2\"} and then I will see.\nMore words.");
        assert_eq!(a.arguments, json!({"a": "1", "b": "2"}));
        assert_eq!(a.error, None);
    }

    #[test]
    fn a_bare_input_fills_a_single_parameter_tool() {
        let a = one("Action: search\nAction Input: weather in Paris");
        assert_eq!(a.arguments, json!({"query": "weather in Paris"}));
        let a = one("Action: search\nAction Input: \"quoted\"");
        assert_eq!(a.arguments, json!({"query": "quoted"}));
        // Not for a tool with two parameters.
        let a = one("Action: calc__add\nAction Input: 2 and 3");
        assert!(
            a.error.as_deref().unwrap().contains("one JSON object"),
            "{a:?}"
        );
    }

    #[test]
    fn several_actions_are_parallel_calls() {
        let a = acts("Thought: both\nAction: search\nAction Input: {\"query\": \"x\"}\n\nAction: calc__add\nAction Input: {\"a\": \"1\", \"b\": \"1\"}\n");
        let names: Vec<&str> = a.iter().map(|a| a.tool.as_str()).collect();
        assert_eq!(names, ["search", "calc__add"]);
        assert_eq!(a[0].arguments, json!({"query": "x"}));
        assert_eq!(a[1].arguments, json!({"a": "1", "b": "1"}));
    }

    #[test]
    fn an_unknown_tool_gets_the_valid_names() {
        let a = one("Action: multiply\nAction Input: {}");
        assert_eq!(a.tool, "multiply");
        let e = a.error.unwrap();
        assert!(
            e.contains("`multiply` is not a tool") && e.contains("calc__add, search"),
            "{e}"
        );
        let a = one("Action:\nAction Input: {}");
        assert!(a.error.unwrap().contains("names no tool"));
    }

    #[test]
    fn malformed_json_gets_the_parse_error() {
        let a = one("Action: calc__add\nAction Input: {\"a\": \"1\", \"b\": }");
        let e = a.error.unwrap();
        assert!(e.contains("not valid JSON") && e.contains("column"), "{e}");
        assert_eq!(a.arguments, json!("{\"a\": \"1\", \"b\": }"));
    }

    #[test]
    fn an_invented_observation_is_cut_off() {
        let p = parse(
            "Action: search\nAction Input: {\"query\": \"x\"}\nObservation: sunny\nFinal Answer: sunny",
            &tools(),
        );
        assert_eq!(p.text, "Action: search\nAction Input: {\"query\": \"x\"}");
        assert!(matches!(p.step, Step::Act { ref actions, .. } if actions.len() == 1));
    }

    #[test]
    fn final_answers_and_text_without_labels() {
        for (text, answer) in [
            ("Thought: easy.\nFinal Answer: 5", "5"),
            ("**Final Answer:** five\nand more", "five\nand more"),
            ("I think so. Final Answer: yes", "yes"),
            ("Thought: easy. final answer: 5", "5"),
            ("Just a reply.", "Just a reply."),
            (
                "Thought: no tools needed, hello!",
                "no tools needed, hello!",
            ),
            ("", ""),
            // A final answer before an action wins.
            ("Final Answer: 5\nAction: search", "5"),
        ] {
            assert_eq!(final_of(text), answer, "{text:?}");
        }
    }

    #[test]
    fn an_action_without_input_has_no_arguments_and_inline_input_is_read() {
        assert_eq!(one("Action: search").arguments, json!({}));
        assert_eq!(
            one("Action: search\n{\"query\": \"x\"}").arguments,
            json!({"query": "x"})
        );
        assert_eq!(
            one("Action: calc__add {\"a\": \"1\", \"b\": \"2\"}").arguments,
            json!({"a": "1", "b": "2"})
        );
        assert_eq!(
            one("Action: calc__add({\"a\": \"1\", \"b\": \"2\"})").arguments,
            json!({"a": "1", "b": "2"})
        );
    }

    fn stream(pieces: &[&str], answer_of_parser: bool) -> (String, String) {
        let text: String = pieces.concat();
        let mut f = StreamFilter::new();
        let mut shown = String::new();
        for p in pieces {
            shown.push_str(&f.push(p));
        }
        let answer = match parse(&text, &tools()).step {
            Step::Final(a) => a,
            Step::Act { .. } => String::new(),
        };
        if answer_of_parser {
            shown.push_str(&f.finish(&answer));
        }
        (shown, answer)
    }

    #[test]
    fn the_stream_shows_only_the_final_answer() {
        let (shown, answer) = stream(
            &[
                "Thou",
                "ght: easy\nFin",
                "al Ans",
                "wer:",
                " The",
                " sum is",
                " 5.\n",
                "Observ",
                "ation: 5",
            ],
            false,
        );
        assert_eq!(answer, "The sum is 5.");
        assert_eq!(shown, "The sum is 5.", "shown before the end");
        let (shown, _) = stream(
            &[
                "Thought: x\nAct",
                "ion: search\nAction Input: {}",
                "\nFinal Answer: no",
            ],
            false,
        );
        assert_eq!(shown, "");
    }

    #[test]
    fn the_stream_releases_text_without_labels_at_the_end() {
        let mut f = StreamFilter::new();
        assert_eq!(f.push("Hello"), "");
        assert_eq!(f.push(" there"), "");
        assert_eq!(f.finish("Hello there"), "Hello there");
        let (shown, answer) = stream(&["Final Answer: ", "4", "2  "], true);
        assert_eq!((shown.as_str(), answer.as_str()), ("42", "42"));
        let (shown, _) = stream(&["Final Answer: Ob", "viously yes"], true);
        assert_eq!(shown, "Obviously yes");
    }
}
