//! The registration system: kinds of providers, model formats and features are
//! registered in code under a name; named instances come from the config or are created at run
//! time; and a compatibility table says which formats run on which provider kinds.
//!
//! The registry owns the kinds and the named instances. It must never hold a conversation or
//! an agent (that is the framework's job).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{Config, ModelConfigurationConfig, ProviderConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, Format, ModelConfiguration, ParameterSpec};
use crate::models::ModelLibrary;
use crate::provider::{self, ServiceProvider};

/// The provider kind that runs GGUF models from the models folder (cargo feature `local`).
pub const LOCAL_KIND: &str = "local";

/// Builds a provider instance from its name and settings.
pub type ProviderFactory = fn(&str, &ProviderConfig) -> Result<Arc<dyn ServiceProvider>>;

/// A registered provider kind.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderKind {
    pub name: &'static str,
    pub description: &'static str,
    /// The model formats this kind can send.
    pub formats: &'static [&'static str],
    /// The format of an ad-hoc model configuration (`provider:model`).
    pub default_format: &'static str,
    #[serde(skip)]
    pub factory: ProviderFactory,
}

/// A registered model format kind.
#[derive(Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormatKind {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: &'static [ParameterSpec],
    #[serde(skip)]
    pub format: &'static dyn Format,
}

impl FormatKind {
    /// The kind of a format, as listed.
    pub fn of(format: &'static dyn Format) -> FormatKind {
        let spec = format.spec();
        FormatKind {
            name: spec.name,
            description: spec.description,
            parameters: spec.parameters,
            format,
        }
    }
}

/// A registered feature: built in, or hosted by a client (`RegisterFeature`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeatureInfo {
    pub name: String,
    pub description: String,
    /// `builtin` or `client`.
    pub origin: &'static str,
}

/// A named provider instance.
#[derive(Clone)]
pub struct ProviderInstance {
    pub name: String,
    pub kind: &'static str,
    pub provider: Arc<dyn ServiceProvider>,
    /// `config`, `builtin` or `runtime`.
    pub origin: &'static str,
}

/// A named model configuration (a template; each agent gets its own copy).
#[derive(Clone)]
pub struct ModelInstance {
    pub name: String,
    pub format: &'static str,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub origin: &'static str,
}

/// The kinds and instances genai knows.
pub struct Registry {
    provider_kinds: Vec<ProviderKind>,
    format_kinds: Vec<FormatKind>,
    features: RwLock<BTreeMap<String, FeatureInfo>>,
    providers: RwLock<BTreeMap<String, ProviderInstance>>,
    models: RwLock<BTreeMap<String, ModelInstance>>,
}

/// What `ListComponents` reports.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    pub service_providers: Vec<ProviderInfo>,
    pub model_configurations: Vec<ModelInfo>,
    pub features: Vec<Value>,
    /// Registered kinds: `serviceProviders` (with the formats each runs) and `modelConfigurations` (with their parameters).
    pub kinds: Value,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub name: String,
    pub kind: String,
    pub default_model: Option<String>,
    pub origin: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub name: String,
    pub format: String,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub origin: String,
}

fn lock_err() -> Error {
    Error::internal("registry lock poisoned")
}

