//! A plan as the terminal shows it: a checklist on stderr, one step a line, `[ ]` pending,
//! `[~]` in progress, `[x]` completed (the priority after a high or low step).
//!
//! It owns the checklist's text only; it must never write it (`turn.rs` does, beside the
//! reply) nor judge a plan.

use genai_protocol::plan::{PlanEntry, PlanPriority, PlanStatus};

/// The checklist of a plan, ending with a line break.
pub fn checklist(entries: &[PlanEntry]) -> String {
    let mut text = String::from("Plan:\n");
    for e in entries {
        let mark = match e.status {
            PlanStatus::Pending => "[ ]",
            PlanStatus::InProgress => "[~]",
            PlanStatus::Completed => "[x]",
        };
        let priority = match e.priority {
            Some(PlanPriority::High) => " (high)",
            Some(PlanPriority::Low) => " (low)",
            Some(PlanPriority::Medium) | None => "",
        };
        // One step, one line: a model's line breaks would break the checklist.
        let content = e.content.split_whitespace().collect::<Vec<_>>().join(" ");
        text.push_str(&format!("  {mark} {content}{priority}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: &str, status: PlanStatus, priority: Option<PlanPriority>) -> PlanEntry {
        PlanEntry {
            content: content.to_string(),
            status,
            priority,
        }
    }

    #[test]
    fn each_status_has_its_box_and_a_step_stays_on_one_line() {
        let plan = [
            entry("Read the parser", PlanStatus::Completed, None),
            entry(
                "Fix the\noff-by-one",
                PlanStatus::InProgress,
                Some(PlanPriority::High),
            ),
            entry(
                "Add a test",
                PlanStatus::Pending,
                Some(PlanPriority::Medium),
            ),
        ];
        assert_eq!(
            checklist(&plan),
            "Plan:\n  [x] Read the parser\n  [~] Fix the off-by-one (high)\n  [ ] Add a test\n"
        );
    }
}
