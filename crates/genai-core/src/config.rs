//! The TOML configuration file and the folders genai uses.
//!
//! This module owns the shape of `config.toml` (and its JSON Schema), where it lives, and how
//! it is shown to people with secrets masked. It must never look a secret up (that is
//! `secrets`) nor build components (that is `registry`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};

pub mod lsp;
pub(crate) mod provider;
mod serve;
pub mod serve_models;
pub mod store;
pub mod telemetry;

pub(crate) use provider::{AzureSettings, BedrockSettings, ConnectorSettings, HttpSettings};
pub use provider::{LocalSettings, ProviderConfig};
pub use serve::ServeConfig;

/// The whole configuration file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub defaults: Defaults,
    /// Named service provider instances: `[service_providers.NAME]`.
    #[serde(default, deserialize_with = "provider::deserialize_providers")]
    pub service_providers: BTreeMap<String, ProviderConfig>,
    /// Named model configurations: `[model_configurations.NAME]`.
    #[serde(default)]
    pub(crate) model_configurations: BTreeMap<String, ModelConfigurationConfig>,
    /// Named agents, a provider and model pair that `-m NAME` selects: `[agents.NAME]`.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Settings of features by name: `[features.NAME]`.
    #[serde(default)]
    pub(crate) features: BTreeMap<String, FeatureConfig>,
    /// Plugin modules by name: `[plugins.NAME]` (tools are named `NAME.function`).
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginConfig>,
    /// MCP servers by name, started as child processes speaking MCP over stdio:
    /// `[mcp_servers.NAME]` (tools are named `NAME.tool`).
    #[serde(default)]
    pub(crate) mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Middleware by name, run on the messages of every request of the agents that list it:
    /// `[middleware.NAME]`.
    #[serde(default)]
    pub(crate) middleware: BTreeMap<String, MiddlewareConfig>,
    /// The language server `genai lsp`: `[lsp]`.
    #[serde(default)]
    pub lsp: lsp::LspConfig,
    /// Prices of models in US dollars per million tokens, over the built-in estimates:
    /// `[pricing."PROVIDER:MODEL"]` (PROVIDER an instance name or kind; MODEL an id or `*`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) pricing: BTreeMap<String, crate::pricing::PriceConfig>,
    /// Where `genai keys set` stores keys: `[keys]`.
    #[serde(default)]
    pub keys: KeysConfig,
    /// What tool calls may do without asking: `[permissions]` (mode, allow, ask, deny).
    #[serde(default)]
    pub permissions: crate::permission::PermissionsConfig,
    /// Commands run before and after tool calls, on a prompt and at a turn's end: `[hooks]`.
    #[serde(default)]
    pub(crate) hooks: crate::hooks::HooksConfig,
    /// How long the files' checkpoints are kept: `[checkpoints]`.
    #[serde(default)]
    pub(crate) checkpoints: crate::checkpoint::CheckpointConfig,
    /// `genai serve` and its use by `ask` and `chat`: `[serve]`.
    #[serde(default)]
    pub serve: ServeConfig,
    /// Where `genai serve`'s replicas share their state (a Postgres URL): `[store]`.
    #[serde(default)]
    pub store: store::StoreConfig,
    /// How conversations are compacted when they near their model's context: `[compaction]`.
    #[serde(default)]
    pub compaction: crate::compaction::CompactionConfig,
    /// Where OpenTelemetry traces go and what they carry: `[telemetry]`.
    #[serde(default)]
    pub telemetry: telemetry::TelemetryConfig,
}

/// `[keys]`: where `genai keys set` stores a key.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeysConfig {
    /// `keyring` (the OS keyring, the default) or `file` (`keys.toml` in the config folder,
    /// readable only by you: for machines with no keyring service).
    #[serde(default)]
    pub store: KeyStore,
}

/// Where `genai keys set` stores a key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyStore {
    #[default]
    Keyring,
    File,
}

/// `[middleware.NAME]`: a kind (`describe-images`, `redact`, `fit-context`) and its settings,
/// checked by the kind when an agent that lists it is built.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct MiddlewareConfig {
    /// The middleware kind.
    pub(crate) kind: String,
    /// The kind's settings (see docs/TOOLS.md, Middleware).
    #[serde(flatten)]
    pub(crate) settings: serde_json::Map<String, Value>,
}

