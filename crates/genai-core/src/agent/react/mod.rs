//! ReAct: tool use as text, for models without native tool calls (the small local model, the
//! generic http-template connector). The model is told the tools and a format (`Thought:`,
//! `Action:`, `Action Input:` then stop, or `Final Answer:`); the agent reads its text, runs the
//! actions and answers with an `Observation:` message, until a final answer.
//!
//! This module owns the ReAct prompt (the instructions, the transcript of earlier steps as
//! text) and the loop; `parse.rs` reads the model's text. It must never run a tool itself (the
//! caller's `run` does) nor talk to a client (only the final answer reaches `on_delta`).

mod parse;

use serde_json::Value;

use parse::{labels, Label};
pub(crate) use parse::{parse, Step, StreamFilter};

use super::tool_loop::{Rounds, ToolLoop};
use super::{AIAgent, Delta, ModelBinding, Notes, OnDelta, TurnSteps};
use crate::error::Result;
use crate::format::wire::text_of;
use crate::format::{RequestOptions, ToolSpec};
use crate::message::{Message, Part, Role};

/// What the model must not write itself: genai writes the observations. A ReAct request adds
/// it to the format's stop sequences (when the format has a stop parameter; else the parser
/// cuts the text at it).
pub(crate) const OBSERVATION: &str = "Observation:";

