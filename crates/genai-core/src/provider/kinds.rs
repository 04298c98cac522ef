//! The HTTP provider kinds: a row per kind saying, as data, what sets it apart (the formats it
//! sends and the path of each, how it authenticates, where its key and base URL come from, its
//! default model and image limit).
//!
//! It owns that table and nothing else. It must never send a request (`remote` does, with the
//! hooks of the few kinds that differ), build an instance (`build` does) nor keep named
//! instances (the registry does).

use crate::embedding::wire as embed;
use crate::error::{Error, ErrorKind, Result};
use crate::format::{bedrock_converse, claude_messages, gemini, http_template};
use crate::format::{ollama_chat, openai_chat};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Where Ollama's host comes from when the config names none.
pub(crate) const OLLAMA_HOST_ENV: &str = "OLLAMA_HOST";
/// Where an Azure OpenAI resource's endpoint comes from when the config names none.
pub(crate) const AZURE_ENDPOINT_ENV: &str = "AZURE_OPENAI_ENDPOINT";

/// What sets one HTTP kind apart from the others.
pub struct HttpKind {
    pub name: &'static str,
    pub(crate) description: &'static str,
    /// The formats it sends, each with its path; the first is the default format.
    pub(crate) routes: &'static [Route],
    pub(crate) auth: Auth,
    /// The variable that holds the key when `api_key_env` is not set; read only by an
    /// instance that goes where the kind's well-known variables point
    /// (`remote::takes_well_known_key`).
    pub key_env: Option<&'static str>,
    /// Read instead when `key_env` is empty and this one is not, as the vendor's SDKs do.
    pub(crate) fallback_key_env: Option<&'static str>,
    /// The variable that gives the base URL when `base_url` is not set.
    pub(crate) base_url_env: Option<&'static str>,
    /// The base URL when neither gives one (`None`: it must be configured).
    pub(crate) default_base_url: Option<&'static str>,
    /// Host suffixes of the vendor's own service besides the default URL (Azure's resources
    /// each have a host of their own): the kind's key variable may go there too.
    pub(crate) own_hosts: &'static [&'static str],
    /// Whether the paths start with the API version (`/v1`, `/v1beta`) that a base URL ending
    /// in a version of its own replaces.
    pub(crate) versioned_base: bool,
    /// How the model id is written where a path says `{model}`.
    pub(crate) model_in_path: ModelInPath,
    pub(crate) default_model: Option<&'static str>,
    /// The largest inline image, in bytes, the vendor's endpoint takes.
    pub(crate) max_image_bytes: Option<usize>,
    /// Whether another base URL than the default reaches other servers that merely speak the
    /// API: there the key is optional, no image limit is known, the kind's default model and
    /// the vendor's prices do not apply.
    pub(crate) compatible_servers: bool,
    /// Where such a server lists its models (appended to the base URL): the first is its
    /// default model when the config names none.
    pub(crate) models_path: Option<&'static str>,
    /// Where it embeds texts (its `format` names the embeddings API, `crate::embedding::wire`);
    /// `None`: the kind has no embeddings.
    pub(crate) embeddings: Option<Route>,
}

/// One format a kind sends, and where.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) format: &'static str,
    /// Appended to the base URL; `{model}` stands for the model id.
    pub(crate) path: &'static str,
    /// The path of a streamed request, where it differs.
    pub(crate) stream_path: Option<&'static str>,
    /// The `Accept` of a streamed request.
    pub(crate) stream_accept: &'static str,
}

/// How a kind sends its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer KEY`; without a key nothing is sent, unless `required`.
    Bearer { required: bool },
    /// The key in a header of its own; always required.
    Header(&'static str),
    /// A Bedrock API key as a bearer token, else AWS Signature V4 (the `bedrock` hooks).
    SigV4,
    /// Named credentials placed by the URL, header and body templates (the `http` hooks).
    Template,
}

/// How a model id is written into a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelInPath {
    /// Percent-encoded into one segment, so that an ARN with `/` and `:` stays one.
    Escaped,
    /// As given, without a leading `models/`; an id with `/`, `?`, `#`, `:` or a space is
    /// refused as not an id of the vendor named here.
    Checked(&'static str),
}

/// What a kind has unless it says otherwise (`..BARE`): no key nor base URL variable, no default
/// URL nor model, no host of its own, unversioned paths, the model id escaped in a path, no image
/// limit, no compatible servers. Its name, description, routes and auth are placeholders that
/// every kind sets.
const BARE: HttpKind = HttpKind {
    name: "",
    description: "",
    routes: &[],
    auth: Auth::Template,
    key_env: None,
    fallback_key_env: None,
    base_url_env: None,
    default_base_url: None,
    own_hosts: &[],
    versioned_base: false,
    model_in_path: ModelInPath::Escaped,
    default_model: None,
    max_image_bytes: None,
    compatible_servers: false,
    models_path: None,
    embeddings: None,
};

