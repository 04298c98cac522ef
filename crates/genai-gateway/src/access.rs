//! Who may use the gateway: the serve token or a live virtual key, as `Authorization: Bearer`
//! or `x-api-key`, within the key's budget and rate; else the refusal in the route's API shape
//! (401 without a valid key, 429 over a budget or a rate, with `retry-after` for a rate). A
//! watcher loads the keys again when another process changed the history (SQLite's
//! `data_version`, read every [`keys::RELOAD_EVERY`]), so a key created or revoked by the CLI
//! counts while `genai serve` runs. On a shared store (`[store] url`, [`SharedState`]) each
//! request reads its key there instead, with what it has spent, so every replica agrees at
//! once; a store that does not answer is a 503 at once.
//!
//! It owns the decision on a request's headers, and once the body is read, the choice of its
//! model ([`choose`]: an alias resolved, the key's models enforced). It must never log, store
//! or echo a key, and never read SQLite on a request's path but for a rate-limited reload on
//! an unknown key, nor accept a key of the SQLite history when the serve is on a shared store.

use std::sync::{Arc, Weak};

use crate::HttpResponse;

use super::keys::{self, Keys, Refusal};
use super::ledger::{api_of, Caller, Ledger};
use super::rate::{Counter, OverRate};
use super::routing::{Router, Routes};
use super::shared::SharedState;
use super::{aliases, Api, ApiError};
use genai_core::config::serve_models::ServeModel;
use genai_core::error::{Error, Result};
use genai_core::select::ModelChoice;
use genai_core::session::{Framework, RequestModel};
use genai_core::store::Store;

/// Where the virtual keys are found.
enum KeySource {
    /// The SQLite history's, in memory (`keys.rs`).
    Local(Arc<Keys>),
    /// The shared store's, read per request; their rates counted by `counter`.
    Shared {
        state: Arc<dyn SharedState>,
        counter: Arc<Counter>,
    },
}

/// The gate of the gateway's routes.
pub struct Access {
    /// The serve token's SHA-256: a presented key is hashed once and compared as keys are.
    token: [u8; 32],
    keys: KeySource,
    ledger: Ledger,
    /// The routers of the `[serve.models]` entries with deployments.
    routes: Arc<Routes>,
}

