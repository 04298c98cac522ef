//! `[service_providers.NAME]`: the settings of one provider instance, a struct per kind, told
//! apart by `kind`.
//!
//! This module owns those shapes and the check that refuses a setting the kind does not take,
//! naming the kind and the settings it does take. It must never look a key up (that is
//! `secrets`) nor build a provider (that is `provider::kinds`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::is_secret_header;
use crate::error::{Error, ErrorKind, Result};

/// One configured transport: its `kind` and that kind's settings.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind")]
#[schemars(transform = no_other_settings)]
pub enum ProviderConfig {
    /// OpenAI and every OpenAI-compatible server.
    #[serde(rename = "openai")]
    OpenAi(HttpSettings),
    /// Anthropic's API.
    #[serde(rename = "anthropic")]
    Anthropic(HttpSettings),
    /// An Ollama server.
    #[serde(rename = "ollama")]
    Ollama(HttpSettings),
    /// Google's Gemini API.
    #[serde(rename = "gemini")]
    Gemini(HttpSettings),
    /// Azure OpenAI deployments.
    #[serde(rename = "azure-openai")]
    AzureOpenAi(AzureSettings),
    /// Any HTTP endpoint; the body comes from an `http-template` model configuration.
    #[serde(rename = "http")]
    Http(ConnectorSettings),
    /// Amazon Bedrock Runtime.
    #[serde(rename = "bedrock")]
    Bedrock(BedrockSettings),
    /// A GGUF model run in-process by llama.cpp.
    #[serde(rename = "local")]
    Local(LocalSettings),
}

/// The settings every HTTP kind takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct HttpSettings {
    /// The endpoint's base URL, such as `https://api.openai.com/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) base_url: Option<String>,
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
    pub(crate) default_model: Option<String>,
    /// Seconds allowed to open the connection (default 10).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::seconds"
    )]
    pub(crate) connect_timeout_secs: Option<f64>,
    /// Seconds allowed for a whole request, streaming included (default 600).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::seconds"
    )]
    pub(crate) timeout_secs: Option<f64>,
    /// Seconds allowed between two reads of the response (default 120).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::seconds"
    )]
    pub(crate) read_timeout_secs: Option<f64>,
    /// Extra HTTP headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    /// Retries after a connect error, 429 or 5xx, before the answer starts (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_retries: Option<u32>,
    /// Seconds that attempts and waits between them may take together (default 60).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::seconds"
    )]
    pub(crate) retry_budget_secs: Option<f64>,
    /// The most bytes one answer's body may have; past it the turn ends with an error
    /// (default 32 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_reply_bytes: Option<u64>,
    /// The most tokens one answer may have, counted as the streamed pieces (one token each
    /// from the providers genai knows) or the usage a whole answer reports; past it the turn
    /// ends with an error (default 262144).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_reply_tokens: Option<u64>,
    /// The most requests of this instance in flight at once (default 32); more wait their
    /// turn. A streamed answer holds its place until it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_concurrent_requests: Option<u32>,
    /// The most bytes of an error answer's body that are read (default 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_error_bytes: Option<u64>,
    /// The most bytes of one streamed event (an SSE event or an NDJSON line) (default 16 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) max_event_bytes: Option<u64>,
}

/// Kind `azure-openai`: the HTTP settings, the API version and the deployment.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct AzureSettings {
    #[serde(flatten)]
    pub http: HttpSettings,
    /// The `api-version` query parameter (default `OPENAI_API_VERSION`, else 2024-10-21); `v1`
    /// uses the version-less `/openai/v1/` API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) api_version: Option<String>,
    /// The deployment that serves every model of this instance (default: the model id is the
    /// deployment name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) deployment: Option<String>,
}

/// Kind `bedrock`: the HTTP settings (`api_key`: a Bedrock API key), the region and the AWS
/// profile.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct BedrockSettings {
    #[serde(flatten)]
    pub http: HttpSettings,
    /// The cloud region, such as `us-east-1` (default: `AWS_REGION`, `AWS_DEFAULT_REGION`, then
    /// the profile's region in `~/.aws/config`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) region: Option<String>,
    /// The profile of the shared AWS credentials and config files (default: `AWS_PROFILE`,
    /// then `default`). When set, it wins over `AWS_ACCESS_KEY_ID`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<String>,
}

/// Kind `http`: the HTTP settings (`base_url`: the whole URL, with placeholders), the method,
/// named credentials and the framing of a stream.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConnectorSettings {
    #[serde(flatten)]
    pub http: HttpSettings,
    /// The HTTP method of the request (default `POST`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<String>,
    /// Named credentials for `${credential.NAME}` in the URL, headers and body (`api_key`,
    /// `api_key_env` and `api_key_cmd` give the one named `api_key`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub credentials: BTreeMap<String, CredentialConfig>,
    /// How a streamed answer is framed, `sse` or `ndjson` (default: from its Content-Type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stream_framing: Option<String>,
}

