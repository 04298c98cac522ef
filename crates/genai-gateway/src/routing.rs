//! The router of one `[serve.models.NAME]` with deployments: which deployment takes a
//! request's next try, by the name's strategy (weighted at random, least busy, lowest
//! latency), and what each deployment's past says: its requests in flight, the moving average
//! of its time to first token, and until when it is cooling down after a failure. One router
//! per name, shared by every request of a `genai serve` process (nothing is shared between
//! processes), and its counters for whoever reports them ([`Routes::counters`]).
//!
//! It owns that choice and that state. It must never send a request nor decide which failure
//! cools a deployment down (the tries do, with the core's `falls_back`), and never hold its
//! lock across an await.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use genai_core::config::serve_models::{Deployments, ServeModel, Strategy};
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::select::ModelChoice;
use genai_core::session::Framework;

/// How much a new time to first token weighs in its moving average.
const SMOOTHING: f64 = 0.3;

/// One deployment as the router knows it.
#[derive(Debug)]
pub(crate) struct Deployment {
    /// Its agent or `PROVIDER:MODEL`, as `genai ask -m` takes it.
    pub(crate) name: String,
    weight: f64,
}

/// What the router has seen of one deployment.
#[derive(Debug, Default, Clone)]
struct Seen {
    in_flight: u32,
    /// Moving average of its time to first token (a whole reply's latency), in seconds.
    latency: Option<f64>,
    cooling_until: Option<Instant>,
    /// When it was last chosen (a count of choices): ties go to the one chosen longest ago.
    last_chosen: u64,
    counters: Counters,
}

/// What a deployment did, for whoever reports it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counters {
    /// Tries it was given.
    pub(crate) tries: u64,
    /// Of those, tries of a request another deployment had failed.
    pub(crate) retries: u64,
    /// Times it failed and was left out for a while.
    pub(crate) cooldowns: u64,
}

/// One deployment's counters and state, as [`Routes::counters`] lists them.
#[derive(Debug, Clone, PartialEq)]
#[allow(dead_code)] // read by the serve's metrics
pub(crate) struct DeploymentCounters {
    pub(crate) model: String,
    pub(crate) deployment: String,
    pub(crate) in_flight: u32,
    pub(crate) counters: Counters,
}

/// Why no deployment can take a try.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoDeployment {
    /// Every deployment not tried yet is cooling down; the first is back after this long.
    Cooling(Duration),
    /// Every deployment was tried.
    AllTried,
}

/// The router of one name.
#[derive(Debug)]
pub(crate) struct Router {
    pub(crate) name: String,
    strategy: Strategy,
    cooldown: Duration,
    /// Tries after the first.
    pub(crate) retries: usize,
    pub(crate) deadline: Duration,
    pub(crate) deployments: Vec<Deployment>,
    seen: Mutex<(u64, Vec<Seen>)>,
}

impl Router {
    pub(crate) fn new(name: &str, d: &Deployments) -> Router {
        let deployments: Vec<Deployment> = d
            .deployments
            .iter()
            .map(|one| Deployment {
                name: one.name().to_string(),
                weight: f64::from(one.weight().max(1)),
            })
            .collect();
        let n = deployments.len();
        Router {
            name: name.to_string(),
            strategy: d.strategy,
            cooldown: d.cooldown(),
            retries: d.retries.map_or(n.saturating_sub(1), |r| r as usize),
            deadline: d.deadline(),
            seen: Mutex::new((0, vec![Seen::default(); n])),
            deployments,
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, (u64, Vec<Seen>)> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Chooses the deployment of a request's next try among those not `tried` yet and not
    /// cooling down at `now`; `random` (in `[0, 1)`) draws a weighted choice. The chosen one
    /// counts one more request in flight until its [`Lease`] is dropped.
    pub(crate) fn choose(
        self: &Arc<Self>,
        tried: &[bool],
        now: Instant,
        random: f64,
    ) -> std::result::Result<Lease, NoDeployment> {
        let mut guard = self.seen();
        let (clock, seen) = &mut *guard;
        let open: Vec<usize> = (0..self.deployments.len())
            .filter(|i| !tried.get(*i).copied().unwrap_or(false))
            .collect();
        let ready: Vec<usize> = open
            .iter()
            .copied()
            .filter(|i| seen[*i].cooling_until.is_none_or(|t| t <= now))
            .collect();
        if ready.is_empty() {
            return Err(open
                .iter()
                .filter_map(|i| seen[*i].cooling_until)
                .min()
                .map_or(NoDeployment::AllTried, |t| {
                    NoDeployment::Cooling(t.saturating_duration_since(now))
                }));
        }
        let weight = |i: usize| self.deployments[i].weight;
        let chosen = match self.strategy {
            Strategy::Weighted => weighted(&ready, weight, random),
            Strategy::LeastBusy => least(&ready, seen, |i, s| f64::from(s.in_flight) / weight(i)),
            // Those not measured yet come first, so that each is measured.
            Strategy::LowestLatency => least(&ready, seen, |_, s| s.latency.unwrap_or(-1.0)),
        };
        *clock += 1;
        let s = &mut seen[chosen];
        s.last_chosen = *clock;
        s.in_flight += 1;
        s.counters.tries += 1;
        if tried.iter().any(|t| *t) {
            s.counters.retries += 1;
            super::metrics::retried(&self.name, &self.deployments[chosen].name);
        }
        Ok(Lease {
            router: self.clone(),
            index: chosen,
            started: now,
        })
    }

    /// Every deployment's counters.
    pub(crate) fn counters(&self) -> Vec<DeploymentCounters> {
        let guard = self.seen();
        self.deployments
            .iter()
            .zip(&guard.1)
            .map(|(d, s)| DeploymentCounters {
                model: self.name.clone(),
                deployment: d.name.clone(),
                in_flight: s.in_flight,
                counters: s.counters,
            })
            .collect()
    }
}

/// The one of `ready` a draw `random` in `[0, 1)` falls on, each in proportion to its weight.
fn weighted(ready: &[usize], weight: impl Fn(usize) -> f64, random: f64) -> usize {
    let total: f64 = ready.iter().map(|i| weight(*i)).sum();
    let mut left = random.clamp(0.0, 1.0) * total;
    for &i in ready {
        left -= weight(i);
        if left < 0.0 {
            return i;
        }
    }
    ready[ready.len() - 1]
}

/// The one of `ready` with the lowest `score`; of equal scores, the one chosen longest ago.
fn least(ready: &[usize], seen: &[Seen], score: impl Fn(usize, &Seen) -> f64) -> usize {
    ready
        .iter()
        .copied()
        .min_by(|a, b| {
            score(*a, &seen[*a])
                .total_cmp(&score(*b, &seen[*b]))
                .then(seen[*a].last_chosen.cmp(&seen[*b].last_chosen))
        })
        .unwrap_or(ready[0])
}

/// A try's hold on its deployment: one request in flight there until it is dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    router: Arc<Router>,
    pub(crate) index: usize,
    started: Instant,
}

impl Lease {
    /// The deployment's name (its agent or `PROVIDER:MODEL`).
    pub(crate) fn deployment(&self) -> &str {
        &self.router.deployments[self.index].name
    }