/// `[mcp_servers.NAME]`: one MCP server, a program that speaks MCP on its stdin and stdout
/// (`command`), or a streamable-HTTP server (`url`). It is started (or connected) on first use
/// and kept for the daemon's life.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program, a path or a name looked up in `PATH` (a stdio server).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub command: String,
    /// The endpoint of a streamable-HTTP server, instead of `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent to a `url` server (`Authorization = "Bearer ..."` included). Shown
    /// masked by `config show`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables set for it. It does not inherit genai's environment (which holds
    /// the providers' keys), only the session's basics (`PATH`, `HOME`, the locale, ...), the
    /// variables named in `inherit_env`, and these. Shown masked by `config show`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Names of genai's environment variables it gets too, such as `GITHUB_TOKEN`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherit_env: Vec<String>,
    /// Whether conversations that name no tools get this server's tools (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Seconds allowed for one tool call (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// `[plugins.NAME]`: one plugin module, an HTTP service with a manifest at
/// `/.well-known/ai-plugin.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PluginConfig {
    /// The module's base URL or its manifest's URL.
    pub url: String,
    /// Whether conversations that name no tools get this module's tools (default false).
    #[serde(default)]
    pub enabled: bool,
    /// Seconds allowed for one call (default 30).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "seconds"
    )]
    pub(crate) timeout_secs: Option<f64>,
    /// A `service_api_key` module's key. Prefer `genai keys set plugin:NAME`,
    /// `GENAI_PLUGIN_<NAME>_KEY` or `api_key_cmd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) api_key: Option<String>,
    /// A shell command that prints the module's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) api_key_cmd: Option<String>,
}

/// `[defaults]`: what `genai ask` uses when no `-m` is given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// An agent name from `[agents]`, or `provider:model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model `genai embed` uses when given none (`provider:model`); default `local`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// The feature of new conversations (default `assistant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) feature: Option<String>,
    /// Middleware of agents and model configurations that list none, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) middleware: Option<Vec<String>>,
}

/// `[model_configurations.NAME]`: one wire format with its model and parameters.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfigurationConfig {
    /// The model format kind, such as `openai-chat`.
    pub format: String,
    /// The model id sent to the provider.
    pub model: String,
    /// Parameters of the format, such as `temperature = 0.2`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub parameters: serde_json::Map<String, Value>,
    /// Middleware of agents on this configuration that list none, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middleware: Option<Vec<String>>,
    /// The JSON Schema every reply must match (structured output): a table, or JSON text or
    /// the path of a file holding it. Its name is the configuration's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// Prompt caching (`claude-messages`, `bedrock-converse`): cache breakpoints on long
    /// prompts, on by default; `false` sends none. The same as the `cache` parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
    /// How long cached prompt prefixes live: `5m` (the provider's default) or `1h`. The same as
    /// the `cache_ttl` parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_ttl: Option<String>,
}

/// `[agents.NAME]`: a provider and a model, the unit a user names with `-m`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// A service provider instance name.
    pub provider: String,
    /// A model configuration name from `[model_configurations]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_configuration: Option<String>,
    /// Or a model id, with the provider's default format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The feature of conversations with this agent (default `assistant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) feature: Option<String>,
    /// A system prompt for conversations with this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
    /// Middleware run in order on every request of this agent (`[middleware.NAME]`, or a
    /// client-hosted one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) middleware: Option<Vec<String>>,
    /// Tried in order when this one's provider fails before its answer starts (a 429, a 5xx,
    /// a time-out or a refused connection): other agents, or any name `-m` takes
    /// (`PROVIDER:MODEL`, a provider, `local`). Each runs the same request on its own provider
    /// and model. An agent's own fallbacks are not followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fallback: Option<Vec<String>>,
}

/// `[features.NAME]`: settings of a feature.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeatureConfig {
    /// The system prompt the feature gives the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) system_prompt: Option<String>,
    /// Rounds of tool calls in one turn before the model's reply is taken as final (the
    /// `tools` feature; default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_steps: Option<usize>,
    /// The `tools` feature: how tools are offered to the model (default `auto`: native tool
    /// calls when the format and the provider have them, a ReAct text loop otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mode: Option<ToolMode>,
}

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// Native tool calls when the format and the provider have them, ReAct otherwise.
    #[default]
    Auto,
    /// The format's native tool calls (an error where there are none).
    Native,
    /// The ReAct text loop (`Thought:`, `Action:`, `Action Input:`, `Final Answer:`).
    React,
}