impl Registry {
    /// The registry with every built-in kind and no instance.
    pub fn new() -> Registry {
        let mut r = Registry {
            provider_kinds: Vec::new(),
            format_kinds: Vec::new(),
            features: RwLock::new(BTreeMap::new()),
            providers: RwLock::new(BTreeMap::new()),
            models: RwLock::new(BTreeMap::new()),
        };
        for f in format::ALL {
            r.register_format(FormatKind::of(*f));
        }
        r.register_provider(ProviderKind {
            name: provider::openai::KIND,
            description: "OpenAI and any OpenAI-compatible server (base_url, OPENAI_BASE_URL, OPENAI_API_KEY)",
            formats: &[format::openai_chat::FORMAT],
            default_format: format::openai_chat::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::openai::OpenAiProvider::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::anthropic::KIND,
            description: "Anthropic's API (base_url, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY)",
            formats: &[format::claude_messages::FORMAT],
            default_format: format::claude_messages::FORMAT,
            factory: |name, c| {
                Ok(Arc::new(
                    provider::anthropic::AnthropicProvider::from_config(name, c)?,
                ))
            },
        });
        r.register_provider(ProviderKind {
            name: provider::ollama::KIND,
            description: "An Ollama server (base_url or OLLAMA_HOST, default http://127.0.0.1:11434; no key needed, OLLAMA_API_KEY sent as a bearer token if set)",
            formats: &[format::ollama_chat::FORMAT, format::openai_chat::FORMAT],
            default_format: format::ollama_chat::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::ollama::OllamaProvider::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::gemini::KIND,
            description: "Google's Gemini API (base_url or GEMINI_BASE_URL; GEMINI_API_KEY or GOOGLE_API_KEY, sent as x-goog-api-key)",
            formats: &[format::gemini::FORMAT],
            default_format: format::gemini::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::gemini::GeminiProvider::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::azure_openai::KIND,
            description: "Azure OpenAI deployments (base_url or AZURE_OPENAI_ENDPOINT, deployment, api_version or OPENAI_API_VERSION, AZURE_OPENAI_API_KEY)",
            formats: &[format::openai_chat::FORMAT],
            default_format: format::openai_chat::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::azure_openai::AzureOpenAiProvider::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::http_connector::KIND,
            description: "Any HTTP endpoint: base_url, method, headers, credentials; the body comes from an http-template model configuration",
            formats: &[format::http_template::FORMAT],
            default_format: format::http_template::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::http_connector::HttpConnector::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::bedrock::KIND,
            description: "Amazon Bedrock Runtime (region, profile; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)",
            formats: &[format::bedrock_converse::FORMAT, format::claude_messages::FORMAT],
            default_format: format::bedrock_converse::FORMAT,
            factory: |name, c| Ok(Arc::new(provider::bedrock::BedrockProvider::from_config(name, c)?)),
        });
        r.register_provider(ProviderKind {
            name: provider::local::KIND,
            description:
                "A GGUF model run in-process by llama.cpp (model, threads, context_size, slots)",
            formats: &[format::openai_chat::FORMAT],
            default_format: format::openai_chat::FORMAT,
            factory: provider::local::create,
        });
        r.register_feature(
            crate::feature::assistant::NAME,
            crate::feature::assistant::DESCRIPTION,
            "builtin",
        );
        r.register_feature(
            crate::feature::tools::NAME,
            crate::feature::tools::DESCRIPTION,
            "builtin",
        );
        r
    }

    /// The registry with the config's instances and the built-in instances made from the environment.
    pub fn from_config(config: &Config) -> Result<Registry> {
        let r = Registry::new();
        for (name, c) in &config.service_providers {
            r.create_provider(name, c, "config").map_err(|e| {
                Error::new(
                    ErrorKind::Config,
                    format!("service_providers.{name}: {}", e.message),
                )
            })?;
        }
        // Azure has no endpoint to default to: built in only when the environment names one.
        let azure = std::env::var(provider::azure_openai::ENDPOINT_ENV)
            .is_ok_and(|e| !e.trim().is_empty())
            .then_some(provider::azure_openai::KIND);
        for kind in [
            provider::openai::KIND,
            provider::anthropic::KIND,
            provider::bedrock::KIND,
            provider::ollama::KIND,
            provider::gemini::KIND,
        ]
        .into_iter()
        .chain(azure)
        {
            if !r
                .providers
                .read()
                .map_err(|_| lock_err())?
                .contains_key(kind)
            {
                let c = ProviderConfig {
                    kind: kind.to_string(),
                    ..Default::default()
                };
                r.create_provider(kind, &c, "builtin")?;
            }
        }
        for (name, c) in &config.model_configurations {
            r.create_model(name, c, "config").map_err(|e| {
                Error::new(
                    ErrorKind::Config,
                    format!("model_configurations.{name}: {}", e.message),
                )
            })?;
        }
        Ok(r)
    }

    /// Zero config: with no `[service_providers]` and no `[defaults] model`, the
    /// default model of the models folder runs on an implicit provider instance `local` (kind
    /// `local`, `default_model` = the model's name), added here and only here. Returns the
    /// instance name and the model name (which the `local` kind resolves with
    /// [`ModelLibrary::resolve`]), or a `Config` error saying how to add a model or a provider.
    pub fn implicit_local(&self, config: &Config, lib: &ModelLibrary) -> Result<(String, String)> {
        let no_model = |msg: String| Err(Error::new(ErrorKind::Config, msg));
        if !config.service_providers.is_empty() || config.defaults.model.is_some() {
            return no_model(
                "no model chosen: pass -m PROVIDER:MODEL (such as openai:gpt-4o-mini), or set `model` under [defaults] in the config".into(),
            );
        }
        if !cfg!(feature = "local") || self.provider_kind(LOCAL_KIND).is_err() {
            return no_model(
                "no model provider is configured, and this genai was built without the `local` feature so it cannot run local models: configure a provider (see `genai config path`), set OPENAI_API_KEY, or rebuild with `cargo build --features local`".into(),
            );
        }
        let Some(name) = lib.default_name()? else {
            let count = lib.list()?.len();
            if count > 0 {
                return no_model(format!(
                    "no model provider is configured and {count} local models are installed but none is the default: choose one with `genai models default NAME`"
                ));
            }
            return no_model(
                "no model provider is configured and no local model is installed: run `scripts/install-demo-model.sh` or `genai models pull URL`, or configure a provider (see `genai config path`)".into(),
            );
        };
        let exists = self
            .providers
            .read()
            .map_err(|_| lock_err())?
            .contains_key(LOCAL_KIND);
        if !exists {
            let c = ProviderConfig {
                kind: LOCAL_KIND.to_string(),
                default_model: Some(name.clone()),
                ..Default::default()
            };
            self.create_provider(LOCAL_KIND, &c, "builtin")?;
        }
        Ok((LOCAL_KIND.to_string(), name))
    }

