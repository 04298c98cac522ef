//! An instance of an HTTP kind: what every one has (its row of the kinds table, its name, base
//! URL, key, configured headers and transport) and the plain exchange: POST the format's body
//! to the route's URL with the kind's key, and hand the answer to the transport to frame. A
//! kind that differs says how in its `Hooks`, in its own file.
//!
//! It owns building and sending that request. It must never read a body (formats do), retry
//! or frame an answer itself (`http` does), nor put a key in a URL, a log line or an error.

use std::borrow::Cow;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::RequestBuilder;
use serde_json::Value;

use super::http::Http;
use super::kinds::{Auth, HttpKind, Route};
use super::lazy_key::LazyKey;
use super::{KeyStatus, ProviderResponse, ServiceProvider};
use crate::config::HttpSettings;
use crate::embedding::Embeddings;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{Body, ModelRequest};
use crate::secrets::{KeySource, Secret};

/// What every instance of an HTTP kind has.
pub(crate) struct Endpoint {
    pub(crate) kind: &'static HttpKind,
    pub(crate) name: String,
    /// Trimmed, without a trailing `/`. Empty for a Bedrock instance without `base_url`, whose
    /// endpoint is found per request.
    pub(crate) base_url: String,
    pub(crate) key: LazyKey,
    /// The kind's well-known key variable when this instance does not read it (its base URL
    /// is another server's), named in the error that says how to give it a key.
    pub(crate) withheld_key_env: Option<&'static str>,
    /// The first model the server lists, asked once when no default model is known (the
    /// reason as text when it could not be had).
    pub(crate) listed_model: OnceLock<std::result::Result<String, String>>,
    /// The configured headers, sent with every request.
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) default_model: Option<String>,
    pub(crate) http: Http,
    /// The last key status a listing found, and when (see [`KEY_STATUS_TTL`]).
    key_status: Mutex<Option<(Instant, KeyStatus)>>,
    /// The last request URL, parsed: most instances send every request to one URL, and
    /// parsing it again was a fortieth of a gateway request's work.
    parsed_url: Mutex<Option<(String, reqwest::Url)>>,
}

/// How long a listing's key status is reused: the key file and the keyring are read at most
/// this often per instance however often clients list (a flood of `ListComponents` must not
/// become a flood of D-Bus calls on the daemon's thread); a key stored meanwhile shows within
/// this time.
const KEY_STATUS_TTL: Duration = Duration::from_secs(5);

/// One request on its way: the instance's endpoint, the route of its format, the request.
pub(crate) struct Call<'a> {
    pub(crate) endpoint: &'a Endpoint,
    pub(crate) route: &'static Route,
    pub(crate) request: &'a ModelRequest,
}

/// One request, ready to send.
pub struct Prepared<'a> {
    /// Without credentials: it is shown in errors.
    pub(crate) url: String,
    pub(crate) body: Cow<'a, Body>,
    /// The kind's own headers; each replaces a configured header of the same name.
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// Where a kind's exchange differs from the plain one. Each method's default is the plain
/// behaviour.
#[async_trait]
pub(crate) trait Hooks: Send + Sync {
    /// The URL, body and headers of a request.
    fn prepare<'a>(&self, call: &Call<'a>) -> Result<Prepared<'a>> {
        Ok(Prepared {
            url: call.url(&call.endpoint.base_url)?,
            body: Cow::Borrowed(&call.request.body),
            headers: Vec::new(),
        })
    }

    /// Sends a request and brings the answer back.
    async fn send(&self, call: &Call<'_>) -> Result<ProviderResponse> {
        call.send(self.prepare(call)?).await
    }

    /// Whether the instance has the credentials it needs: the kind's key when it requires
    /// one. Blocking (the keyring); for listings.
    fn key_status(&self, endpoint: &Endpoint) -> KeyStatus {
        if !endpoint.key_required() {
            KeyStatus::NotNeeded
        } else if endpoint.key.source().has_key() {
            KeyStatus::Found
        } else {
            KeyStatus::Missing
        }
    }
}