impl Access {
    /// The keys of `fw`'s store loaded, its request writer and the keys' watcher started,
    /// a router made for each `[serve.models]` entry with deployments (one naming no agent or
    /// model `genai ask -m` takes is refused), and the keys' rates counted in Redis when
    /// `redis_url` (the environment's `GENAI_REDIS_URL`, else `[serve] redis_url`) names one.
    /// With `shared`, the keys and the ledger are the shared store's instead, and `fw`'s
    /// history keeps no gateway row.
    pub async fn start(
        fw: &Framework,
        token: String,
        shared: Option<Arc<dyn SharedState>>,
    ) -> Result<Arc<Access>> {
        let routes = Arc::new(Routes::new(fw)?);
        let serve = &fw.config().serve;
        let redis_url = std::env::var("GENAI_REDIS_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .or_else(|| serve.redis_url.clone());
        let counter = Arc::new(match redis_url {
            Some(url) => Counter::redis(&url, serve.rate_limit_fail_open.unwrap_or(false))?,
            None => Counter::local(),
        });
        let (keys, ledger) = match shared {
            Some(state) => {
                super::metrics::watch_pool(&state);
                let ledger = Ledger::start_shared(state.clone());
                (KeySource::Shared { state, counter }, ledger)
            }
            None => {
                let store: Arc<Store> = fw.store().clone();
                let loading = store.clone();
                let keys = tokio::task::spawn_blocking(move || Keys::load(loading, counter))
                    .await
                    .map_err(|e| {
                        Error::internal(format!("loading the gateway's keys failed: {e}"))
                    })??;
                let keys = Arc::new(keys);
                tokio::spawn(watch(Arc::downgrade(&keys)));
                (KeySource::Local(keys), Ledger::start(store))
            }
        };
        // No reply, log or history shows the token, even a model's echo of it.
        genai_core::redact::remember(&token);
        Ok(Arc::new(Access {
            token: keys::hash(&token),
            keys,
            ledger,
            routes,
        }))
    }

    /// The live key whose hash is `hash`: from memory (the SQLite history's), or read now
    /// from the shared store; a shared store that fails is a 503.
    async fn find(&self, hash: &[u8; 32]) -> std::result::Result<Option<Arc<keys::Key>>, ApiError> {
        match &self.keys {
            KeySource::Local(keys) => Ok(keys.find_or_reload(hash).await),
            KeySource::Shared { state, counter } => match state.live_key(&keys::hex(hash)).await {
                Ok(found) => Ok(found.map(|(row, spent)| keys::Key::shared(row, spent, counter))),
                Err(e) => {
                    super::metrics::database_failed();
                    tracing::warn!("cannot read a gateway key: {}", e.message);
                    Err(unavailable())
                }
            },
        }
    }

    /// The caller of a request with these headers on `path`, or the refusal.
    pub async fn admit(
        &self,
        path: &str,
        authorization: Option<&str>,
        api_key: Option<&str>,
        user_agent: Option<&str>,
    ) -> std::result::Result<Caller, HttpResponse> {
        let api = Api::of_path(path);
        let bearer = authorization.and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        });
        let given: Vec<&str> = [bearer, api_key]
            .into_iter()
            .flatten()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect();
        let presented: Vec<[u8; 32]> = given.iter().map(|k| keys::hash(k)).collect();
        if presented.contains(&self.token) {
            return Ok(Caller::new(
                None,
                self.ledger.clone(),
                &self.routes,
                user_agent,
            ));
        }
        let Some(presented) = presented.first() else {
            return Err(ApiError::unauthorized().response_in(api));
        };
        let key = match self.find(presented).await {
            Ok(Some(key)) => key,
            Ok(None) => return Err(ApiError::unauthorized().response_in(api)),
            Err(e) => {
                let mut refused = e.response_in(api);
                refused
                    .headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1));
                return Err(refused);
            }
        };
        // A live virtual key is masked from now on wherever the serve prints or stores text.
        genai_core::redact::remember(given[0]);
        let refusal = match key.admit().await {
            Ok(()) => {
                return Ok(Caller::new(
                    Some(key),
                    self.ledger.clone(),
                    &self.routes,
                    user_agent,
                ))
            }
            Err(r) => r,
        };
        let name = &key.row.name;
        let (error, retry_after) = match refusal {
            Refusal::OverBudget { spent, budget } => (
                ApiError {
                    code: Some("insufficient_quota"),
                    ..ApiError::new(
                        http::StatusCode::TOO_MANY_REQUESTS,
                        "insufficient_quota",
                        format!(
                            "key {name} has spent ${spent:.4} of its ${budget:.4} budget (genai serve keys list)"
                        ),
                    )
                },
                None,
            ),
            Refusal::OverRate(over) => over_rate(name, over),
        };
        let mut response = error.response_in(api);
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(secs));
        }
        let mut caller = Caller::new(Some(key), self.ledger.clone(), &self.routes, user_agent);
        if let Some(recorded) = api_of(path.trim_end_matches('/')) {
            caller.recorded_as(recorded);
        }
        Err(caller.finish(response))
    }

    /// Whether the shared store answers at this binary's schema; `None` when the serve keeps
    /// its keys in the SQLite history.
    pub async fn shared_ready(&self) -> Option<Result<()>> {
        match &self.keys {
            KeySource::Shared { state, .. } => Some(state.ready().await),
            KeySource::Local(_) => None,
        }
    }

    /// Waits until every request's row queued so far is stored.
    pub async fn flush(&self) {
        self.ledger.flush().await;
    }
}

/// The refusal of key `name`'s request over one of its rates, with its `retry-after` seconds;
/// 503 when the rates cannot be counted.
fn over_rate(name: &str, over: OverRate) -> (ApiError, Option<u64>) {
    let secs = |d: std::time::Duration| (d.as_secs() + u64::from(d.subsec_nanos() > 0)).max(1);
    let limited = |message: String| ApiError {
        code: Some("rate_limit_exceeded"),
        ..ApiError::new(
            http::StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            message,
        )
    };
    match over {
        OverRate::Requests { rpm, retry_after } => {
            let secs = secs(retry_after);
            let message = format!(
                "key {name} made its {rpm} requests per minute (its rpm limit); retry in {secs} s"
            );
            (limited(message), Some(secs))
        }
        OverRate::Tokens { tpm, retry_after } => {
            let secs = secs(retry_after);
            let message = format!(
                "key {name} used its {tpm} tokens per minute (its tpm limit); retry in {secs} s"
            );
            (limited(message), Some(secs))
        }
        OverRate::Unavailable(why) => (
            ApiError {
                code: Some("rate_limits_unavailable"),
                ..ApiError::new(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "api_error",
                    format!("key {name}: {why}"),
                )
            },
            Some(1),
        ),
    }
}

