//! The registration system, after the seed framework's: kinds of providers, model formats and
//! features are registered in code under a name; named instances come from the config or are
//! created at run time; and a compatibility table says which formats run on which provider
//! kinds.
//!
//! The registry owns the kinds and the named instances. It must never hold a conversation or
//! an agent (the session does), decide which provider a conversation gets (`select` does), nor
//! know a wire format's shape of its listings (front-ends render [`Components`]).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::{Map, Value};

use crate::config::{Config, LocalSettings, ModelConfigurationConfig, ProviderConfig};
use crate::error::{known, Error, ErrorKind, Result};
use crate::format::{self, Format, ModelConfiguration, ParameterSpec};
use crate::provider::{self, ServiceProvider};

/// The provider kind that runs GGUF models from the models folder (its engine: `genai-local`).
pub(crate) const LOCAL_KIND: &str = "local";

pub(crate) use crate::provider::build::ProviderKind;

/// A registered model format kind.
#[derive(Clone)]
pub struct FormatKind {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: &'static [ParameterSpec],
    pub(crate) format: &'static dyn Format,
}

impl FormatKind {
    /// The kind of a format, as listed.
    pub(crate) fn of(format: &'static dyn Format) -> FormatKind {
        let spec = format.spec();
        FormatKind {
            name: spec.name,
            description: spec.description,
            parameters: spec.parameters,
            format,
        }
    }
}

/// Where a named component comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Made by genai itself (a built-in feature, a provider instance named after its kind).
    Builtin,
    /// A section of the config file.
    Config,
    /// Created by a client while genai runs.
    Runtime,
    /// A feature hosted by a client.
    Client,
}

impl Origin {
    /// The name shown to people and clients.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Builtin => "builtin",
            Origin::Config => "config",
            Origin::Runtime => "runtime",
            Origin::Client => "client",
        }
    }
}

/// A registered feature: built in, or hosted by a client.
#[derive(Debug, Clone)]
pub struct FeatureInfo {
    pub name: String,
    pub description: String,
    pub origin: Origin,
}

/// A named provider instance.
#[derive(Clone)]
pub struct ProviderInstance {
    pub name: String,
    pub kind: &'static str,
    pub provider: Arc<dyn ServiceProvider>,
    pub origin: Origin,
}

/// A named model configuration (a template; each agent gets its own copy).
#[derive(Clone)]
pub struct ModelInstance {
    pub name: String,
    pub format: &'static str,
    pub model: String,
    pub parameters: Map<String, Value>,
    pub origin: Origin,
}

/// The kinds and instances genai knows.
pub struct Registry {
    provider_kinds: Vec<ProviderKind>,
    format_kinds: Vec<FormatKind>,
    features: RwLock<BTreeMap<String, FeatureInfo>>,
    providers: RwLock<BTreeMap<String, ProviderInstance>>,
    models: RwLock<BTreeMap<String, ModelInstance>>,
}