/// The plain exchange, for a kind its table row says everything about.
pub(crate) struct Plain;

impl Hooks for Plain {}

/// A configured HTTP transport: its endpoint and its kind's hooks.
pub(crate) struct HttpProvider {
    endpoint: Endpoint,
    hooks: Box<dyn Hooks>,
}

impl HttpProvider {
    pub(crate) fn new(endpoint: Endpoint, hooks: impl Hooks + 'static) -> HttpProvider {
        HttpProvider {
            endpoint,
            hooks: Box::new(hooks),
        }
    }

    /// An instance whose base URL is found the usual way ([`base_url`]).
    pub(crate) fn from_settings(
        kind: &'static HttpKind,
        name: &str,
        s: &HttpSettings,
        hooks: impl Hooks + 'static,
    ) -> Result<HttpProvider> {
        let base = base_url(kind, name, s)?.ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!(
                    "service_providers.{name}: the {} kind needs `base_url`",
                    kind.name
                ),
            )
        })?;
        Ok(HttpProvider::new(
            Endpoint::new(kind, name, s, base)?,
            hooks,
        ))
    }

    #[cfg(test)]
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    #[cfg(test)]
    pub(crate) fn hooks(&self) -> &dyn Hooks {
        self.hooks.as_ref()
    }
}

#[async_trait]
impl ServiceProvider for HttpProvider {
    fn kind(&self) -> &'static str {
        self.endpoint.kind.name
    }

    fn name(&self) -> &str {
        &self.endpoint.name
    }

    fn default_model(&self) -> Option<&str> {
        let e = &self.endpoint;
        e.default_model
            .as_deref()
            .or_else(|| e.listed_model.get()?.as_deref().ok())
    }

    /// Another server speaking the kind's API (`other_server`) without a configured
    /// `default_model` runs the first model it lists.
    fn resolve_default_model(&self) -> Result<String> {
        if let Some(m) = self.default_model() {
            return Ok(m.to_string());
        }
        let e = &self.endpoint;
        let Some(path) = e.kind.models_path.filter(|_| e.other_server()) else {
            return Err(super::no_default_model(&e.name, None));
        };
        e.listed_model
            .get_or_init(|| e.first_listed_model(path))
            .clone()
            .map_err(|why| super::no_default_model(&e.name, Some(&why)))
    }

    fn vendor_prices(&self) -> bool {
        !self.endpoint.other_server()
    }

    fn max_reply_tokens(&self) -> Option<u64> {
        Some(self.endpoint.http.limits().reply_tokens)
    }

    fn key_status(&self) -> KeyStatus {
        let mut cached = self.endpoint.key_status.lock().unwrap();
        match *cached {
            Some((at, status)) if at.elapsed() < KEY_STATUS_TTL => status,
            _ => {
                let status = self.hooks.key_status(&self.endpoint);
                *cached = Some((Instant::now(), status));
                status
            }
        }
    }

    fn max_image_bytes(&self) -> Option<usize> {
        if self.endpoint.other_server() {
            return None;
        }
        self.endpoint.kind.max_image_bytes
    }

    async fn send_request(&self, request: &ModelRequest) -> Result<ProviderResponse> {
        let call = Call {
            endpoint: &self.endpoint,
            route: self.endpoint.kind.route(request.format)?,
            request,
        };
        self.hooks.send(&call).await
    }

    async fn embed(&self, request: &crate::embedding::EmbedRequest) -> Result<Embeddings> {
        super::embed::send(&self.endpoint, self.hooks.as_ref(), request).await
    }
}

/// The base URL from `base_url`, else the kind's variable, else its default, checked; `None`
/// when none of them gives one.
pub(crate) fn base_url(kind: &HttpKind, name: &str, s: &HttpSettings) -> Result<Option<String>> {
    s.base_url
        .clone()
        .or_else(|| kind.base_url_env.and_then(env))
        .or_else(|| kind.default_base_url.map(str::to_string))
        .map(|url| checked_url(name, &url))
        .transpose()
}

