//! Which provider and model a conversation or an agent runs on: every selection rule in one
//! place — `-m` names, agents of the config, `[defaults] model`, and zero config (a provider
//! key in the environment, else the default local model).
//!
//! This module decides; it must never build an agent or a provider (the registry and the
//! session do) nor read a wire message. It takes a request's model-choice fields as
//! `genai-protocol` declares them, and maps its [`Listed`] to that crate's `Components`.

use genai_protocol::choice::ModelChoiceFields;
use genai_protocol::listings;
use serde_json::json;

use crate::config::{Config, Paths};
use crate::error::{Error, ErrorKind, Result};
use crate::models::ModelLibrary;
use crate::registry::{Components, ProviderInstance, Registry, LOCAL_KIND};

/// What a client names a model by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ModelChoice {
    /// `[defaults] model`, else zero config.
    #[default]
    Default,
    /// A `-m` name: an agent of the config, `PROVIDER:MODEL`, or a provider instance's name.
    Named(String),
    /// An agent of the config, and nothing else.
    Agent(String),
    /// A provider instance with a model configuration instance, or a model id, or neither
    /// (the provider's default model).
    Provider {
        provider: String,
        model_configuration: Option<String>,
        model: Option<String>,
    },
}

impl ModelChoice {
    /// The choice a request's separate fields make (`genai-protocol`'s model-choice fields);
    /// refuses fields that do not go together.
    pub fn from_fields(fields: ModelChoiceFields) -> Result<ModelChoice> {
        let ModelChoiceFields {
            agent,
            service_provider: provider,
            model_configuration,
            model,
        } = fields;
        match (agent, provider) {
            (Some(_), Some(_)) => Err(Error::invalid_params(
                "give `agent` or `serviceProvider`, not both",
            )),
            (Some(a), None) => Ok(ModelChoice::Agent(a)),
            (None, Some(provider)) => Ok(ModelChoice::Provider {
                provider,
                model_configuration,
                model,
            }),
            (None, None) if model_configuration.is_some() || model.is_some() => Err(
                Error::invalid_params("`modelConfiguration` and `model` need a `serviceProvider`"),
            ),
            (None, None) => Ok(ModelChoice::Default),
        }
    }
}

/// What a conversation runs on, before it is built.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub provider: String,
    pub model_configuration: Option<String>,
    pub model: Option<String>,
    pub(crate) feature: Option<String>,
    pub(crate) system_prompt: Option<String>,
    /// The agent's middleware list, when an agent of the config was chosen and lists one.
    pub(crate) middleware: Option<Vec<String>>,
    /// The schema every reply must match, when the client gives one (else the model
    /// configuration's `response_schema`, if any).
    pub(crate) response_schema: Option<crate::format::ResponseSchema>,
    /// The agent's fallback agents, in order, when an agent of the config was chosen.
    pub(crate) fallback: Vec<String>,
}

/// The registry's kinds and instances with the default selection, as `ListComponents` and
/// `genai components` list them.
pub struct Listed {
    /// What a conversation naming no model runs on, when something does.
    pub default: Option<Selection>,
    pub registered: Components,
}

impl From<Components> for Listed {
    /// The registered components alone, with no default.
    fn from(registered: Components) -> Self {
        Listed {
            default: None,
            registered,
        }
    }
}

/// The listing as `ListComponents` and `genai components --json` show it: a mapping, not a
/// mirror, since the registry's instances are live providers (asked for their default model
/// and key) and a selection holds more than its three names.
impl From<Listed> for listings::Components {
    fn from(listed: Listed) -> Self {
        let c = listed.registered;
        listings::Components {
            default: listed.default.map(|d| listings::DefaultChoice {
                service_provider: d.provider,
                model_configuration: d.model_configuration,
                model: d.model,
            }),
            service_providers: c
                .service_providers
                .iter()
                .map(|p| listings::ProviderInfo {
                    name: p.name.clone(),
                    kind: p.kind.to_string(),
                    default_model: p.provider.default_model().map(str::to_string),
                    origin: p.origin.as_str().to_string(),
                    key: p.provider.key_status(),
                })
                .collect(),
            model_configurations: c
                .model_configurations
                .into_iter()
                .map(|m| listings::ModelInfo {
                    name: m.name,
                    format: m.format.to_string(),
                    model: m.model,
                    parameters: m.parameters,
                    origin: m.origin.as_str().to_string(),
                })
                .collect(),
            features: c
                .features
                .iter()
                .map(|f| json!({"name": f.name, "description": f.description, "origin": f.origin.as_str()}))
                .collect(),
            kinds: json!({
                "serviceProviders": c.provider_kinds.iter().map(|k| json!({
                    "name": k.name,
                    "description": k.description,
                    "formats": k.formats,
                    "defaultFormat": k.default_format,
                })).collect::<Vec<_>>(),
                "modelConfigurations": c.format_kinds.iter().map(|k| json!({
                    "name": k.name,
                    "description": k.description,
                    "parameters": k.parameters,
                })).collect::<Vec<_>>(),
            }),
        }
    }
}