/// Where genai keeps its configuration and its data.
#[derive(Debug, Clone)]
pub struct Paths {
    pub config_dir: PathBuf,
    pub data_dir: PathBuf,
}

impl Paths {
    /// `$GENAI_CONFIG_DIR` else the XDG config dir; `$GENAI_DATA_DIR` else the XDG data dir.
    pub fn from_env() -> Result<Paths> {
        let pick = |var: &str, base: Option<PathBuf>| -> Result<PathBuf> {
            match std::env::var_os(var) {
                Some(v) if !v.is_empty() => Ok(PathBuf::from(v)),
                _ => base.map(|b| b.join("genai")).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Config,
                        format!("cannot find a home folder (HOME is not set): set HOME or {var}"),
                    )
                }),
            }
        };
        // Without HOME, `dirs` would fall back to the account's home of the password database
        // (root's data in /root for a service started without one): ask instead, unless the
        // XDG variable names the folder.
        let home_set = cfg!(not(unix)) || std::env::var_os("HOME").is_some_and(|h| !h.is_empty());
        let xdg = |var: &str, dir: Option<PathBuf>| {
            let named = std::env::var_os(var).is_some_and(|v| !v.is_empty());
            dir.filter(|_| home_set || named)
        };
        Ok(Paths {
            config_dir: pick(
                "GENAI_CONFIG_DIR",
                xdg("XDG_CONFIG_HOME", dirs::config_dir()),
            )?,
            data_dir: pick("GENAI_DATA_DIR", xdg("XDG_DATA_HOME", dirs::data_dir()))?,
        })
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    pub fn history_db(&self) -> PathBuf {
        self.data_dir.join("history.db")
    }
}

impl Config {
    /// Reads the file; a missing file is the empty configuration.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("cannot read {}: {e}", path.display()),
                ))
            }
        };
        Config::parse(&text).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("{}: {}", path.display(), e.message),
            )
        })
    }

    pub fn parse(text: &str) -> Result<Config> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.chars().rev().take_while(|c| *c != '\n').count() + 1;
                format!("line {line}, column {column}: ")
            });
            Error::new(
                ErrorKind::Config,
                format!("{}{}", at.unwrap_or_default(), e.message()),
            )
        })?;
        config.remember_secrets();
        crate::pricing::Prices::new(&config.pricing)?;
        config.hooks.validate()?;
        // A bad rule is said when the config is read, not at the first tool call.
        crate::permission::Policy::new(crate::permission::Layers {
            user: config.permissions.clone(),
            ..Default::default()
        })?;
        for (name, agent) in &config.agents {
            if agent.model_configuration.is_some() == agent.model.is_some() {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("agents.{name}: set exactly one of `model_configuration` or `model`"),
                ));
            }
            // Any other name `-m` takes; one that names nothing is said when the agent is
            // first built, as for `[defaults] model` (the providers are not known here).
            for other in agent.fallback.iter().flatten() {
                if other == name || other.trim().is_empty() {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!(
                            "agents.{name}.fallback: `{other}` is not another agent, PROVIDER:MODEL or provider"
                        ),
                    ));
                }
            }
        }
        if let Some(name) = config
            .mcp_servers
            .keys()
            .find(|n| config.plugins.contains_key(*n))
        {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "`{name}` is both a plugin and an MCP server: tool names `{name}.…` would be \
                     ambiguous; rename one of `[plugins.{name}]` and `[mcp_servers.{name}]`"
                ),
            ));
        }
        if let Some((name, _)) = config
            .mcp_servers
            .iter()
            .find(|(_, s)| s.command.is_empty() == s.url.is_none())
        {
            return Err(Error::new(
                ErrorKind::Config,
                format!("mcp_servers.{name}: set exactly one of `command` (stdio) or `url` (HTTP)"),
            ));
        }
        if let Some(name) = config
            .mcp_servers
            .keys()
            .find(|n| n.contains('.') || n.is_empty())
        {
            return Err(Error::new(
                ErrorKind::Config,
                format!("mcp_servers.{name}: a server name is not empty and has no `.`"),
            ));
        }
        serve_models::check(&config.serve.models)?;
        if let Some(root) = config.serve.roots.iter().find(|r| {
            let r = r.trim();
            !(Path::new(r).is_absolute() || r == "~" || r.starts_with("~/"))
        }) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("serve.roots: `{root}` is not an absolute folder: start it with `/`, or `~/` for the home folder"),
            ));
        }
        Ok(config)
    }

    /// The configuration as TOML with every secret replaced by `********`, as people write
    /// it: whole numbers without a fraction (`600`, not `600.0`), and no empty tables.
    pub fn masked_toml(&self) -> String {
        let mut shown = self.clone();
        shown.each_secret(|value| *value = MASK.to_string());
        for url in [shown.store.url.as_mut(), shown.serve.redis_url.as_mut()]
            .into_iter()
            .flatten()
        {
            *url = store::masked_url(url);
        }
        let text = toml::to_string_pretty(&shown).unwrap_or_default();
        let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
            return text;
        };
        tidy_table(doc.as_table_mut());
        doc.to_string().trim_start_matches('\n').to_string()
    }

    /// Calls `f` on every secret of the file: provider keys, credentials and secret headers,
    /// plugin keys, every MCP server's environment values and HTTP headers (any may be a key),
    /// `[serve] metrics_token` and `[telemetry] headers` (the passwords of URLs are handled
    /// apart: see `store.rs`).
    fn each_secret(&mut self, mut f: impl FnMut(&mut String)) {
        for provider in self.service_providers.values_mut() {
            provider.each_secret(&mut f);
        }
        for plugin in self.plugins.values_mut() {
            plugin.api_key.iter_mut().for_each(&mut f);
        }
        for server in self.mcp_servers.values_mut() {
            server
                .env
                .values_mut()
                .chain(server.headers.values_mut())
                .for_each(&mut f);
        }
        self.serve.metrics_token.iter_mut().for_each(&mut f);
        self.telemetry.headers.values_mut().for_each(&mut f);
    }

    /// Hands every secret of the file to the redactor, so no error or log line shows one.
    fn remember_secrets(&self) {
        self.clone()
            .each_secret(|value| crate::redact::remember(value));
        for url in [&self.store.url, &self.serve.redis_url]
            .into_iter()
            .flatten()
        {
            if let Some(password) = store::url_password(url) {
                crate::redact::remember(password);
            }
        }
    }
}