/// A base URL trimmed, without a trailing `/`, and parsed.
pub(crate) fn checked_url(name: &str, url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/').to_string();
    reqwest::Url::parse(&url).map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("service_providers.{name}.base_url `{url}` is not a URL: {e}"),
        )
    })?;
    Ok(url)
}

/// Whether an instance may read its kind's well-known key variables (`OPENAI_API_KEY`...):
/// only when it goes where the kind's well-known variables point, that is when `base_url` is
/// not configured (the kind's base URL variable, else its default), or is configured to the
/// kind's default or to that variable's URL. A key never goes to a server its user did not
/// pair it with.
pub(crate) fn takes_well_known_key(kind: &HttpKind, s: &HttpSettings) -> bool {
    let Some(configured) = &s.base_url else {
        return true;
    };
    let same = |url: &str| {
        let norm = |u: &str| u.trim().trim_end_matches('/').to_ascii_lowercase();
        norm(url) == norm(configured)
    };
    kind.default_base_url.is_some_and(same)
        || kind.base_url_env.and_then(env).is_some_and(|u| same(&u))
        || own_host(kind, configured)
}

/// Whether `url` is an https URL on one of the vendor's own hosts (`kind.own_hosts`).
fn own_host(kind: &HttpKind, url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(url.trim()) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    url.scheme() == "https" && kind.own_hosts.iter().any(|suffix| host.ends_with(suffix))
}

/// The variable an instance reads its key from first: `api_key_env`, else the kind's
/// well-known one (or its fallback, when only that one is set) where
/// `takes_well_known_key` allows it.
pub fn key_env(kind: &HttpKind, s: &HttpSettings) -> Option<String> {
    if let Some(var) = &s.api_key_env {
        return Some(var.clone());
    }
    if !takes_well_known_key(kind, s) {
        return None;
    }
    let fallback = kind
        .fallback_key_env
        .filter(|f| kind.key_env.and_then(env).is_none() && env(f).is_some());
    fallback.or(kind.key_env).map(str::to_string)
}

/// Whether `base_url` is not the kind's own service but another server speaking its API.
fn other_server(kind: &HttpKind, base_url: &str) -> bool {
    kind.compatible_servers && Some(base_url) != kind.default_base_url
}

/// An environment variable's value, unless unset or blank.
pub(crate) fn env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// Whether a URL's last segment names an API version (`v1`, `v1beta`, ...).
fn names_version(url: &str) -> bool {
    let last = url.rsplit('/').next().unwrap_or_default();
    last.starts_with("v1") && last[2..].chars().all(|c| c.is_ascii_alphanumeric())
}

impl Endpoint {
    /// What every instance of `kind` has, from its settings and the base URL the kind found.
    pub(crate) fn new(
        kind: &'static HttpKind,
        name: &str,
        s: &HttpSettings,
        base_url: String,
    ) -> Result<Endpoint> {
        let key_env = key_env(kind, s);
        let withheld_key_env = match (&s.api_key_env, takes_well_known_key(kind, s)) {
            (None, false) => kind.key_env,
            _ => None,
        };
        // A kind's default model is a model of its own service, not of another server.
        let kind_default = kind
            .default_model
            .filter(|_| !other_server(kind, &base_url));
        Ok(Endpoint {
            kind,
            name: name.to_string(),
            base_url,
            withheld_key_env,
            listed_model: OnceLock::new(),
            key: LazyKey::new(KeySource {
                instance: name.to_string(),
                env_var: key_env,
                command: s.api_key_cmd.clone(),
                inline: s.api_key.clone(),
            }),
            headers: s
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            default_model: s.default_model.clone().or(kind_default.map(str::to_string)),
            http: Http::from_config(name, s)?,
            key_status: Mutex::new(None),
            parsed_url: Mutex::new(None),
        })
    }