/// Every kind and named instance, as `ListComponents` and `genai components` list them.
pub struct Components {
    pub service_providers: Vec<ProviderInstance>,
    pub model_configurations: Vec<ModelInstance>,
    pub features: Vec<FeatureInfo>,
    pub provider_kinds: Vec<ProviderKind>,
    pub format_kinds: Vec<FormatKind>,
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
        for kind in provider::build::registrations() {
            r.register_provider(kind);
        }
        r
    }

    /// The registry with the config's instances, the built-in instances made from the
    /// environment, and the built-in `local` engine.
    pub fn from_config(config: &Config) -> Result<Registry> {
        let r = Registry::new();
        // A config section's error names the section.
        let section = |table: &str, name: &str| {
            let at = format!("{table}.{name}");
            move |e: Error| Error::new(ErrorKind::Config, format!("{at}: {}", e.message))
        };
        for (name, c) in &config.service_providers {
            r.create_provider(name, c, Origin::Config)
                .map_err(section("service_providers", name))?;
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
                let c = ProviderConfig::from_settings(kind, Map::new())?;
                r.create_provider(kind, &c, Origin::Builtin)?;
            }
        }
        // The in-process engine when one is installed, whatever the config holds (its default
        // model: the models folder's default), unless the config names another instance `local`.
        if provider::local::installed() && r.provider(LOCAL_KIND).is_err() {
            let c = ProviderConfig::Local(LocalSettings::default());
            r.create_provider(LOCAL_KIND, &c, Origin::Builtin)?;
        }
        for (name, c) in &config.model_configurations {
            r.create_model(name, c, Origin::Config)
                .map_err(section("model_configurations", name))?;
        }
        Ok(r)
    }

    /// Adds the implicit zero-config instance `local` (kind `local`) running `model`, unless an
    /// instance of that name exists (the built-in one is made again when the models folder's
    /// default changed since it was made). Only the selection policy (`select`) decides to
    /// call it.
    pub(crate) fn add_implicit_local(&self, model: &str) -> Result<()> {
        if let Ok(p) = self.provider(LOCAL_KIND) {
            if p.origin != Origin::Builtin || p.provider.default_model() == Some(model) {
                return Ok(());
            }
        }
        let c = ProviderConfig::Local(LocalSettings {
            default_model: Some(model.to_string()),
            ..Default::default()
        });
        self.create_provider(LOCAL_KIND, &c, Origin::Builtin)
    }

    /// Adds a provider instance made elsewhere (tests' in-process providers).
    #[cfg(any(test, feature = "testing"))]
    pub fn insert_provider(
        &self,
        name: &str,
        kind: &'static str,
        provider: Arc<dyn ServiceProvider>,
    ) {
        let inst = ProviderInstance {
            name: name.to_string(),
            kind,
            provider,
            origin: Origin::Runtime,
        };
        self.providers
            .write()
            .unwrap()
            .insert(name.to_string(), inst);
    }

    pub(crate) fn register_provider(&mut self, kind: ProviderKind) {
        self.provider_kinds.push(kind);
    }

    pub(crate) fn register_format(&mut self, kind: FormatKind) {
        self.format_kinds.push(kind);
    }

    /// Registers a feature by name (built in, or hosted by a client).
    pub(crate) fn register_feature(&self, name: &str, description: &str, origin: Origin) {
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

    pub(crate) fn feature(&self, name: &str) -> Result<FeatureInfo> {
        named(&self.features, name, "feature")
    }

    pub(crate) fn provider_kind(&self, name: &str) -> Result<&ProviderKind> {
        kind_named(&self.provider_kinds, |k| k.name, name, "provider kind")
    }

    pub(crate) fn format_kind(&self, name: &str) -> Result<&FormatKind> {
        kind_named(&self.format_kinds, |k| k.name, name, "model format")
    }

    /// Creates (or replaces) a named provider instance.
    pub(crate) fn create_provider(
        &self,
        name: &str,
        c: &ProviderConfig,
        origin: Origin,
    ) -> Result<()> {
        check_name(name)?;
        let kind = self.provider_kind(c.kind())?;
        let provider = (kind.factory)(name, c)?;
        let inst = ProviderInstance {
            name: name.to_string(),
            kind: kind.name,
            provider,
            origin,
        };
        put(&self.providers, name, inst)
    }

    /// Creates (or replaces) a named model configuration, validating every parameter.
    pub(crate) fn create_model(
        &self,
        name: &str,
        c: &ModelConfigurationConfig,
        origin: Origin,
    ) -> Result<()> {
        check_name(name)?;
        let kind = self.format_kind(&c.format)?;
        let mut probe = ModelConfiguration::new(kind.format, c.model.clone());
        for (k, v) in &c.parameters {
            probe.set_parameter(k, v.clone())?;
        }
        let caching = [
            ("cache", c.cache.map(Value::Bool)),
            ("cache_ttl", c.cache_ttl.clone().map(Value::String)),
        ];
        for (k, v) in caching.into_iter().filter_map(|(k, v)| Some((k, v?))) {
            probe.set_parameter(k, v).map_err(|e| match e.message.contains("not a parameter") {
                true => Error::new(
                    e.kind,
                    format!(
                        "`{k}` applies to the claude-messages and bedrock-converse formats, not {}                          (OpenAI and Gemini cache prompts by themselves)",
                        c.format
                    ),
                ),
                false => e,
            })?;
        }
        let inst = ModelInstance {
            name: name.to_string(),
            format: kind.name,
            model: c.model.clone(),
            parameters: probe.parameters,
            origin,
        };
        put(&self.models, name, inst)
    }

    /// Removes a named instance (provider or model configuration); false when none had that name.
    pub(crate) fn remove(&self, name: &str) -> Result<bool> {
        let a = take(&self.providers, name)?;
        let b = take(&self.models, name)?;
        Ok(a || b)
    }

    pub(crate) fn provider(&self, name: &str) -> Result<ProviderInstance> {
        named(&self.providers, name, "service provider")
    }

    pub(crate) fn model_instance(&self, name: &str) -> Result<ModelInstance> {
        named(&self.models, name, "model configuration")
    }

    /// Fails with a message naming the valid pairs when `format` cannot run on `provider_kind`.
    pub(crate) fn check_compatible(&self, provider_kind: &str, format: &str) -> Result<()> {
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
    pub(crate) fn build_model(
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
                let model = match model {
                    Some(m) => m.to_string(),
                    None => provider.provider.resolve_default_model()?,
                };
                ModelConfiguration::new(self.format_kind(kind.default_format)?.format, &model)
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
            service_providers: providers.values().cloned().collect(),
            model_configurations: models.values().cloned().collect(),
            features: features.values().cloned().collect(),
            provider_kinds: self.provider_kinds.clone(),
            format_kinds: self.format_kinds.clone(),
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

/// Sets the entry `name` of one of the registry's maps.
fn put<T>(map: &RwLock<BTreeMap<String, T>>, name: &str, value: T) -> Result<()> {
    map.write()
        .map_err(|_| lock_err())?
        .insert(name.to_string(), value);
    Ok(())
}

/// Removes the entry `name` of one of the registry's maps; false when there was none.
fn take<T>(map: &RwLock<BTreeMap<String, T>>, name: &str) -> Result<bool> {
    Ok(map.write().map_err(|_| lock_err())?.remove(name).is_some())
}

/// The entry `name` of one of the registry's maps, or an error naming the known ones.
fn named<T: Clone>(map: &RwLock<BTreeMap<String, T>>, name: &str, what: &str) -> Result<T> {
    let map = map.read().map_err(|_| lock_err())?;
    map.get(name).cloned().ok_or_else(|| {
        Error::new(
            ErrorKind::UnknownComponent,
            format!("no {what} named `{name}`; known: {}", known(map.keys())),
        )
    })
}

/// The kind called `name` among `kinds`, or an error naming the known ones.
fn kind_named<'k, K>(
    kinds: &'k [K],
    name_of: fn(&K) -> &'static str,
    name: &str,
    what: &str,
) -> Result<&'k K> {
    kinds.iter().find(|k| name_of(k) == name).ok_or_else(|| {
        Error::new(
            ErrorKind::UnknownComponent,
            format!(
                "unknown {what} `{name}`; known: {}",
                known(kinds.iter().map(name_of))
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format and model id of an ad-hoc model configuration on a built-in provider.
    fn model_of(r: &Registry, provider: &str, model: Option<&str>) -> (&'static str, String) {
        let p = r.provider(provider).unwrap();
        assert_eq!(
            p.kind, provider,
            "built-in instances are named after their kind"
        );
        let m = r.build_model(&p, None, model, None).unwrap();
        (m.format.name(), m.model)
    }

    /// The message refusing `format` on `kind`.
    fn refusal(r: &Registry, kind: &str, format: &str) -> String {
        let e = r.check_compatible(kind, format).unwrap_err();
        assert_eq!(e.kind, ErrorKind::IncompatibleComponents);
        e.message
    }

    #[test]
    fn builtin_openai_and_anthropic_run_their_own_format_only() {
        let r = Registry::from_config(&Config::default()).unwrap();
        for (kind, own, other, model, want) in [
            (
                "openai",
                "openai-chat",
                "claude-messages",
                Some("gpt-x"),
                "gpt-x",
            ),
            (
                "anthropic",
                "claude-messages",
                "openai-chat",
                None,
                "claude-sonnet-4-5",
            ),
        ] {
            assert!(r.check_compatible(kind, own).is_ok());
            let e = refusal(&r, kind, other);
            assert!(e.contains(&format!("{kind} runs: {own}")), "{e}");
            assert_eq!(model_of(&r, kind, model), (own, want.to_string()));
        }
    }

    #[test]
    fn builtin_ollama_runs_both_of_its_formats() {
        let r = Registry::from_config(&Config::default()).unwrap();
        assert!(r.check_compatible("ollama", "openai-chat").is_ok());
        assert_eq!(
            model_of(&r, "ollama", Some("qwen3")),
            ("ollama-chat", "qwen3".into())
        );
        refusal(&r, "openai", "ollama-chat");
        assert_eq!(
            model_of(&r, "gemini", None),
            ("gemini", "gemini-2.5-flash".into())
        );
        refusal(&r, "gemini", "openai-chat");
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
