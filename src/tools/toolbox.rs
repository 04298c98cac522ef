//! The tools a daemon or a conversation can reach: the plugin modules of the config, loaded on
//! first use and kept (a module that fails to load is tried again next time), listed together
//! and called by their tool name `MODULE.function`.
//!
//! It owns which sources are loaded. It must never decide when a tool is called (the model
//! does, through the `tools` feature) nor talk to a client.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::plugin::{self, ModuleAnswer, PluginModule};
use super::Tool;
use crate::config::PluginConfig;
use crate::error::{Error, ErrorKind, Result};

/// A source that could not be loaded, and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceError {
    pub source: String,
    pub message: String,
}

pub struct Toolbox {
    plugins: BTreeMap<String, PluginConfig>,
    loaded: tokio::sync::Mutex<HashMap<String, Arc<PluginModule>>>,
}

impl Toolbox {
    pub fn new(plugins: BTreeMap<String, PluginConfig>) -> Toolbox {
        Toolbox {
            plugins,
            loaded: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Checks that every name of a selection (a source, or `SOURCE.tool`) names a configured
    /// source; the error lists the configured ones.
    pub fn check_selection(&self, names: &[String]) -> Result<()> {
        for name in names {
            let source = name.split_once('.').map_or(name.as_str(), |(s, _)| s);
            if !self.plugins.contains_key(source) {
                return Err(self.unknown_source(source));
            }
        }
        Ok(())
    }

    fn unknown_source(&self, name: &str) -> Error {
        let names: Vec<&str> = self.plugins.keys().map(String::as_str).collect();
        Error::new(
            ErrorKind::UnknownComponent,
            format!(
                "no tool source `{name}`; configured sources: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    }

    /// The module `name`, loaded once.
    pub async fn module(&self, name: &str) -> Result<Arc<PluginModule>> {
        if let Some(m) = self.loaded.lock().await.get(name) {
            return Ok(m.clone());
        }
        let config = self
            .plugins
            .get(name)
            .ok_or_else(|| self.unknown_source(name))?;
        let module = Arc::new(plugin::from_config(name, config).await?);
        self.loaded
            .lock()
            .await
            .insert(name.to_string(), module.clone());
        Ok(module)
    }

    /// The tools of `selection` (module names, or `MODULE.function` for one tool), or of the
    /// enabled modules when `None`. Sources that fail to load are reported beside the tools.
    pub async fn list(&self, selection: Option<&[String]>) -> (Vec<Tool>, Vec<SourceError>) {
        let wanted: Vec<(String, Option<String>)> = match selection {
            Some(names) => names
                .iter()
                .map(|n| match n.split_once('.') {
                    Some((m, f)) => (m.to_string(), Some(f.to_string())),
                    None => (n.clone(), None),
                })
                .collect(),
            None => self
                .plugins
                .iter()
                .filter(|(_, c)| c.enabled)
                .map(|(n, _)| (n.clone(), None))
                .collect(),
        };
        let mut tools = Vec::new();
        let mut errors = Vec::new();
        for (module, function) in wanted {
            match self.module(&module).await {
                Ok(m) => tools.extend(m.tools().into_iter().filter(|t| match &function {
                    Some(f) => t.name == format!("{module}.{f}"),
                    None => true,
                })),
                Err(e) => errors.push(SourceError {
                    source: module,
                    message: e.message,
                }),
            }
        }
        (tools, errors)
    }

    /// Confirms an operation of the module behind `tool` (POSTs the confirmation link).
    pub async fn confirm(&self, tool: &str, link: &str) -> Result<String> {
        let module = tool.split_once('.').map_or(tool, |(m, _)| m);
        self.module(module).await?.confirm(link).await
    }

    /// Sends the user's message to the collect link of the module behind `tool`.
    pub async fn collect(&self, tool: &str, link: &str, text: &str) -> Result<String> {
        let module = tool.split_once('.').map_or(tool, |(m, _)| m);
        self.module(module).await?.collect(link, text).await
    }

    /// Calls the tool `MODULE.function` with a JSON object of arguments.
    pub async fn call(&self, tool: &str, arguments: &Value) -> Result<ModuleAnswer> {
        let Some((module, function)) = tool.split_once('.') else {
            return Err(Error::invalid_params(format!(
                "`{tool}` is not a tool name: tools are named SOURCE.function"
            )));
        };
        if !arguments.is_object() {
            return Err(Error::invalid_params(format!(
                "the arguments of `{tool}` must be a JSON object, got {arguments}"
            )));
        }
        self.module(module).await?.call(function, arguments).await
    }
}
