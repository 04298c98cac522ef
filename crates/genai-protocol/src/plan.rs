//! A plan: the steps the model means to take, as its `plan` tool gives them (the shape of
//! ACP's `plan` session update and Codex's `update_plan`). The stream-json `plan` event, the
//! daemon's `OnPlan` notification and the tool's arguments all carry these entries.
//!
//! It owns the shape of one entry only; it must never check or show a plan (the workspace's
//! `plan` tool checks it, each front-end shows it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanEntry {
    /// What the step does, for people.
    pub content: String,
    /// Whether it is done.
    pub status: PlanStatus,
    /// How much it matters, when the model says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<PlanPriority>,
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// How much a step matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}
