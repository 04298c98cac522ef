//! `[serve.models]`: the model names `genai serve`'s gateway takes. An entry is a string, the
//! agent or `PROVIDER:MODEL` the name stands for, or a table of several deployments that share
//! the name's requests (`[serve.models.NAME] deployments = [...]`, a strategy, a cooldown).
//!
//! It owns the shape of an entry and its checks when the file is read. Plain data: it must
//! never resolve a deployment's agent or model (the serve does, when it starts) nor keep any
//! state of the deployments (the gateway's router does).

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};

/// What one name of `[serve.models]` stands for.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum ServeModel {
    /// An agent or `PROVIDER:MODEL`: `"claude-sonnet-4-5" = "local"`.
    Alias(String),
    /// Several deployments behind the name: `[serve.models.NAME] deployments = [...]`.
    Deployments(Deployments),
}

/// `[serve.models.NAME]`: the deployments that share a name's requests, how one is chosen,
/// and what a failed one costs it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deployments {
    /// Each deployment: `{agent = "AGENT", weight = 3}` or `{model = "PROVIDER:MODEL"}`.
    pub deployments: Vec<Deployment>,
    /// How a request's deployment is chosen: `weighted` (at random, in proportion to the
    /// weights; the default), `least-busy` (the fewest requests in flight per weight) or
    /// `lowest-latency` (the lowest moving average of time to first token).
    #[serde(default)]
    pub strategy: Strategy,
    /// How long a deployment that failed (refused the connection, answered 429 or 5xx, or did
    /// not answer in time) is left out: seconds, or a time such as `"30s"`, `"500ms"`, `"2m"`
    /// (default 30 s). A longer `Retry-After` from the provider wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown: Option<Wait>,
    /// How many other deployments a request is tried on after the first one failed (default:
    /// every other deployment, each at most once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
    /// No further deployment is tried once this long has passed since the request came
    /// (default 60 s); seconds or a time such as `"90s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Wait>,
}

/// One deployment of a name: an agent of `[agents]` or a `PROVIDER:MODEL`, and its weight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// An agent of `[agents]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// `PROVIDER:MODEL`, as `genai ask -m` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its share of the requests against the others' (default 1; at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

impl Deployment {
    /// The name it is known by: its agent, else its `PROVIDER:MODEL`.
    pub fn name(&self) -> &str {
        self.agent
            .as_deref()
            .or(self.model.as_deref())
            .unwrap_or("")
    }

    /// Its weight (1 when unset).
    pub fn weight(&self) -> u32 {
        self.weight.unwrap_or(1)
    }
}

/// How a request's deployment is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    #[default]
    Weighted,
    LeastBusy,
    LowestLatency,
}

/// A time, as seconds or as text with its unit (`"30s"`, `"500ms"`, `"2m"`, `"1h"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Wait {
    Seconds(f64),
    Text(String),
}

impl Wait {
    /// The time it says, or why it says none.
    pub fn duration(&self) -> std::result::Result<Duration, String> {
        let (number, unit) = match self {
            Wait::Seconds(s) => (*s, 1.0),
            Wait::Text(t) => {
                let t = t.trim();
                let at = t
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .unwrap_or(t.len());
                let unit = match t[at..].trim() {
                    "ms" => 0.001,
                    "s" | "" => 1.0,
                    "m" => 60.0,
                    "h" => 3600.0,
                    _ => f64::NAN,
                };
                (t[..at].parse::<f64>().unwrap_or(f64::NAN), unit)
            }
        };
        let secs = number * unit;
        if (0.0..1e9).contains(&secs) {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(match self {
                Wait::Seconds(s) => format!("{s} is not a time in seconds of 0 or more"),
                Wait::Text(t) => format!(
                    "`{t}` is not a time: write seconds (30) or a number with ms, s, m or h (\"30s\")"
                ),
            })
        }
    }
}

impl Deployments {
    /// How long a failed deployment is left out.
    pub fn cooldown(&self) -> Duration {
        self.cooldown
            .as_ref()
            .and_then(|w| w.duration().ok())
            .unwrap_or(Duration::from_secs(30))
    }

    /// How long after a request came another deployment may still be tried.
    pub fn deadline(&self) -> Duration {
        self.deadline
            .as_ref()
            .and_then(|w| w.duration().ok())
            .unwrap_or(Duration::from_secs(60))
    }
}

/// A string is an alias; a table, deployments (its own errors name its field).
impl<'de> Deserialize<'de> for ServeModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = ServeModel;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an agent or PROVIDER:MODEL, or a table with `deployments`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<ServeModel, E> {
                Ok(ServeModel::Alias(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<ServeModel, A::Error> {
                Deployments::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ServeModel::Deployments)
            }
        }
        d.deserialize_any(Entry)
    }
}