    pub fn register_provider(&mut self, kind: ProviderKind) {
        self.provider_kinds.push(kind);
    }

    pub fn register_format(&mut self, kind: FormatKind) {
        self.format_kinds.push(kind);
    }

    /// Registers a feature by name (built in, or hosted by a client).
    pub fn register_feature(&self, name: &str, description: &str, origin: &'static str) {
        if let Ok(mut f) = self.features.write() {
            f.insert(
                name.to_string(),
                FeatureInfo {
                    name: name.into(),
                    description: description.into(),
                    origin,
                },
            );
        }
    }

    pub fn feature(&self, name: &str) -> Result<FeatureInfo> {
        let features = self.features.read().map_err(|_| lock_err())?;
        features.get(name).cloned().ok_or_else(|| {
            let names: Vec<&String> = features.keys().collect();
            Error::new(
                ErrorKind::UnknownComponent,
                format!("no feature named `{name}`; known: {}", join(names)),
            )
        })
    }

    pub fn provider_kind(&self, name: &str) -> Result<&ProviderKind> {
        self.provider_kinds
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::UnknownComponent,
                    format!(
                        "unknown provider kind `{name}`; known: {}",
                        join(self.provider_kinds.iter().map(|k| k.name))
                    ),
                )
            })
    }

    pub fn format_kind(&self, name: &str) -> Result<&FormatKind> {
        self.format_kinds
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::UnknownComponent,
                    format!(
                        "unknown model format `{name}`; known: {}",
                        join(self.format_kinds.iter().map(|k| k.name))
                    ),
                )
            })
    }

    /// Creates (or replaces) a named provider instance.
    pub fn create_provider(
        &self,
        name: &str,
        c: &ProviderConfig,
        origin: &'static str,
    ) -> Result<()> {
        check_name(name)?;
        let kind = self.provider_kind(&c.kind)?;
        let provider = (kind.factory)(name, c)?;
        let inst = ProviderInstance {
            name: name.to_string(),
            kind: kind.name,
            provider,
            origin,
        };
        self.providers
            .write()
            .map_err(|_| lock_err())?
            .insert(name.to_string(), inst);
        Ok(())
    }

    /// Creates (or replaces) a named model configuration, validating every parameter.
    pub fn create_model(
        &self,
        name: &str,
        c: &ModelConfigurationConfig,
        origin: &'static str,
    ) -> Result<()> {
        check_name(name)?;
        let kind = self.format_kind(&c.format)?;
        let mut probe = ModelConfiguration::new(kind.format, c.model.clone());
        for (k, v) in &c.parameters {
            probe.set_parameter(k, v.clone())?;
        }
        let inst = ModelInstance {
            name: name.to_string(),
            format: kind.name,
            model: c.model.clone(),
            parameters: probe.parameters,
            origin,
        };
        self.models
            .write()
            .map_err(|_| lock_err())?
            .insert(name.to_string(), inst);
        Ok(())
    }

    /// Removes a named instance (provider or model configuration); false when none had that name.
    pub fn remove(&self, name: &str) -> Result<bool> {
        let a = self
            .providers
            .write()
            .map_err(|_| lock_err())?
            .remove(name)
            .is_some();
        let b = self
            .models
            .write()
            .map_err(|_| lock_err())?
            .remove(name)
            .is_some();
        Ok(a || b)
    }

    pub fn provider(&self, name: &str) -> Result<ProviderInstance> {
        let providers = self.providers.read().map_err(|_| lock_err())?;
        providers.get(name).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownComponent,
                format!(
                    "no service provider named `{name}`; known: {}",
                    join(providers.keys())
                ),
            )
        })
    }

    pub fn model_instance(&self, name: &str) -> Result<ModelInstance> {
        let models = self.models.read().map_err(|_| lock_err())?;
        models.get(name).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::UnknownComponent,
                format!(
                    "no model configuration named `{name}`; known: {}",
                    join(models.keys())
                ),
            )
        })
    }

    /// Fails with a message naming the valid pairs when `format` cannot run on `provider_kind`.
    pub fn check_compatible(&self, provider_kind: &str, format: &str) -> Result<()> {
        let kind = self.provider_kind(provider_kind)?;
        if kind.formats.contains(&format) {
            return Ok(());
        }
        let hosts: Vec<&str> = self
            .provider_kinds
            .iter()
            .filter(|k| k.formats.contains(&format))
            .map(|k| k.name)
            .collect();
        Err(Error::new(
            ErrorKind::IncompatibleComponents,
            format!(
                "format {format} cannot run on provider kind {provider_kind}; {provider_kind} runs: {}; {format} runs on: {}",
                kind.formats.join(", "),
                if hosts.is_empty() { "no provider".to_string() } else { hosts.join(", ") }
            ),
        ))
    }

    /// Builds a model configuration for a provider: from a named instance, or from a model id with
    /// the provider's default format (or its default model when neither is given). Checks compatibility.
    pub fn build_model(
        &self,
        provider: &ProviderInstance,
        model_configuration: Option<&str>,
        model: Option<&str>,
        parameters: Option<&Map<String, Value>>,
    ) -> Result<ModelConfiguration> {
        let mut config = match model_configuration {
            Some(name) => {
                let inst = self.model_instance(name)?;
                self.check_compatible(provider.kind, inst.format)?;
                ModelConfiguration {
                    format: self.format_kind(inst.format)?.format,
                    model: inst.model,
                    parameters: inst.parameters,
                }
            }
            None => {
                let kind = self.provider_kind(provider.kind)?;
                let model = model.or(provider.provider.default_model()).ok_or_else(|| {
                    Error::invalid_params(format!(
                        "provider `{}` has no default model: name one",
                        provider.name
                    ))
                })?;
                ModelConfiguration::new(self.format_kind(kind.default_format)?.format, model)
            }
        };
        for (k, v) in parameters.into_iter().flatten() {
            config.set_parameter(k, v.clone())?;
        }
        Ok(config)
    }

    /// The kinds and instances, for `ListComponents` and `genai components`.
    pub fn components(&self) -> Result<Components> {
        let providers = self.providers.read().map_err(|_| lock_err())?;
        let models = self.models.read().map_err(|_| lock_err())?;
        let features = self.features.read().map_err(|_| lock_err())?;
        Ok(Components {
            service_providers: providers
                .values()
                .map(|p| ProviderInfo {
                    name: p.name.clone(),
                    kind: p.kind.to_string(),
                    default_model: p.provider.default_model().map(str::to_string),
                    origin: p.origin.to_string(),
                })
                .collect(),
            model_configurations: models
                .values()
                .map(|m| ModelInfo {
                    name: m.name.clone(),
                    format: m.format.to_string(),
                    model: m.model.clone(),
                    parameters: m.parameters.clone(),
                    origin: m.origin.to_string(),
                })
                .collect(),
            features: features
                .values()
                .map(|f| serde_json::to_value(f).unwrap_or(Value::Null))
                .collect(),
            kinds: serde_json::json!({
                "serviceProviders": self.provider_kinds,
                "modelConfigurations": self.format_kinds,
            }),
        })
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains(':') || name.chars().any(char::is_whitespace) {
        return Err(Error::invalid_params(format!(
            "`{name}` is not a valid instance name (no spaces or `:`)"
        )));
    }
    Ok(())
}

