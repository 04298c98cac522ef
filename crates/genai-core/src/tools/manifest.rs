//! Plugin module manifests (`/.well-known/ai-plugin.json`): validation against the committed
//! JSON Schema `schemas/plugin-manifest.json`, the signature of each function, and the tools
//! they become.
//!
//! It owns reading a manifest. It must never fetch one or call a module (see `plugin.rs`).

use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::signature;
use super::Tool;

/// The committed schema, the contract for module authors.
pub(crate) const SCHEMA: &str = include_str!("../../../../schemas/plugin-manifest.json");

/// A manifest that passed validation.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    pub schema_version: String,
    #[serde(default)]
    pub name_for_human: Option<String>,
    pub name_for_model: String,
    #[serde(default)]
    pub description_for_human: Option<String>,
    pub description_for_model: String,
    pub auth: Auth,
    pub(crate) api: Api,
    #[serde(default)]
    pub logo_url: Option<String>,
    #[serde(default)]
    pub contact_email: Option<String>,
    #[serde(default)]
    pub legal_info_url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Auth {
    None,
    /// The key (stored per module) goes in `X-API-KEY` to the module's own origin.
    ServiceApiKey,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Api {
    pub(crate) functions: Vec<Function>,
    pub(crate) endpoint: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Function {
    pub(crate) method: String,
    pub(crate) name: String,
    pub(crate) description: String,
}

/// One thing wrong with a manifest, at a JSON pointer such as `/api/functions/1/method`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub(crate) path: String,
    pub(crate) message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "{path}: {}", self.message)
    }
}

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value = serde_json::from_str(SCHEMA).expect("the committed schema is JSON");
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("the committed schema is valid")
    })
}

impl Manifest {
    /// Validates a manifest and reports every problem with its path: the schema's, then each
    /// signature that does not parse, then duplicate function names.
    pub fn parse(value: &Value) -> Result<Manifest, Vec<Problem>> {
        let mut problems: Vec<Problem> = validator()
            .iter_errors(value)
            .map(|e| Problem {
                path: e.instance_path().to_string(),
                message: e.to_string(),
            })
            .collect();
        let functions = value
            .pointer("/api/functions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut names = Vec::new();
        for (i, f) in functions.iter().enumerate() {
            if let Some(method) = f.get("method").and_then(Value::as_str) {
                if let Err(e) = signature::parse(method) {
                    problems.push(Problem {
                        path: format!("/api/functions/{i}/method"),
                        message: format!("the signature does not parse {e}"),
                    });
                }
            }
            if let Some(name) = f.get("name").and_then(Value::as_str) {
                if names.contains(&name) {
                    problems.push(Problem {
                        path: format!("/api/functions/{i}/name"),
                        message: format!("`{name}` names two functions"),
                    });
                }
                names.push(name);
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        serde_json::from_value(value.clone()).map_err(|e| {
            vec![Problem {
                path: String::new(),
                message: e.to_string(),
            }]
        })
    }

    /// The tools this module offers, named `MODULE.function`.
    pub fn tools(&self, module: &str) -> Vec<Tool> {
        self.api
            .functions
            .iter()
            .map(|f| {
                let schema = signature::parse(&f.method)
                    .map(|s| s.input_schema())
                    .unwrap_or(Value::Null);
                Tool {
                    name: format!("{module}.{}", f.name),
                    description: f.description.clone(),
                    input_schema: schema,
                    source: format!("plugin:{module}"),
                    read_only: false,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The example manifest of the plugin module documentation, as JSON.
    pub(crate) fn documented() -> Value {
        json!({
            "schema_version": "v1",
            "name_for_human": "ActInTech Events",
            "name_for_model": "actintech",
            "description_for_human": "Access ActInTech events and manage your participation.",
            "description_for_model": "Help the user with ActInTech events. You can view events and manage the participation status of the user.",
            "auth": {"type": "none"},
            "api": {
                "type": "functions",
                "functions": [
                    {"method": "getEvents()", "name": "getEvents", "description": "Retrieve the list of upcoming events."},
                    {"method": "eventParticipation({ eventId: \"ID of the event\", participation: \"YES or NO\" })", "name": "eventParticipation", "description": "Update the participation status to an event."}
                ],
                "endpoint": "http://localhost:8085/ai-functions"
            },
            "logo_url": "http://localhost:8085/logo.png",
            "contact_email": "kevin.thizy@intech.lu",
            "legal_info_url": "https://act.intech.lu"
        })
    }

    #[test]
    fn the_documented_manifest_is_valid_and_gives_two_tools() {
        let m = Manifest::parse(&documented()).unwrap();
        assert_eq!(m.auth, Auth::None);
        let tools = m.tools("actintech");
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[1].name, "actintech.eventParticipation");
        assert_eq!(
            tools[1].input_schema["properties"]["participation"]["description"],
            "YES or NO"
        );
        assert_eq!(tools[0].input_schema["properties"], json!({}));
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let mut m = documented();
        m["schema_version"] = json!("v2");
        m["auth"] = json!({"type": "oauth"});
        m["api"]["endpoint"] = json!("ftp://example");
        m["api"]["functions"][1]["method"] = json!("eventParticipation({ eventId: ID })");
        m["api"]["functions"][0]["name"] = json!("eventParticipation");
        m["contact_email"] = json!("not an email");
        m.as_object_mut().unwrap().remove("description_for_model");
        let problems = Manifest::parse(&m).unwrap_err();
        let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        for want in [
            "",
            "/schema_version",
            "/auth/type",
            "/api/endpoint",
            "/contact_email",
            "/api/functions/1/method",
            "/api/functions/1/name",
        ] {
            assert!(paths.contains(&want), "no problem at {want}: {problems:?}");
        }
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|t| t.contains("description_for_model")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t
                .starts_with("/api/functions/1/method: the signature does not parse at column")),
            "{text:?}"
        );
    }

    #[test]
    fn non_objects_and_empty_function_lists_are_refused() {
        assert!(Manifest::parse(&json!("hello")).is_err());
        let mut m = documented();
        m["api"]["functions"] = json!([]);
        let problems = Manifest::parse(&m).unwrap_err();
        assert_eq!(problems[0].path, "/api/functions", "{problems:?}");
    }
}