const SSE: &str = "text/event-stream";
const NDJSON: &str = "application/x-ndjson";

pub(crate) const OPENAI: HttpKind = HttpKind {
    name: "openai",
    description:
        "OpenAI and any OpenAI-compatible server (base_url, OPENAI_BASE_URL, OPENAI_API_KEY)",
    routes: &[Route {
        format: openai_chat::FORMAT,
        path: "/chat/completions",
        stream_path: None,
        stream_accept: SSE,
    }],
    auth: Auth::Bearer { required: true },
    key_env: Some("OPENAI_API_KEY"),
    base_url_env: Some("OPENAI_BASE_URL"),
    default_base_url: Some("https://api.openai.com/v1"),
    default_model: Some("gpt-4o-mini"),
    max_image_bytes: Some(20_000_000),
    compatible_servers: true,
    models_path: Some("/models"),
    embeddings: Some(Route {
        format: embed::OPENAI,
        path: "/embeddings",
        stream_path: None,
        stream_accept: SSE,
    }),
    ..BARE
};

pub(crate) const ANTHROPIC: HttpKind = HttpKind {
    name: "anthropic",
    description: "Anthropic's API (base_url, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY)",
    routes: &[Route {
        format: claude_messages::FORMAT,
        path: "/v1/messages",
        stream_path: None,
        stream_accept: SSE,
    }],
    auth: Auth::Header("x-api-key"),
    key_env: Some("ANTHROPIC_API_KEY"),
    base_url_env: Some("ANTHROPIC_BASE_URL"),
    default_base_url: Some("https://api.anthropic.com"),
    versioned_base: true,
    default_model: Some("claude-sonnet-4-5"),
    // Anthropic refuses an image whose base64 data exceeds 5 MB (5,242,880 characters,
    // https://docs.anthropic.com/en/docs/build-with-claude/vision); images are counted in
    // decoded bytes, so the limit is the bytes that encode to 5 MB.
    max_image_bytes: Some(5 * 1024 * 1024 / 4 * 3),
    ..BARE
};

pub(crate) const OLLAMA: HttpKind = HttpKind {
    name: "ollama",
    description: "An Ollama server (base_url or OLLAMA_HOST, default http://127.0.0.1:11434; no key needed, OLLAMA_API_KEY sent as a bearer token if set)",
    routes: &[
        Route {
            format: ollama_chat::FORMAT,
            path: "/api/chat",
            stream_path: None,
            stream_accept: NDJSON,
        },
        Route {
            format: openai_chat::FORMAT,
            path: "/v1/chat/completions",
            stream_path: None,
            stream_accept: SSE,
        },
    ],
    auth: Auth::Bearer { required: false },
    key_env: Some("OLLAMA_API_KEY"),
    base_url_env: Some(OLLAMA_HOST_ENV),
    default_base_url: Some("http://127.0.0.1:11434"),
    default_model: Some("llama3.2"),
    embeddings: Some(Route {
        format: embed::OLLAMA,
        path: "/api/embed",
        stream_path: None,
        stream_accept: SSE,
    }),
    ..BARE
};

pub(crate) const GEMINI: HttpKind = HttpKind {
    name: "gemini",
    description: "Google's Gemini API (base_url or GEMINI_BASE_URL; GEMINI_API_KEY or GOOGLE_API_KEY, sent as x-goog-api-key)",
    routes: &[Route {
        format: gemini::FORMAT,
        path: "/v1beta/models/{model}:generateContent",
        stream_path: Some("/v1beta/models/{model}:streamGenerateContent?alt=sse"),
        stream_accept: SSE,
    }],
    // In a header, never in the URL (where proxies and logs would keep it).
    auth: Auth::Header("x-goog-api-key"),
    key_env: Some("GEMINI_API_KEY"),
    fallback_key_env: Some("GOOGLE_API_KEY"),
    base_url_env: Some("GEMINI_BASE_URL"),
    default_base_url: Some("https://generativelanguage.googleapis.com"),
    versioned_base: true,
    model_in_path: ModelInPath::Checked("Gemini"),
    default_model: Some("gemini-2.5-flash"),
    // A request with inline data may be 20 MB in all
    // (https://ai.google.dev/gemini-api/docs/image-understanding); base64 makes 15 MB of
    // image about 20 MB of request.
    max_image_bytes: Some(15_000_000),
    embeddings: Some(Route {
        format: embed::GEMINI,
        path: "/v1beta/models/{model}:batchEmbedContents",
        stream_path: None,
        stream_accept: SSE,
    }),
    ..BARE
};