fn join<I: IntoIterator<Item = S>, S: std::fmt::Display>(items: I) -> String {
    let v: Vec<String> = items.into_iter().map(|s| s.to_string()).collect();
    if v.is_empty() {
        "none".to_string()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_openai_and_compatibility() {
        let r = Registry::from_config(&Config::default()).unwrap();
        let p = r.provider("openai").unwrap();
        assert_eq!(p.kind, "openai");
        assert!(r.check_compatible("openai", "openai-chat").is_ok());
        let e = r.check_compatible("openai", "claude-messages").unwrap_err();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
        assert!(
            e.message.contains("openai runs: openai-chat"),
            "{}",
            e.message
        );
        let m = r.build_model(&p, None, Some("gpt-x"), None).unwrap();
        assert_eq!(
            (m.format.name(), m.model.as_str()),
            ("openai-chat", "gpt-x")
        );
    }

    /// A stand-in for the `local` kind (built by the `local` feature), on the openai transport.
    fn with_fake_local_kind() -> Registry {
        let mut r = Registry::from_config(&Config::default()).unwrap();
        r.register_provider(ProviderKind {
            name: LOCAL_KIND,
            description: "test stand-in",
            formats: &[format::openai_chat::FORMAT],
            default_format: format::openai_chat::FORMAT,
            factory: |name, c| {
                Ok(Arc::new(provider::openai::OpenAiProvider::from_config(
                    name, c,
                )?))
            },
        });
        r
    }

    #[test]
    fn implicit_local_needs_the_kind_and_a_default_model_and_no_configured_provider() {
        let d = tempfile::tempdir().unwrap();
        let lib = ModelLibrary::at(d.path());
        if !cfg!(feature = "local") {
            let e = Registry::new()
                .implicit_local(&Config::default(), &lib)
                .unwrap_err();
            assert_eq!(e.kind, ErrorKind::Config);
            assert!(
                e.message.contains("without the `local` feature"),
                "{}",
                e.message
            );
            return;
        }

        let r = with_fake_local_kind();
        let e = r.implicit_local(&Config::default(), &lib).unwrap_err();
        assert!(
            e.message.contains("scripts/install-demo-model.sh"),
            "{}",
            e.message
        );
        assert!(
            r.provider(LOCAL_KIND).is_err(),
            "no instance without a model"
        );

        std::fs::write(lib.path_of("a"), b"x").unwrap();
        std::fs::write(lib.path_of("b"), b"x").unwrap();
        let e = r.implicit_local(&Config::default(), &lib).unwrap_err();
        assert!(
            e.message.contains("genai models default NAME"),
            "{}",
            e.message
        );

        lib.set_default("b").unwrap();
        let (p, m) = r.implicit_local(&Config::default(), &lib).unwrap();
        assert_eq!((p.as_str(), m.as_str()), ("local", "b"));
        let inst = r.provider("local").unwrap();
        assert_eq!((inst.kind, inst.origin), ("local", "builtin"));
        assert_eq!(inst.provider.default_model(), Some("b"));

        let configured = Config::parse("[service_providers.work]\nkind = 'openai'").unwrap();
        let e = with_fake_local_kind()
            .implicit_local(&configured, &lib)
            .unwrap_err();
        assert!(e.message.contains("no model chosen"), "{}", e.message);
    }

    #[test]
    fn builtin_anthropic_runs_claude_messages_only() {
        let r = Registry::from_config(&Config::default()).unwrap();
        let p = r.provider("anthropic").unwrap();
        assert_eq!(p.kind, "anthropic");
        assert!(r.check_compatible("anthropic", "claude-messages").is_ok());
        let e = r.check_compatible("anthropic", "openai-chat").unwrap_err();
        assert!(
            e.message.contains("anthropic runs: claude-messages"),
            "{}",
            e.message
        );
        let m = r.build_model(&p, None, None, None).unwrap();
        assert_eq!(
            (m.format.name(), m.model.as_str()),
            ("claude-messages", "claude-sonnet-4-5")
        );
    }

    #[test]
    fn builtin_ollama_runs_both_of_its_formats() {
        let r = Registry::from_config(&Config::default()).unwrap();
        let p = r.provider("ollama").unwrap();
        assert_eq!(p.kind, "ollama");
        assert!(r.check_compatible("ollama", "openai-chat").is_ok());
        let m = r.build_model(&p, None, Some("qwen3"), None).unwrap();
        assert_eq!(
            (m.format.name(), m.model.as_str()),
            ("ollama-chat", "qwen3")
        );
        assert!(r.check_compatible("openai", "ollama-chat").is_err());
        let g = r.provider("gemini").unwrap();
        let m = r.build_model(&g, None, None, None).unwrap();
        assert_eq!(
            (m.format.name(), m.model.as_str()),
            ("gemini", "gemini-2.5-flash")
        );
        assert!(r.check_compatible("gemini", "openai-chat").is_err());
    }

    #[test]
    fn bad_parameters_in_config_are_refused() {
        let c = Config::parse(
            "[model_configurations.m]\nformat='openai-chat'\nmodel='x'\nparameters={temperature=9}",
        )
        .unwrap();
        let e = Registry::from_config(&c).err().unwrap();
        assert!(
            e.message.contains("model_configurations.m"),
            "{}",
            e.message
        );
    }
}