/// `[service_providers.NAME.credentials.CRED]`: where one credential comes from, looked up like
/// an API key: `env`, then the OS keyring (user `NAME.CRED`), then `cmd`, then `value`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialConfig {
    /// The environment variable that holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// A shell command that prints it on stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    /// The value itself. Prefer the keyring (`genai keys set NAME.CRED`) or `env`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Kind `local`: the model and how the engine runs it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct LocalSettings {
    /// The model used when a conversation names none, read like `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// The model, a name in the models folder or a path to a `.gguf` file (default: the
    /// models folder's default model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Threads for prompt evaluation and generation (default: the physical cores, at most 4
    /// for generation, less the cores other processes keep busy when the engine starts: more
    /// threads than free cores makes generation much slower).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The context size in tokens of each slot, `n_ctx` (default 4096, capped by what the model
    /// was trained for). A prompt that does not fit is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_size: Option<u32>,
    /// How many contexts (slots) keep their KV cache between requests, so that that many
    /// conversations continue without evaluating their history again (default 4; 1 in
    /// `genai ask` and `genai chat`, which run one conversation at a time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots: Option<u32>,
    /// One KV cache shared by every slot (true), or a cache of `context_size` per slot as
    /// llama-server's `-np` (false, the default): a greedy reply is then the same whether or not
    /// other conversations run beside it, where llama.cpp's kernels allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_unified: Option<bool>,
}

impl ProviderConfig {
    /// Every kind, in the order they are listed to people.
    pub(crate) const KINDS: [&'static str; 8] = [
        "openai",
        "anthropic",
        "ollama",
        "gemini",
        "azure-openai",
        "http",
        "bedrock",
        "local",
    ];

    /// The kind's name, as written in `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderConfig::OpenAi(_) => "openai",
            ProviderConfig::Anthropic(_) => "anthropic",
            ProviderConfig::Ollama(_) => "ollama",
            ProviderConfig::Gemini(_) => "gemini",
            ProviderConfig::AzureOpenAi(_) => "azure-openai",
            ProviderConfig::Http(_) => "http",
            ProviderConfig::Bedrock(_) => "bedrock",
            ProviderConfig::Local(_) => "local",
        }
    }

    /// The settings of a kind, checked: an unknown kind is an `UnknownComponent` error naming
    /// the known kinds; a setting the kind does not take, or a value of the wrong type, is an
    /// `InvalidParams` error (`` `model` is not a setting of kind openai; accepted: ... ``).
    pub fn from_settings(kind: &str, settings: Map<String, Value>) -> Result<ProviderConfig> {
        ProviderConfig::read(kind, settings, true)
    }

    /// [`from_settings`](Self::from_settings), refusing a setting the kind does not take only
    /// when `check_names`.
    fn read(kind: &str, s: Map<String, Value>, check_names: bool) -> Result<ProviderConfig> {
        let c = check_names;
        match kind {
            "openai" => settings_of(kind, s, c).map(ProviderConfig::OpenAi),
            "anthropic" => settings_of(kind, s, c).map(ProviderConfig::Anthropic),
            "ollama" => settings_of(kind, s, c).map(ProviderConfig::Ollama),
            "gemini" => settings_of(kind, s, c).map(ProviderConfig::Gemini),
            "azure-openai" => settings_of(kind, s, c).map(ProviderConfig::AzureOpenAi),
            "http" => settings_of(kind, s, c).map(ProviderConfig::Http),
            "bedrock" => settings_of(kind, s, c).map(ProviderConfig::Bedrock),
            "local" => settings_of(kind, s, c).map(ProviderConfig::Local),
            other => Err(Error::new(
                ErrorKind::UnknownComponent,
                format!(
                    "unknown provider kind `{other}`; known: {}",
                    Self::KINDS.join(", ")
                ),
            )),
        }
    }

    /// A table as written in the config file: `kind` and the kind's settings.
    pub(crate) fn from_table(mut table: Map<String, Value>) -> Result<ProviderConfig> {
        let kind = match table.remove("kind") {
            Some(Value::String(kind)) => kind,
            Some(_) => return Err(Error::invalid_params("`kind` is not a string")),
            None => return Err(Error::invalid_params("missing field `kind`")),
        };
        ProviderConfig::from_settings(&kind, table)
    }

    /// Calls `f` on every secret of these settings: the key, a credential's value, a secret
    /// header.
    pub(crate) fn each_secret(&mut self, mut f: impl FnMut(&mut String)) {
        let http = match self {
            ProviderConfig::OpenAi(s)
            | ProviderConfig::Anthropic(s)
            | ProviderConfig::Ollama(s)
            | ProviderConfig::Gemini(s) => s,
            ProviderConfig::AzureOpenAi(s) => &mut s.http,
            ProviderConfig::Bedrock(s) => &mut s.http,
            ProviderConfig::Http(s) => {
                s.credentials
                    .values_mut()
                    .filter_map(|c| c.value.as_mut())
                    .for_each(&mut f);
                &mut s.http
            }
            ProviderConfig::Local(_) => return,
        };
        http.api_key.iter_mut().for_each(&mut f);
        for (name, value) in http.headers.iter_mut() {
            if is_secret_header(name) {
                f(value);
            }
        }
    }
}