    /// The first piece of the answer came (or the whole answer, not streamed), at `now`: its
    /// time goes into the deployment's moving average.
    pub(crate) fn answering(&self, now: Instant) {
        let took = now.saturating_duration_since(self.started).as_secs_f64();
        let mut guard = self.router.seen();
        let s = &mut guard.1[self.index];
        s.latency = Some(match s.latency {
            Some(avg) => avg + SMOOTHING * (took - avg),
            None => took,
        });
    }

    /// The deployment failed at `now` as `e` says: it is left out for the router's cooldown,
    /// or for as long as its provider asked (`Retry-After`) when that is longer.
    pub(crate) fn failed(&self, e: &Error, now: Instant) {
        let wait = self.router.cooldown.max(e.retry_after.unwrap_or_default());
        if !wait.is_zero() {
            let mut guard = self.router.seen();
            let s = &mut guard.1[self.index];
            s.counters.cooldowns += 1;
            super::metrics::cooled_down(self.deployment());
            let until = now + wait;
            s.cooling_until = Some(s.cooling_until.map_or(until, |t| t.max(until)));
        }
        tracing::info!(
            "model {}: deployment {} failed and is left out for {:.1} s: {}",
            self.router.name,
            self.deployment(),
            wait.as_secs_f64(),
            e.message
        );
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut guard = self.router.seen();
        let s = &mut guard.1[self.index];
        s.in_flight = s.in_flight.saturating_sub(1);
    }
}

/// The routers of a serve, by the name of their `[serve.models]` entry.
#[derive(Debug, Default)]
pub(crate) struct Routes(HashMap<String, Arc<Router>>);

impl Routes {
    /// A router for each entry of `[serve.models]` with deployments, each deployment's agent
    /// or model checked as `genai ask -m` takes it: one that names nothing stops the serve.
    pub(crate) fn new(fw: &Framework) -> Result<Routes> {
        let mut routes = HashMap::new();
        for (name, entry) in &fw.config().serve.models {
            let ServeModel::Deployments(d) = entry else {
                continue;
            };
            for one in &d.deployments {
                let refused = |why: String| {
                    Error::new(
                        ErrorKind::Config,
                        format!(
                            "serve.models.\"{name}\": deployment `{}`: {why}",
                            one.name()
                        ),
                    )
                };
                if let Some(agent) = &one.agent {
                    if !fw.config().agents.contains_key(agent) {
                        return Err(refused(format!(
                            "no agent `{agent}` in [agents] (agents: {})",
                            genai_core::error::known(fw.config().agents.keys())
                        )));
                    }
                }
                fw.selector()
                    .select(&ModelChoice::Named(one.name().to_string()))
                    .map_err(|e| refused(e.message))?;
            }
            routes.insert(name.clone(), Arc::new(Router::new(name, d)));
        }
        Ok(Routes(routes))
    }

    /// The router of the `[serve.models]` entry `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<Router>> {
        self.0.get(name)
    }

    /// Every deployment's counters, by model name and deployment.
    #[allow(dead_code)] // for the serve's metrics, which read them
    pub(crate) fn counters(&self) -> Vec<DeploymentCounters> {
        let mut all: Vec<_> = self.0.values().flat_map(|r| r.counters()).collect();
        all.sort_by(|a, b| (&a.model, &a.deployment).cmp(&(&b.model, &b.deployment)));
        all
    }
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