pub(crate) const MASK: &str = "********";

/// Drops the empty tables of `table` (after tidying them) and writes its whole numbers
/// without a fraction, as [`Config::masked_toml`] shows them.
fn tidy_table(table: &mut toml_edit::Table) {
    table.retain(|_, item| match item {
        toml_edit::Item::Table(t) => {
            tidy_table(t);
            !t.is_empty()
        }
        toml_edit::Item::ArrayOfTables(tables) => {
            tables.iter_mut().for_each(tidy_table);
            true
        }
        toml_edit::Item::Value(v) => {
            tidy_value(v);
            true
        }
        toml_edit::Item::None => false,
    });
}

/// `v` with its whole numbers (within f64's exact integers) written without a fraction.
fn tidy_value(v: &mut toml_edit::Value) {
    match v {
        toml_edit::Value::Float(f) => {
            let n = *f.value();
            if n.fract() == 0.0 && n.abs() < 2f64.powi(53) {
                let decor = f.decor().clone();
                *v = toml_edit::Value::from(n as i64);
                *v.decor_mut() = decor;
            }
        }
        toml_edit::Value::Array(a) => a.iter_mut().for_each(tidy_value),
        toml_edit::Value::InlineTable(t) => t.iter_mut().for_each(|(_, v)| tidy_value(v)),
        _ => {}
    }
}

/// Reads a `*_secs` setting: a number, whole or not; anything else is refused as "expected a
/// number of seconds" (which numbers make sense is the user's business: `provider::Timeouts`).
fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<f64>, D::Error> {
    use serde::de::{Error, Visitor};

    struct Seconds;

    impl<'de> Visitor<'de> for Seconds {
        type Value = Option<f64>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a number of seconds")
        }

        fn visit_f64<E: Error>(self, v: f64) -> std::result::Result<Self::Value, E> {
            Ok(Some(v))
        }

        fn visit_i64<E: Error>(self, v: i64) -> std::result::Result<Self::Value, E> {
            Ok(Some(v as f64))
        }

        fn visit_u64<E: Error>(self, v: u64) -> std::result::Result<Self::Value, E> {
            Ok(Some(v as f64))
        }

        fn visit_none<E: Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    d.deserialize_any(Seconds)
}

/// Headers whose values are credentials and must never be shown.
pub(crate) fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization" || n.contains("key") || n.contains("token") || n.contains("secret")
}

#[cfg(test)]
mod tests;