/// Checks every entry, naming the one at fault.
pub(crate) fn check(models: &BTreeMap<String, ServeModel>) -> Result<()> {
    let refused = |name: &str, why: String| -> Result<()> {
        Err(Error::new(
            ErrorKind::Config,
            format!("serve.models.\"{name}\": {why}"),
        ))
    };
    for (name, entry) in models {
        if name.trim().is_empty() {
            return refused(name, "a model name is not empty".into());
        }
        let d = match entry {
            ServeModel::Alias(to) if to.trim().is_empty() => {
                return refused(
                    name,
                    "the agent or PROVIDER:MODEL a name stands for is not empty".into(),
                )
            }
            ServeModel::Alias(_) => continue,
            ServeModel::Deployments(d) => d,
        };
        if d.deployments.is_empty() {
            return refused(name, "`deployments` lists none: give at least one, such as `deployments = [{agent = \"AGENT\"}]`".into());
        }
        for (i, one) in d.deployments.iter().enumerate() {
            let at = format!("deployments[{i}]");
            match (&one.agent, &one.model) {
                (Some(a), None) if !a.trim().is_empty() => {}
                (None, Some(m)) if m.contains(':') && !m.starts_with(':') && !m.ends_with(':') => {}
                (None, Some(m)) => {
                    return refused(
                        name,
                        format!("{at}: `model = \"{m}\"` is not PROVIDER:MODEL (for an agent write `agent = \"{m}\"`)"),
                    )
                }
                _ => {
                    return refused(
                        name,
                        format!("{at}: set exactly one of `agent` or `model` (PROVIDER:MODEL)"),
                    )
                }
            }
            if one.weight == Some(0) {
                return refused(
                    name,
                    format!("{at}: weight 0 would send it nothing: give 1 or more, or remove it"),
                );
            }
        }
        if let Some(seen) = d.deployments.iter().enumerate().find_map(|(i, one)| {
            d.deployments[..i]
                .iter()
                .any(|o| o.name() == one.name())
                .then_some(one.name())
        }) {
            return refused(
                name,
                format!("`{seen}` is listed twice: give it one entry with a larger weight"),
            );
        }
        for (field, wait) in [("cooldown", &d.cooldown), ("deadline", &d.deadline)] {
            if let Some(Err(why)) = wait.as_ref().map(Wait::duration) {
                return refused(name, format!("{field}: {why}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn refusal(toml: &str) -> String {
        Config::parse(toml).unwrap_err().message
    }

    #[test]
    fn an_entry_is_an_alias_or_a_table_of_deployments_with_defaults() {
        let c = Config::parse(
            "[serve.models]\n\"claude-*\" = \"main\"\n\n\
             [serve.models.pool]\ndeployments = [{agent = \"a\", weight = 3}, {model = \"ollama:qwen3\"}]\n\
             strategy = \"least-busy\"\ncooldown = \"500ms\"\nretries = 1\n\n\
             [serve.models.plain]\ndeployments = [{agent = \"a\"}]\ncooldown = 2\n",
        )
        .unwrap();
        let models = &c.serve.models;
        assert_eq!(models["claude-*"], ServeModel::Alias("main".into()));
        let ServeModel::Deployments(pool) = &models["pool"] else {
            panic!("{:?}", models["pool"]);
        };
        assert_eq!(pool.strategy, Strategy::LeastBusy);
        assert_eq!(pool.cooldown(), Duration::from_millis(500));
        assert_eq!(pool.deadline(), Duration::from_secs(60));
        assert_eq!(pool.retries, Some(1));
        let names: Vec<_> = pool
            .deployments
            .iter()
            .map(|d| (d.name(), d.weight()))
            .collect();
        assert_eq!(names, [("a", 3), ("ollama:qwen3", 1)]);
        let ServeModel::Deployments(plain) = &models["plain"] else {
            panic!();
        };
        assert_eq!(plain.strategy, Strategy::Weighted);
        assert_eq!(plain.cooldown(), Duration::from_secs(2));
        // Shown again as written, and read back the same.
        let again = Config::parse(&c.masked_toml()).unwrap();
        assert_eq!(&again.serve.models, models);
    }

    #[test]
    fn a_bad_table_is_refused_naming_the_entry_and_what_to_write() {
        let table = |body: &str| format!("[serve.models.pool]\n{body}\n");
        let e = refusal(&table(
            "deployments = [{agent = \"a\"}]\nstrategy = \"fastest\"",
        ));
        assert!(
            e.contains("unknown variant `fastest`") && e.contains("least-busy"),
            "{e}"
        );
        let e = refusal(&table("deployments = [{agent = \"a\", weight = 0}]"));
        assert!(
            e.contains("serve.models.\"pool\": deployments[0]: weight 0"),
            "{e}"
        );
        let e = refusal(&table("deployments = []"));
        assert!(
            e.contains("serve.models.\"pool\": `deployments` lists none"),
            "{e}"
        );
        let e = refusal(&table("deployments = [{agent = \"a\", model = \"p:m\"}]"));
        assert!(
            e.contains("deployments[0]: set exactly one of `agent` or `model`"),
            "{e}"
        );
        let e = refusal(&table("deployments = [{model = \"qwen3\"}]"));
        assert!(e.contains("is not PROVIDER:MODEL"), "{e}");
        let e = refusal(&table("deployments = [{agent = \"a\"}, {agent = \"a\"}]"));
        assert!(e.contains("`a` is listed twice"), "{e}");
        let e = refusal(&table(
            "deployments = [{agent = \"a\"}]\ncooldown = \"soon\"",
        ));
        assert!(e.contains("cooldown: `soon` is not a time"), "{e}");
        let e = refusal(&table("deployments = [{agent = \"a\"}]\ncooldown = -1"));
        assert!(e.contains("cooldown: -1 is not a time"), "{e}");
        let e = refusal(&table("deployment = [{agent = \"a\"}]"));
        assert!(e.contains("unknown field `deployment`"), "{e}");
        let e = refusal("[serve.models]\n\"x\" = \"\"\n");
        assert!(e.contains("serve.models.\"x\""), "{e}");
    }
}