pub(crate) const AZURE_OPENAI: HttpKind = HttpKind {
    name: "azure-openai",
    description: "Azure OpenAI deployments (base_url or AZURE_OPENAI_ENDPOINT, deployment, api_version or OPENAI_API_VERSION, AZURE_OPENAI_API_KEY)",
    routes: &[Route {
        format: openai_chat::FORMAT,
        // `/openai/v1/chat/completions` when `api_version = "v1"` (the `azure-openai` hooks).
        path: "/openai/deployments/{deployment}/chat/completions?api-version={api_version}",
        stream_path: None,
        stream_accept: SSE,
    }],
    auth: Auth::Header("api-key"),
    key_env: Some("AZURE_OPENAI_API_KEY"),
    base_url_env: Some(AZURE_ENDPOINT_ENV),
    own_hosts: &[".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"],
    // As OpenAI.
    max_image_bytes: Some(20_000_000),
    embeddings: Some(Route {
        format: embed::OPENAI,
        path: "/openai/deployments/{deployment}/embeddings?api-version={api_version}",
        stream_path: None,
        stream_accept: SSE,
    }),
    ..BARE
};

pub(crate) const HTTP: HttpKind = HttpKind {
    name: "http",
    description: "Any HTTP endpoint: base_url, method, headers, credentials; the body comes from an http-template model configuration",
    routes: &[Route {
        format: http_template::FORMAT,
        // `base_url` is the whole URL.
        path: "",
        stream_path: None,
        stream_accept: "text/event-stream, application/x-ndjson",
    }],
    auth: Auth::Template,
    ..BARE
};

pub(crate) const BEDROCK: HttpKind = HttpKind {
    name: "bedrock",
    description:
        "Amazon Bedrock Runtime (region, profile; AWS credentials or AWS_BEARER_TOKEN_BEDROCK)",
    routes: &[
        Route {
            format: bedrock_converse::FORMAT,
            path: "/model/{model}/converse",
            stream_path: Some("/model/{model}/converse-stream"),
            stream_accept: super::aws::event_stream::CONTENT_TYPE,
        },
        Route {
            format: claude_messages::FORMAT,
            path: "/model/{model}/invoke",
            stream_path: Some("/model/{model}/invoke-with-response-stream"),
            stream_accept: super::aws::event_stream::CONTENT_TYPE,
        },
    ],
    auth: Auth::SigV4,
    // A Bedrock API key, a bearer token that replaces SigV4.
    key_env: Some("AWS_BEARER_TOKEN_BEDROCK"),
    // Without `base_url`: AWS_ENDPOINT_URL_BEDROCK_RUNTIME, AWS_ENDPOINT_URL, else the
    // region's endpoint, found per request (the `bedrock` hooks).
    base_url_env: None,
    default_model: Some("anthropic.claude-3-haiku-20240307-v1:0"),
    // Converse `Message.content`: "Each image's size, height, and width must be no more than
    // 3.75 MB, 8000 px, and 8000 px".
    max_image_bytes: Some(3_750_000),
    embeddings: Some(Route {
        format: embed::BEDROCK,
        path: "/model/{model}/invoke",
        stream_path: None,
        stream_accept: SSE,
    }),
    ..BARE
};

/// Every HTTP kind, in the order `ListComponents` lists them.
pub const HTTP_KINDS: [&HttpKind; 7] = [
    &OPENAI,
    &ANTHROPIC,
    &OLLAMA,
    &GEMINI,
    &AZURE_OPENAI,
    &HTTP,
    &BEDROCK,
];

/// Everything but RFC 3986's unreserved characters.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

impl HttpKind {
    /// The formats it sends, the default first.
    pub(crate) fn formats(&self) -> Vec<&'static str> {
        self.routes.iter().map(|r| r.format).collect()
    }

    /// The route of a format. The registry lets only a kind's formats reach its instances, so
    /// this is the one place that refuses another, for every kind.
    pub(crate) fn route(&self, format: &str) -> Result<&'static Route> {
        self.routes
            .iter()
            .find(|r| r.format == format)
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::IncompatibleComponents,
                    format!(
                        "provider kind {} cannot send the {format} format; it sends {}",
                        self.name,
                        self.formats().join(", ")
                    ),
                )
            })
    }

    /// The model id as written where a path says `{model}`.
    pub(crate) fn model_in_path(&self, model: &str) -> Result<String> {
        match self.model_in_path {
            ModelInPath::Escaped => Ok(utf8_percent_encode(model, SEGMENT).to_string()),
            ModelInPath::Checked(vendor) => {
                let model = model.trim().trim_start_matches("models/");
                if model.is_empty() || model.contains(['/', '?', '#', ' ', ':']) {
                    return Err(Error::invalid_params(format!(
                        "`{model}` is not a {vendor} model id (such as {})",
                        self.default_model.unwrap_or("its default model")
                    )));
                }
                Ok(model.to_string())
            }
        }
    }
}
