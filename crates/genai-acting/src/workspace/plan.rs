//! The workspace's `plan` tool: the model sets out the steps it means to take, or updates
//! their statuses as it works (the shape of ACP's plan entries and Codex's `update_plan`).
//! Every call gives the whole plan; the call and its answer are kept in the history like any
//! tool call, so a later turn (`genai ask -c --mode edit "go"`) finds the last plan there.
//!
//! It owns the tool's row, the check of its arguments and the answer the model reads. It must
//! never show a plan (each front-end does, from the turn's plan event) nor touch a file.

use serde::Deserialize;
use serde_json::{json, Value};

use genai_base::error::{Error, Result};
use genai_base::tool::Tool;
use genai_protocol::plan::{PlanEntry, PlanStatus};

/// The tool's name in the workspace source.
pub const NAME: &str = "plan";

/// The most steps a plan may have.
const MAX_ENTRIES: usize = 100;

/// The most characters of a step's text.
const MAX_CONTENT_CHARS: usize = 2_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanArgs {
    entries: Vec<PlanEntry>,
}

/// The tool's row.
pub fn tool() -> Tool {
    super::tool(
        NAME,
        "Set out your plan as a list of steps, or update it as you work: give the whole list \
         every time, each step with its status (pending, in_progress, completed) and, if it \
         helps, a priority (high, medium, low). Keep one step in_progress at a time and mark \
         each step completed as soon as it is done.",
        true,
        json!({"type": "object", "properties": {
            "entries": {"type": "array", "minItems": 1, "maxItems": MAX_ENTRIES, "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "description": "What the step does."},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                    "priority": {"type": "string", "enum": ["high", "medium", "low"]}
                },
                "required": ["content", "status"],
                "additionalProperties": false
            }}
        }, "required": ["entries"], "additionalProperties": false}),
    )
}

/// The plan a call gives, checked: at least one step, each with some text, within the caps.
pub fn entries(arguments: &Value) -> Result<Vec<PlanEntry>> {
    let a: PlanArgs = super::args(NAME, arguments)?;
    if a.entries.is_empty() {
        return Err(Error::invalid_params(
            "a plan needs at least one step in `entries`",
        ));
    }
    if a.entries.len() > MAX_ENTRIES {
        return Err(Error::invalid_params(format!(
            "a plan has at most {MAX_ENTRIES} steps; this one has {}: merge some",
            a.entries.len()
        )));
    }
    for (i, e) in a.entries.iter().enumerate() {
        if e.content.trim().is_empty() {
            return Err(Error::invalid_params(format!(
                "step {} of the plan has no text: say what it does in `content`",
                i + 1
            )));
        }
        if e.content.chars().count() > MAX_CONTENT_CHARS {
            return Err(Error::invalid_params(format!(
                "step {} of the plan is longer than {MAX_CONTENT_CHARS} characters: say it shorter",
                i + 1
            )));
        }
    }
    Ok(a.entries)
}

/// What the model reads back: how many steps stand where.
pub fn answer(entries: &[PlanEntry]) -> String {
    let count = |s: PlanStatus| entries.iter().filter(|e| e.status == s).count();
    format!(
        "Plan recorded: {} steps ({} completed, {} in progress, {} pending).",
        entries.len(),
        count(PlanStatus::Completed),
        count(PlanStatus::InProgress),
        count(PlanStatus::Pending)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use genai_protocol::plan::PlanPriority;

    #[test]
    fn a_plan_is_read_with_its_statuses_and_priorities() {
        let args = json!({"entries": [
            {"content": "Read the parser", "status": "completed"},
            {"content": "Fix the off-by-one", "status": "in_progress", "priority": "high"},
            {"content": "Add a test", "status": "pending"}
        ]});
        let got = entries(&args).unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].status, PlanStatus::InProgress);
        assert_eq!(got[1].priority, Some(PlanPriority::High));
        assert_eq!(
            answer(&got),
            "Plan recorded: 3 steps (1 completed, 1 in progress, 1 pending)."
        );
    }

    #[test]
    fn a_bad_plan_is_refused_saying_what_to_fix() {
        let cases = [
            (json!({"entries": []}), "at least one step"),
            (
                json!({"entries": [{"content": " ", "status": "pending"}]}),
                "step 1",
            ),
            (
                json!({"entries": [{"content": "x", "status": "done"}]}),
                "bad arguments",
            ),
            (json!({"steps": []}), "bad arguments"),
        ];
        for (args, says) in cases {
            let e = entries(&args).unwrap_err();
            assert!(e.message.contains(says), "{args}: {}", e.message);
        }
        let long = json!({"entries": [{"content": "x".repeat(MAX_CONTENT_CHARS + 1), "status": "pending"}]});
        assert!(entries(&long).unwrap_err().message.contains("shorter"));
    }
}