/// The instructions added to the system message: each tool with its name, description and
/// argument schema, and the exact format of a step.
pub(crate) fn instructions(tools: &[ToolSpec]) -> String {
    let mut out = String::from("You can use tools to answer. The tools are:\n\n");
    for t in tools {
        out.push_str(&format!(
            "- {}: {}\n  Arguments (JSON Schema): {}\n",
            t.name,
            t.description.trim(),
            t.input_schema
        ));
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    out.push_str(&format!(
        "\nTo use a tool, write exactly these three lines, then stop:\n\n\
         Thought: what you need to find out\n\
         Action: the tool's name, one of [{}]\n\
         Action Input: the arguments as one JSON object\n\n\
         The tool's result comes back in a message that starts with \"{OBSERVATION}\". You may \
         use several tools at once (one Action and Action Input per tool) and use tools again \
         after an observation. Never write an Observation yourself. When you know the answer, \
         write:\n\n\
         Thought: I know the answer.\n\
         Final Answer: the answer to the user\n",
        names.join(", ")
    ));
    out
}

/// The messages a ReAct request sends: the instructions appended to the system message (one is
/// made when there is none), and every tool call and result of earlier steps as text (an
/// assistant message with the model's own text, a user message `Observation: ...`), so a format
/// without tool calls carries them.
pub(crate) fn prompt(messages: &[Message], tools: &[ToolSpec]) -> Vec<Message> {
    let instructions = instructions(tools);
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut names: Vec<(String, String)> = Vec::new();
    match messages.first() {
        Some(m) if m.role == Role::System => {
            let text = m.text();
            let text = if text.trim().is_empty() {
                instructions
            } else {
                format!("{}\n\n{instructions}", text.trim_end())
            };
            out.push(Message::system(text));
        }
        _ => out.push(Message::system(instructions)),
    }
    for m in messages.iter().skip_while(|m| m.role == Role::System) {
        match m.role {
            Role::System => {}
            Role::Assistant if m.has_tool_calls() => {
                let calls: Vec<_> = m.calls().collect();
                names.extend(
                    calls
                        .iter()
                        .map(|(id, name, _)| (id.to_string(), name.to_string())),
                );
                // The model's own ReAct text; calls made natively are written out as actions.
                let mut text = m.text();
                if !labels(&text).iter().any(|f| f.label == Label::Action) {
                    for (_, name, args) in &calls {
                        text = format!("{text}\nAction: {name}\nAction Input: {args}");
                    }
                    text = text.trim().to_string();
                }
                out.push(Message::assistant(text));
            }
            Role::Tool => {
                let results: Vec<(String, String, bool)> = m
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        Part::ToolResult {
                            tool_call_id,
                            content,
                            is_error,
                        } => {
                            let name = names
                                .iter()
                                .find(|(id, _)| id == tool_call_id)
                                .map_or_else(|| tool_call_id.clone(), |(_, n)| n.clone());
                            Some((name, text_of(content), *is_error))
                        }
                        _ => None,
                    })
                    .collect();
                out.push(Message::user(observation(&results)));
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// The observation message for one step's results (tool name, text, whether it failed).
pub(crate) fn observation(results: &[(String, String, bool)]) -> String {
    let one = |(name, text, is_error): &(String, String, bool)| {
        if *is_error {
            format!("error from {name}: {text}")
        } else {
            text.clone()
        }
    };
    match results {
        [r] => format!("{OBSERVATION} {}", one(r)),
        _ => {
            let mut out = OBSERVATION.to_string();
            for r in results {
                out.push_str(&format!("\n- {}: {}", r.0, one(r)));
            }
            out
        }
    }
}

impl AIAgent {
    /// The ReAct loop: the tools are described in the system message, the model's text is
    /// parsed, its actions run and their results sent back as an `Observation:` message, until
    /// a final answer (or `max_steps` rounds). Steps are kept as tool calls and results (ids
    /// `react_ROUND_INDEX`), so the history has one shape whatever the mode; only the final
    /// answer reaches `on_delta` and the reply.
    pub(super) async fn react_turn(
        &self,
        binding: &ModelBinding,
        full: &[Message],
        on_delta: Option<OnDelta<'_>>,
        tools: &ToolLoop<'_>,
        notes: &Notes<'_>,
    ) -> Result<TurnSteps> {
        let mut rounds = Rounds::default();
        loop {
            let messages = prompt(&rounds.start(full), &tools.specs);
            let filter = std::sync::Mutex::new(StreamFilter::new());
            let filtered = |delta: Delta<'_>| {
                let Delta::Text(delta) = delta else {
                    // Reasoning is the model's own and never holds an action: shown as is.
                    if let Some(f) = on_delta {
                        f(delta);
                    }
                    return;
                };
                let shown = filter.lock().map(|mut f| f.push(delta)).unwrap_or_default();
                if let (Some(f), false) = (on_delta, shown.is_empty()) {
                    f(Delta::Text(&shown));
                }
            };
            let stream_to: Option<OnDelta<'_>> = match on_delta {
                Some(_) => Some(&filtered),
                None => None,
            };
            let options = RequestOptions {
                stream: stream_to.is_some(),
                tools: &[],
                stop: &[OBSERVATION],
                schema: None,
            };
            let (mut reply, answerer) = self
                .call_model(
                    binding,
                    &binding.model,
                    &messages,
                    &options,
                    stream_to,
                    None,
                    notes,
                )
                .await?;
            rounds.count_usage(reply.usage, &answerer);
            let parsed = parse(&reply.message.text(), &tools.specs);
            let answer = match parsed.step {
                Step::Act { actions, .. } if rounds.may_go_on(tools) => {
                    let ids: Vec<String> = (0..actions.len())
                        .map(|i| format!("react_{}_{i}", rounds.number()))
                        .collect();
                    let runnable: Vec<(String, String, Value)> = actions
                        .iter()
                        .zip(&ids)
                        .filter(|(a, _)| a.error.is_none())
                        .map(|(a, id)| (id.clone(), a.tool.clone(), a.arguments.clone()))
                        .collect();
                    let mut ran = (tools.run)(runnable).await.into_iter();
                    let mut calls = vec![Part::text(parsed.text)];
                    let mut results = Vec::with_capacity(actions.len());
                    for (a, id) in actions.into_iter().zip(ids) {
                        let result = match a.error {
                            Some(why) => Part::ToolResult {
                                tool_call_id: id.clone(),
                                content: vec![Part::text(why)],
                                is_error: true,
                            },
                            None => ran.next().unwrap_or_else(|| Part::ToolResult {
                                tool_call_id: id.clone(),
                                content: vec![Part::text("the tool gave no result")],
                                is_error: true,
                            }),
                        };
                        calls.push(Part::ToolCall {
                            id,
                            name: a.tool,
                            arguments: a.arguments,
                            signature: None,
                        });
                        results.push(result);
                    }
                    let calls = Message {
                        role: Role::Assistant,
                        content: calls,
                        from: reply.message.from.clone(),
                    };
                    rounds.step(calls, results);
                    continue;
                }
                Step::Act { thought, .. } => thought.unwrap_or_else(|| {
                    format!(
                        "(no final answer after {} rounds of tool calls)",
                        tools.max_steps
                    )
                }),
                Step::Final(answer) => answer,
            };
            let rest = filter
                .lock()
                .map(|mut f| f.finish(&answer))
                .unwrap_or_default();
            if let (Some(f), false) = (on_delta, rest.is_empty()) {
                f(Delta::Text(&rest));
            }
            // The answer replaces the text; the reasoning before it is kept.
            reply.message.content.retain(Part::is_reasoning);
            reply.message.content.push(Part::text(answer));
            return Ok(rounds.end(reply, answerer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse::tests::tools;
    use super::*;
    use crate::format::testing::*;
    use serde_json::json;

    #[test]
    fn the_prompt_carries_the_instructions_and_earlier_steps_as_text() {
        let steps = vec![
            Message::system("Be brief."),
            Message::user("2+3?"),
            said(
                Role::Assistant,
                vec![
                    Part::text("Action: calc__add\nAction Input: {\"a\":\"2\",\"b\":\"3\"}"),
                    call("react_1_0", "calc__add", json!({"a": "2", "b": "3"})),
                ],
            ),
            answered("react_1_0", "5"),
        ];
        let p = prompt(&steps, &tools());
        assert_eq!(p.len(), 4);
        let system = p[0].text();
        assert!(
            system.starts_with("Be brief.\n\nYou can use tools"),
            "{system}"
        );
        assert!(
            system.contains("- calc__add: Adds two numbers.")
                && system.contains("\"required\":[\"a\",\"b\"]"),
            "{system}"
        );
        assert!(system.contains("Final Answer:") && system.contains("one of [calc__add, search]"));
        assert_eq!(p[2].role, Role::Assistant);
        assert!(p[2].tool_calls().is_empty(), "no native call is sent");
        assert_eq!(
            (p[3].role, p[3].text().as_str()),
            (Role::User, "Observation: 5")
        );
        let two = observation(&[
            ("a".into(), "1".into(), false),
            ("b".into(), "down".into(), true),
        ]);
        assert_eq!(two, "Observation:\n- a: 1\n- b: error from b: down");
    }

    #[test]
    fn the_stop_parameter_gets_observation() {
        use crate::format::{self, Format, ModelConfiguration, RequestOptions};
        let mut m = ModelConfiguration::new(&format::openai_chat::OpenAiChat, "m");
        m.set_parameter("stop", json!(["A", "B", "C", "D"]))
            .unwrap();
        let options = RequestOptions {
            stop: &[OBSERVATION],
            ..RequestOptions::default()
        };
        let body = m.prepare(&[Message::user("hi")], &options).unwrap().body;
        assert_eq!(body["stop"], json!(["A", "B", "C", OBSERVATION]));
        let t = format::http_template::HttpTemplate;
        assert_eq!(
            format::parameters::stop_parameter(t.spec().parameters),
            None
        );
    }
}