/// The environment variables that select a built-in provider when nothing else chooses one,
/// in this order.
const ZERO_CONFIG_ENV: &[(&str, &[&str])] = &[
    (
        crate::provider::openai::KIND,
        &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
    ),
    (crate::provider::anthropic::KIND, &["ANTHROPIC_API_KEY"]),
    (
        crate::provider::gemini::KIND,
        &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    ),
];

fn any_env(vars: &[&str]) -> bool {
    vars.iter()
        .any(|v| std::env::var(v).is_ok_and(|v| !v.trim().is_empty()))
}

/// Selection over one config and registry.
pub struct Selector<'a> {
    pub config: &'a Config,
    pub registry: &'a Registry,
}

impl Selector<'_> {
    /// Turns a choice into a selection.
    pub fn select(&self, choice: &ModelChoice) -> Result<Selection> {
        match choice {
            ModelChoice::Default => self.named(None),
            ModelChoice::Named(name) => self.named(Some(name)),
            ModelChoice::Agent(a) if !self.config.agents.contains_key(a) => Err(Error::new(
                ErrorKind::UnknownComponent,
                format!("no agent named `{a}` in the config"),
            )),
            ModelChoice::Agent(a) => self.named(Some(a)),
            ModelChoice::Provider {
                provider,
                model_configuration,
                model,
            } => Ok(Selection {
                provider: provider.clone(),
                model_configuration: model_configuration.clone(),
                model: model.clone(),
                ..Default::default()
            }),
        }
    }

    /// An agent from the config, or `provider:model`, or a bare provider instance name; `None`
    /// uses `[defaults] model`, else zero config.
    fn named(&self, name: Option<&str>) -> Result<Selection> {
        let name = match name.or(self.config.defaults.model.as_deref()) {
            Some(n) => n,
            None => match ZERO_CONFIG_ENV.iter().find(|(_, vars)| any_env(vars)) {
                Some((kind, _)) => kind,
                None => {
                    let model = self.implicit_local(&library()?)?;
                    return Ok(Selection {
                        provider: LOCAL_KIND.to_string(),
                        model: Some(model),
                        ..Default::default()
                    });
                }
            },
        };
        if let Some(agent) = self.config.agents.get(name) {
            return Ok(Selection {
                provider: agent.provider.clone(),
                model_configuration: agent.model_configuration.clone(),
                model: agent.model.clone(),
                feature: agent.feature.clone(),
                system_prompt: agent.system_prompt.clone(),
                middleware: agent.middleware.clone(),
                fallback: agent.fallback.clone().unwrap_or_default(),
                ..Default::default()
            });
        }
        if name == LOCAL_KIND && !self.config.service_providers.contains_key(LOCAL_KIND) {
            // The built-in engine on the models folder's default model, whatever else the
            // config holds.
            return Ok(Selection {
                provider: LOCAL_KIND.to_string(),
                model: Some(self.local_default(&library()?, false)?),
                ..Default::default()
            });
        }
        match name.split_once(':') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(Selection {
                provider: p.to_string(),
                model: Some(m.to_string()),
                ..Default::default()
            }),
            _ if self.registry.provider(name).is_ok() => Ok(Selection {
                provider: name.to_string(),
                ..Default::default()
            }),
            _ => Err(Error::new(
                ErrorKind::UnknownComponent,
                format!("`{name}` is neither an agent in the config nor PROVIDER:MODEL (such as openai:gpt-4o-mini)"),
            )),
        }
    }

    /// The registry's listing with the default selection (what a conversation naming no model
    /// runs on, `genai ask` without `-m`), `None` when nothing is chosen by default. The
    /// default is found first, so an implicit `local` instance it makes is listed.
    pub fn components(&self) -> Result<Listed> {
        let default = self.select(&ModelChoice::Default).ok();
        Ok(Listed {
            default,
            registered: self.registry.components()?,
        })
    }

    /// The schema replies of a selection must match: the client's, else its model
    /// configuration's `response_schema` (a JSON Schema table, or JSON text or a file path).
    pub(crate) fn response_schema(
        &self,
        sel: &Selection,
    ) -> Result<Option<crate::format::ResponseSchema>> {
        if let Some(s) = &sel.response_schema {
            return Ok(Some(s.clone()));
        }
        let Some((name, c)) = sel
            .model_configuration
            .as_deref()
            .and_then(|m| self.config.model_configurations.get_key_value(m))
        else {
            return Ok(None);
        };
        let schema = match &c.response_schema {
            None => return Ok(None),
            Some(serde_json::Value::String(text)) => schema_text(text)
                .and_then(|json| crate::format::ResponseSchema::from_json_text(Some(name), &json)),
            Some(v) => crate::format::ResponseSchema::new(Some(name), v.clone()),
        };
        schema.map(Some).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("model_configurations.{name}.response_schema: {}", e.message),
            )
        })
    }

    /// The middleware of a selection, in order: the agent's list, else its model
    /// configuration's, else `[defaults] middleware`, else none.
    pub(crate) fn middleware(&self, sel: &Selection) -> Vec<String> {
        sel.middleware
            .clone()
            .or_else(|| {
                sel.model_configuration
                    .as_ref()
                    .and_then(|m| self.config.model_configurations.get(m))
                    .and_then(|m| m.middleware.clone())
            })
            .or_else(|| self.config.defaults.middleware.clone())
            .unwrap_or_default()
    }

    /// The provider instance of a selection. The built-in `local` instance exists whatever the
    /// config holds when the local engine is installed (a genai built with the `local` feature,
    /// `provider::local::install`); without it, naming `local` says so.
    pub fn provider(&self, sel: &Selection) -> Result<ProviderInstance> {
        self.registry.provider(&sel.provider).map_err(|e| {
            match sel.provider == LOCAL_KIND && !crate::provider::local::installed() {
                true => Error::new(
                    ErrorKind::Config,
                    "this genai was built without the `local` feature, so it has no `local` provider: rebuild it with `cargo build --features local`",
                ),
                false => e,
            }
        })
    }

    /// Zero config: with no `[service_providers]` and no `[defaults] model`, the default model
    /// of the models folder runs on the built-in provider instance `local` (kind `local`,
    /// `default_model` = the model's name). Returns the model name
    /// (which the `local` kind resolves with [`ModelLibrary::resolve`]), or a `Config` error
    /// saying how to add a model or a provider.
    fn implicit_local(&self, lib: &ModelLibrary) -> Result<String> {
        let no_model = |msg: String| Err(Error::new(ErrorKind::Config, msg));
        if !self.config.service_providers.is_empty() || self.config.defaults.model.is_some() {
            return no_model(
                "no model chosen: pass -m PROVIDER:MODEL (such as openai:gpt-4o-mini, or `-m local` for the default local model), or set `model` under [defaults] in the config".into(),
            );
        }
        self.local_default(lib, true)
    }

    /// The default model of the models folder on the built-in `local` instance (made again
    /// when that default changed): its name, or a `Config` error saying how to install or
    /// choose one.
    /// `zero_config`: nothing else is configured (the errors say so).
    fn local_default(&self, lib: &ModelLibrary, zero_config: bool) -> Result<String> {
        let prefix = match zero_config {
            true => "no model provider is configured and ",
            false => "",
        };
        let no_model = |msg: String| Err(Error::new(ErrorKind::Config, format!("{prefix}{msg}")));
        if !crate::provider::local::installed() || self.registry.provider_kind(LOCAL_KIND).is_err()
        {
            return Err(Error::new(ErrorKind::Config, NO_LOCAL_FEATURE));
        }
        let Some(name) = lib.default_name()? else {
            let count = lib.list()?.len();
            if count > 0 {
                return no_model(format!(
                    "{count} local models are installed but none is the default: choose one with `genai models default NAME`"
                ));
            }
            return no_model(
                "no local model is installed: run `genai models pull demo` (a small demo model, 98 MB) or `genai models pull URL`, or configure a provider (see `genai config path`)".into(),
            );
        };
        self.registry.add_implicit_local(&name)?;
        Ok(name)
    }
}

const NO_LOCAL_FEATURE: &str = "no model provider is configured, and this genai was built without the `local` feature so it cannot run local models: configure a provider (see `genai config path`), set OPENAI_API_KEY, or rebuild with `cargo build --features local`";

/// The models folder of this user.
/// A response schema's JSON text from what `--schema` or a model configuration's
/// `response_schema` holds: the JSON itself, or the path of a file holding it.
pub fn schema_text(text: &str) -> Result<String> {
    if text.trim_start().starts_with('{') {
        return Ok(text.to_string());
    }
    std::fs::read_to_string(text).map_err(|e| {
        Error::invalid_params(format!(
            "--schema takes a JSON Schema or the path of a file holding one; cannot read {text}: {e}"
        ))
    })
}

fn library() -> Result<ModelLibrary> {
    Ok(ModelLibrary::open(&Paths::from_env()?))
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
