//! `[serve]`: how `genai serve` runs (its models, roots, metrics, shutdown, and the Redis its
//! keys' rates are counted in), and how `ask` and `chat` use a running one.
//!
//! It owns these settings' shape; it must never act on them (the server and the gateway do).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::serve_models;

/// `[serve]`: `genai serve`, as the other commands use it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    /// Whether `genai ask` and `genai chat` send their local-model requests to a running
    /// `genai serve` of this user that runs the same model file, so it is not loaded again
    /// (default true; `--no-connect` turns it off for one command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect: Option<bool>,
    /// Model names the gateway's clients may send, each resolved to an agent or
    /// `PROVIDER:MODEL`: `[serve.models] "claude-sonnet-4-5" = "local"`, or shared by several
    /// deployments: `[serve.models.NAME] deployments = [...]`. A name may be a
    /// pattern with `*` wildcards (`"claude-*" = "myagent"`); an exact name wins over a
    /// pattern, a longer pattern over a shorter one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, serve_models::ServeModel>,
    /// The folders within which `genai serve`'s WebSocket clients (the web page, `genai daemon
    /// --connect`) may root a conversation (its `cwd`, where its workspace tools work): absolute
    /// paths, `~/` for the home folder. A `cwd` outside all of them (after `..` and symbolic
    /// links are resolved) is refused. Default: the folder the serve was started in (a systemd
    /// unit's `WorkingDirectory=`). Stdio clients of `genai daemon` are not limited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<String>,
    /// The bearer token `/metrics` takes instead of the serve token (for a Prometheus that
    /// should not hold the serve token); the environment's `GENAI_METRICS_TOKEN` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_token: Option<String>,
    /// An address where `/metrics` is served alone and without a token (`127.0.0.1:9464`, or
    /// a private network's address); the main address's `/metrics` then still takes a token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_address: Option<String>,
    /// Seconds `genai serve` lets requests and streams in flight finish after SIGTERM or
    /// Ctrl-C before it cancels them (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown_grace: Option<f64>,
    /// A Redis (`redis://[:PASSWORD@]HOST:PORT/DB`) where the virtual keys' rpm and tpm are
    /// counted, so every replica of a fleet counts the same requests; without it each replica
    /// counts its own. The environment's `GENAI_REDIS_URL` wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_url: Option<String>,
    /// When Redis cannot be reached: `true` lets keys' requests pass uncounted, `false` (the
    /// default) refuses a key with a rate limit (503) at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_fail_open: Option<bool>,
}
