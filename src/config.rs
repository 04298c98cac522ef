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

/// The whole configuration file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub defaults: Defaults,
    /// Named service provider instances: `[service_providers.NAME]`.
    #[serde(default)]
    pub service_providers: BTreeMap<String, ProviderConfig>,
    /// Named model configurations: `[model_configurations.NAME]`.
    #[serde(default)]
    pub model_configurations: BTreeMap<String, ModelConfigurationConfig>,
    /// Named agents, a provider and model pair that `-m NAME` selects: `[agents.NAME]`.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentConfig>,
    /// Settings of features by name: `[features.NAME]`.
    #[serde(default)]
    pub features: BTreeMap<String, FeatureConfig>,
}

/// `[defaults]`: what `genai ask` uses when no `-m` is given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// An agent name from `[agents]`, or `provider:model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The feature of new conversations (default `assistant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<String>,
}

/// `[service_providers.NAME]`: one configured transport.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The provider kind, such as `openai`.
    pub kind: String,
    /// The endpoint's base URL, such as `https://api.openai.com/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The key itself. Prefer the keyring (`genai keys set NAME`) or `api_key_env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The environment variable that holds the key (default: the kind's usual one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// A shell command that prints the key on stdout, such as `pass show openai`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_cmd: Option<String>,
    /// The model id used when a conversation names only this provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Seconds allowed to open the connection (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout_secs: Option<f64>,
    /// Seconds allowed for a whole request, streaming included (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<f64>,
    /// Seconds allowed between two reads of the response (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_timeout_secs: Option<f64>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Retries after a connect error, 429 or 5xx, before the answer starts (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Seconds that attempts and waits between them may take together (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_budget_secs: Option<f64>,
    /// Kind `local`: the model, a name in the models folder or a path to a `.gguf` file
    /// (default: the models folder's default model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Kind `local`: threads for prompt evaluation and generation (default: one per core;
    /// more threads than cores makes generation much slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Kind `local`: the context size in tokens of each slot, `n_ctx` (default 4096, capped
    /// by what the model was trained for). A prompt that does not fit is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_size: Option<u32>,
    /// Kind `local`: how many contexts (slots) keep their KV cache between requests, so that
    /// that many conversations continue without evaluating their history again (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
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
    pub feature: Option<String>,
    /// A system prompt for conversations with this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
}

/// `[features.NAME]`: settings of a feature.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeatureConfig {
    /// The system prompt the feature gives the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
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
                        format!("cannot find a home folder: set {var}"),
                    )
                }),
            }
        };
        Ok(Paths {
            config_dir: pick("GENAI_CONFIG_DIR", dirs::config_dir())?,
            data_dir: pick("GENAI_DATA_DIR", dirs::data_dir())?,
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
        let config: Config = toml::from_str(text)
            .map_err(|e| Error::new(ErrorKind::Config, e.message().to_string()))?;
        for (name, agent) in &config.agents {
            if agent.model_configuration.is_some() == agent.model.is_some() {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("agents.{name}: set exactly one of `model_configuration` or `model`"),
                ));
            }
        }
        Ok(config)
    }

    /// The configuration as TOML with every secret replaced by `********`.
    pub fn masked_toml(&self) -> String {
        let mut shown = self.clone();
        for provider in shown.service_providers.values_mut() {
            if provider.api_key.is_some() {
                provider.api_key = Some(MASK.to_string());
            }
            for (name, value) in provider.headers.iter_mut() {
                if is_secret_header(name) {
                    *value = MASK.to_string();
                }
            }
        }
        toml::to_string_pretty(&shown).unwrap_or_default()
    }
}

pub const MASK: &str = "********";

/// Headers whose values are credentials and must never be shown.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "authorization" || n.contains("key") || n.contains("token") || n.contains("secret")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_masks() {
        let c = Config::parse(
            r#"
            [defaults]
            model = "fast"
            [service_providers.work]
            kind = "openai"
            base_url = "http://127.0.0.1:9/v1"
            api_key = "sk-very-secret"
            headers = { "X-Api-Key" = "hdr-secret", "X-Team" = "blue" }
            [model_configurations.mini]
            format = "openai-chat"
            model = "gpt-4o-mini"
            parameters = { temperature = 0.2 }
            [agents.fast]
            provider = "work"
            model_configuration = "mini"
            "#,
        )
        .unwrap();
        assert_eq!(
            c.model_configurations["mini"].parameters["temperature"],
            0.2
        );
        let shown = c.masked_toml();
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        assert!(!shown.contains("hdr-secret"), "{shown}");
        assert!(shown.contains("blue"));
    }

    #[test]
    fn unknown_fields_and_bad_agents_are_refused() {
        assert!(Config::parse("[defaults]\nmodle = 'x'").is_err());
        let e = Config::parse("[agents.a]\nprovider = 'p'").unwrap_err();
        assert!(e.message.contains("exactly one"), "{}", e.message);
    }
}