/// The answer when the shared store does not answer: the serve is up, its state is not.
fn unavailable() -> ApiError {
    ApiError::new(
        http::StatusCode::SERVICE_UNAVAILABLE,
        "service_unavailable",
        "the gateway's shared store ([store] url) does not answer; retry shortly (this serve's /readyz says why)"
            .into(),
    )
}

/// What a request's model name stands for. The one model is the common case and moves once:
/// boxing it would add an allocation to every request.
#[allow(clippy::large_enum_variant)]
pub(super) enum Chosen {
    /// One model, chosen as `genai ask -m` chooses.
    Model(RequestModel),
    /// The deployments of a `[serve.models]` entry, each try's chosen by its router.
    Deployments(Arc<Router>),
}

/// The model of a request asking for `model`: an alias of `[serve.models]` resolved, refused
/// (403) when the caller's key may not use it, then chosen as `genai ask -m` chooses; or the
/// router of the entry's deployments (a key that may not use the name must be allowed each of
/// its deployments).
pub(super) fn choose(
    fw: &Framework,
    caller: &mut Caller,
    model: &str,
) -> std::result::Result<Chosen, ApiError> {
    caller.asked_for(model);
    let (resolved, router) = match aliases::resolve(&fw.config().serve.models, model) {
        Some((_, ServeModel::Alias(to))) => (Some(to.as_str()), None),
        Some((name, ServeModel::Deployments(_))) => (None, caller.routes().get(name).cloned()),
        None => (None, None),
    };
    if let Some(key) = caller.key() {
        let allowed = match &router {
            Some(r) => {
                key.allows(model, None)
                    || r.deployments
                        .iter()
                        .all(|d| key.allows(model, Some(&d.name)))
            }
            None => key.allows(model, resolved),
        };
        if !allowed {
            return Err(ApiError {
                code: Some("model_not_allowed"),
                ..ApiError::new(
                    http::StatusCode::FORBIDDEN,
                    "permission_error",
                    format!(
                        "key {} may not use model `{model}` (it may use: {})",
                        key.row.name,
                        key.row.models.join(", ")
                    ),
                )
            });
        }
    }
    if let Some(router) = router {
        return Ok(Chosen::Deployments(router));
    }
    let choice = ModelChoice::Named(resolved.unwrap_or(model).to_string());
    let chosen = fw.request_model(&choice).map_err(|e| {
        let mut refused = ApiError::of(&e, Some("model"));
        if e.kind == genai_core::error::ErrorKind::UnknownComponent {
            refused.message.push_str(&named_since_start(model));
        }
        refused
    })?;
    caller.chose(&chosen);
    Ok(Chosen::Model(chosen))
}

/// When the config file as it is now names `model` (an agent or an alias) though the serve's
/// config, read when it started, does not: the words telling the user to restart the serve.
/// Only a refused name pays for reading the file.
fn named_since_start(model: &str) -> String {
    let Ok(path) = genai_core::config::Paths::from_env().map(|p| p.config_file()) else {
        return String::new();
    };
    match genai_core::config::Config::load(&path) {
        Ok(now) if now.agents.contains_key(model) || now.serve.models.contains_key(model) => {
            // Not the file's path: a key's client need not learn the serve's folders.
            format!(
                "; genai's config names `{model}` now, but this serve read it when it started: restart the serve (`genai serve --stop`, then start it again)"
            )
        }
        _ => String::new(),
    }
}

/// Loads the keys again whenever another process committed to the history, checked every
/// [`keys::RELOAD_EVERY`] while the keys are in use.
async fn watch(keys: Weak<Keys>) {
    loop {
        tokio::time::sleep(keys::RELOAD_EVERY).await;
        let Some(keys) = keys.upgrade() else {
            return;
        };
        let checked = tokio::task::spawn_blocking(move || {
            if keys.changed()? {
                keys.reload()?;
            }
            Ok::<_, Error>(())
        })
        .await;
        match checked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("cannot load the gateway's keys: {}", e.message),
            Err(e) => tracing::warn!("loading the gateway's keys failed: {e}"),
        }
    }
}