    /// `url` parsed, from the last request's when it is the same. A URL that does not parse
    /// is left to reqwest, which says why when the request is sent.
    fn parsed(&self, url: &str) -> Option<reqwest::Url> {
        let mut last = self.parsed_url.lock().ok()?;
        match &*last {
            Some((text, parsed)) if text == url => Some(parsed.clone()),
            _ => {
                let parsed = reqwest::Url::parse(url).ok()?;
                *last = Some((url.to_string(), parsed.clone()));
                Some(parsed)
            }
        }
    }

    /// Whether the base URL is not the kind's own but another server speaking its API.
    pub(crate) fn other_server(&self) -> bool {
        other_server(self.kind, &self.base_url)
    }

    pub(crate) fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case(name))
    }

    /// The URL of a route: `base` and the route's path (its stream path for a stream), the
    /// model id where the path says `{model}`. A base URL that names an API version keeps it
    /// for a kind whose paths start with theirs.
    pub(crate) fn url(&self, base: &str, route: &Route, request: &ModelRequest) -> Result<String> {
        let mut path = match route.stream_path {
            Some(p) if request.stream => p,
            _ => route.path,
        };
        if self.kind.versioned_base && names_version(base) {
            path = path[1..].find('/').map_or(path, |i| &path[i + 1..]);
        }
        if path.contains("{model}") {
            let model = self.kind.model_in_path(&request.model)?;
            return Ok(format!("{base}{}", path.replace("{model}", &model)));
        }
        Ok([base, path].concat())
    }

    /// Whether the endpoint always needs the kind's key (the others send one when they have it).
    pub(crate) fn key_required(&self) -> bool {
        match self.kind.auth {
            Auth::Bearer { required } => required && !self.other_server(),
            Auth::Header(_) => true,
            Auth::SigV4 | Auth::Template => false,
        }
    }

    /// The key the kind sends: an error that says where to put one when the endpoint always
    /// needs one, else `None` when no source has one.
    pub(crate) async fn key(&self) -> Result<Option<&Secret>> {
        match self.key.get().await? {
            None if self.key_required() => Err(Error::new(
                ErrorKind::MissingCredentials,
                format!(
                    "no API key for provider `{}`: {}",
                    self.name,
                    self.how_to_give_a_key()
                ),
            )),
            key => Ok(key),
        }
    }

    /// Where this instance's key may come from, for the errors that say it has none: its
    /// variable, `genai keys set`, or the config's settings; and why the kind's well-known
    /// variable, when set, is not sent here.
    pub(crate) fn how_to_give_a_key(&self) -> String {
        let name = &self.name;
        let mut how = match &self.key.source().env_var {
            Some(var) => {
                let also = self
                    .kind
                    .fallback_key_env
                    .filter(|_| self.kind.key_env == Some(var.as_str()))
                    .map(|f| format!(" (or {f})"))
                    .unwrap_or_default();
                format!("set {var}{also}, or run `genai keys set {name}`")
            }
            None => format!(
                "run `genai keys set {name}`, or set `api_key_env`, `api_key_cmd` or `api_key` under [service_providers.{name}]"
            ),
        };
        if let Some(var) = self.withheld_key_env.filter(|v| env(v).is_some()) {
            how.push_str(&format!(
                " ({var} is sent only to {}'s own service, not to {}: name it in `api_key_env` to send it there)",
                self.kind.name, self.base_url
            ));
        }
        how
    }

    /// The first model `GET {base_url}{path}` lists (OpenAI's `{"data": [{"id": ...}]}`),
    /// or why there is none. It runs on a thread of its own (the caller may be sync code on
    /// an async worker) and waits at most a few seconds.
    fn first_listed_model(&self, path: &str) -> std::result::Result<String, String> {
        let url = format!("{}{path}", self.base_url);
        let ask = || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            rt.block_on(self.list_models(&url)).map_err(|e| e.message)
        };
        let listed = std::thread::scope(|scope| {
            scope
                .spawn(ask)
                .join()
                .unwrap_or_else(|_| Err("listing the models failed".into()))
        });
        match listed {
            Ok(Some(model)) => Ok(model),
            Ok(None) => Err(format!("GET {url} listed no model")),
            Err(why) => Err(format!("GET {url} failed: {why}")),
        }
    }

    async fn list_models(&self, url: &str) -> Result<Option<String>> {
        let timeouts = super::Timeouts {
            connect: Duration::from_secs(5),
            read: Duration::from_secs(10),
            total: Duration::from_secs(15),
        };
        let mut req = timeouts.client(url.starts_with("https:"))?.get(url);
        if let (Auth::Bearer { .. }, Some(key)) = (self.kind.auth, self.key.get().await?) {
            req = req.bearer_auth(key.expose());
        }
        for (k, v) in &self.headers {
            req = req.header(k, v);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| super::transport_error(&self.name, url, e))?;
        let status = resp.status();
        if !status.is_success() {
            let headers = resp.headers().clone();
            let body = resp.bytes().await.unwrap_or_default();
            return Err(super::http::status_error(
                &self.name, url, status, &headers, &body,
            ));
        }
        let list: Value = resp
            .json()
            .await
            .map_err(|e| super::transport_error(&self.name, url, e))?;
        Ok(list["data"][0]["id"].as_str().map(str::to_string))
    }

    /// One attempt of a prepared request.
    pub(crate) fn request(
        &self,
        client: &reqwest::Client,
        route: &Route,
        stream: bool,
        prepared: &Prepared,
        key: Option<&Secret>,
    ) -> RequestBuilder {
        let req = match self.parsed(&prepared.url) {
            Some(url) => client.post(url),
            None => client.post(&prepared.url),
        };
        let mut req = match &*prepared.body {
            Body::Tree(tree) => req.json(tree),
            // What `json` does with the bytes it writes.
            Body::Written { bytes, .. } => req
                .header(
                    reqwest::header::CONTENT_TYPE,
                    reqwest::header::HeaderValue::from_static("application/json"),
                )
                .body(bytes.clone()),
        };
        match (self.kind.auth, key) {
            (Auth::Bearer { .. }, Some(key)) => req = req.bearer_auth(key.expose()),
            (Auth::Header(name), Some(key)) => req = req.header(name, key.expose()),
            // No key, or one the kind's hooks place themselves.
            _ => {}
        }
        if stream {
            req = req.header(reqwest::header::ACCEPT, route.stream_accept);
        }
        for (k, v) in &self.headers {
            if !prepared
                .headers
                .iter()
                .any(|(own, _)| k.eq_ignore_ascii_case(own))
            {
                req = req.header(k, v);
            }
        }
        for (k, v) in &prepared.headers {
            req = req.header(*k, v);
        }
        req
    }
}

impl Call<'_> {
    /// The URL on `base` ([`Endpoint::url`]).
    pub(crate) fn url(&self, base: &str) -> Result<String> {
        self.endpoint.url(base, self.route, self.request)
    }

    /// Sends a prepared request (with retries) and frames the answer.
    pub(crate) async fn send(&self, prepared: Prepared<'_>) -> Result<ProviderResponse> {
        let (e, stream) = (self.endpoint, self.request.stream);
        let key = e.key().await?;
        let url = &prepared.url;
        let resp = e
            .http
            .send(url, |client| {
                Ok(e.request(client, self.route, stream, &prepared, key))
            })
            .await
            .map_err(|mut err| {
                // A server that wants a key genai did not send: say how to give it one.
                if key.is_none() && err.kind == ErrorKind::MissingCredentials {
                    err.message = format!(
                        "{}; genai sent no key: {}",
                        err.message,
                        e.how_to_give_a_key()
                    );
                }
                err
            })?;
        e.http.response(resp, url, stream).await
    }
}

#[cfg(test)]
#[path = "remote_testing.rs"]
pub(crate) mod testing;

#[cfg(test)]
#[path = "remote_tests.rs"]
mod tests;