/// In the JSON Schema too, a kind takes its own settings and no other.
fn no_other_settings(schema: &mut schemars::Schema) {
    if let Some(Value::Array(kinds)) = schema.get_mut("oneOf") {
        for kind in kinds.iter_mut().filter_map(Value::as_object_mut) {
            kind.insert("unevaluatedProperties".into(), Value::Bool(false));
        }
    }
}

/// The settings of one kind, after refusing any the kind does not take (when `check_names`).
fn settings_of<T: DeserializeOwned + JsonSchema>(
    kind: &str,
    settings: Map<String, Value>,
    check_names: bool,
) -> Result<T> {
    // The names come from the JSON Schema, built only when there is a setting to check (the
    // built-in instances made at every start have none).
    if check_names && !settings.is_empty() {
        let accepted = setting_names::<T>();
        if let Some(unknown) = settings.keys().find(|k| !accepted.contains(k)) {
            return Err(Error::invalid_params(format!(
                "`{unknown}` is not a setting of kind {kind}; accepted: {}",
                accepted.join(", ")
            )));
        }
    }
    serde_json::from_value(Value::Object(settings))
        .map_err(|e| Error::invalid_params(e.to_string()))
}

/// The settings a struct takes, flattened ones included: the properties of its JSON Schema,
/// the one description of the config file's shape.
fn setting_names<T: JsonSchema>() -> Vec<String> {
    let schema = schemars::schema_for!(T);
    let mut names: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// `[service_providers]`: every table checked by [`ProviderConfig::from_table`], its errors
/// prefixed with `service_providers.NAME`. A value of the wrong type for the kind named
/// before it is refused as it is read, so that the file's reader points at the value rather
/// than at the table.
pub(super) fn deserialize_providers<'de, D>(
    d: D,
) -> std::result::Result<BTreeMap<String, ProviderConfig>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    d.deserialize_map(Providers)
}

/// The `[service_providers]` table, one [`Provider`] per name.
struct Providers;

impl<'de> Visitor<'de> for Providers {
    type Value = BTreeMap<String, ProviderConfig>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table of service providers by name")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut providers = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            let provider = map.next_value_seed(Provider { name: &name })?;
            providers.insert(name, provider);
        }
        Ok(providers)
    }
}

/// One `[service_providers.NAME]` table.
struct Provider<'a> {
    name: &'a str,
}

impl<'de> DeserializeSeed<'de> for Provider<'_> {
    type Value = ProviderConfig;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<ProviderConfig, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Provider<'_> {
    type Value = ProviderConfig;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table with `kind` and the kind's settings")
    }

    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<ProviderConfig, A::Error> {
        let mut table = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let kind = table.get("kind").and_then(Value::as_str);
            let value = map.next_value_seed(Setting {
                provider: self.name,
                kind,
                key: &key,
            })?;
            table.insert(key, value);
        }
        ProviderConfig::from_table(table).map_err(|e| {
            de::Error::custom(format!("service_providers.{}: {}", self.name, e.message))
        })
    }
}

/// One setting's value, checked as it is read against the kind named before it, if any (a
/// setting the kind does not take is left to the whole table's check).
struct Setting<'a> {
    provider: &'a str,
    kind: Option<&'a str>,
    key: &'a str,
}

impl<'de> DeserializeSeed<'de> for Setting<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Value, D::Error> {
        let value = Value::deserialize(d)?;
        let kind = self.kind.filter(|k| ProviderConfig::KINDS.contains(k));
        if let Some(kind) = kind.filter(|_| self.key != "kind") {
            let alone = Map::from_iter([(self.key.to_string(), value.clone())]);
            if let Err(e) = ProviderConfig::read(kind, alone, false) {
                return Err(de::Error::custom(format!(
                    "service_providers.{}.{}: {}",
                    self.provider, self.key, e.message
                )));
            }
        }
        Ok(value)
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
