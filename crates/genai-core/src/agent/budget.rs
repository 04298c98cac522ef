//! The budget of an unattended run (`genai ask --max-steps/--max-cost/--max-time`): how many
//! rounds of tool calls, how many US dollars and how much time one turn may take before it
//! stops cleanly, its last reply taken as final and the turn stored like any other.
//!
//! It owns the limits and the check between two rounds. It must never cancel work in flight
//! (a round that started finishes: a hard stop is `--timeout`, which stores nothing) and never
//! guess a cost: a run with a cost limit needs the model's price, refused up front otherwise.

use std::time::{Duration, Instant};

/// The limits of one turn; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Rounds of tool calls.
    pub max_steps: Option<usize>,
    /// US dollars, every request of the turn added up.
    pub max_cost: Option<f64>,
    /// Time since the turn started.
    pub max_time: Option<Duration>,
}

/// Which limit stopped a turn, and where the turn stood.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetReached {
    Steps { max: usize },
    Cost { spent: f64, max: f64 },
    Time { elapsed: Duration, max: Duration },
}

impl BudgetReached {
    /// The flag that set the limit, as the event stream and `--json` name it.
    pub fn name(&self) -> &'static str {
        match self {
            BudgetReached::Steps { .. } => "max-steps",
            BudgetReached::Cost { .. } => "max-cost",
            BudgetReached::Time { .. } => "max-time",
        }
    }

    /// One line saying what stopped the turn.
    pub fn describe(&self) -> String {
        match self {
            BudgetReached::Steps { max } => {
                format!("budget reached: {max} rounds of tool calls (--max-steps {max})")
            }
            BudgetReached::Cost { spent, max } => {
                format!("budget reached: ${spent:.4} spent of ${max:.4} (--max-cost {max})")
            }
            BudgetReached::Time { elapsed, max } => format!(
                "budget reached: {:.1} s of {:.1} s (--max-time {}s)",
                elapsed.as_secs_f64(),
                max.as_secs_f64(),
                max.as_secs_f64()
            ),
        }
    }
}

impl Budget {
    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        self.max_steps.is_some() || self.max_cost.is_some() || self.max_time.is_some()
    }

    /// The cost or time limit the turn has reached before another round, if any: `spent` is
    /// what its requests cost so far (`None`: unknown), `started` when it began.
    pub(crate) fn reached(&self, spent: Option<f64>, started: Instant) -> Option<BudgetReached> {
        if let (Some(max), Some(spent)) = (self.max_cost, spent) {
            if spent >= max {
                return Some(BudgetReached::Cost { spent, max });
            }
        }
        let elapsed = started.elapsed();
        match self.max_time {
            Some(max) if elapsed >= max => Some(BudgetReached::Time { elapsed, max }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_is_checked_before_time_and_an_unknown_cost_reaches_no_cost_limit() {
        let long_ago = Instant::now() - Duration::from_secs(10);
        let b = Budget {
            max_steps: None,
            max_cost: Some(0.5),
            max_time: Some(Duration::from_secs(5)),
        };
        assert_eq!(
            b.reached(Some(0.6), long_ago),
            Some(BudgetReached::Cost {
                spent: 0.6,
                max: 0.5
            })
        );
        let timed = b.reached(None, long_ago).unwrap();
        assert_eq!(timed.name(), "max-time");
        assert!(
            timed.describe().contains("of 5.0 s"),
            "{}",
            timed.describe()
        );
        assert_eq!(b.reached(Some(0.1), Instant::now()), None);
        assert!(!Budget::default().is_limited());
        assert_eq!(Budget::default().reached(Some(1e9), long_ago), None);
    }
}
