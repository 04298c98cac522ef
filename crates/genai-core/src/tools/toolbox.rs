//! The tools a daemon or a conversation can reach: the plugin modules and the MCP servers of the
//! config, loaded or started on first use and kept (a module that fails to load, or a server that
//! fails to start, is tried again next time), listed together and called by their tool name
//! `SOURCE.tool`. Confirmation and collect links are plugin-only.
//!
//! It owns which sources are loaded, and shuts the MCP servers down with the daemon. It must
//! never decide when a tool is called (the model does, through the `tools` feature) nor talk to
//! a client.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::mcp::McpServer;
use super::plugin::{self, ModuleAnswer, PluginModule};
use super::Tool;
use crate::config::{McpServerConfig, PluginConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::message::Part;
use genai_protocol::listings::{McpPrompt, McpResource, SourceError};

/// The selection entry that stands for the enabled sources (beside named ones:
/// `["github", "*"]`, or `["workspace", "*"]` with the built-in source).
pub const ENABLED: &str = "*";

pub struct Toolbox {
    plugins: BTreeMap<String, PluginConfig>,
    loaded: tokio::sync::Mutex<HashMap<String, Arc<PluginModule>>>,
    mcp_servers: BTreeMap<String, McpServer>,
}

impl Toolbox {
    pub(crate) fn new(
        plugins: BTreeMap<String, PluginConfig>,
        mcp_servers: BTreeMap<String, McpServerConfig>,
    ) -> Toolbox {
        Toolbox {
            plugins,
            loaded: tokio::sync::Mutex::new(HashMap::new()),
            mcp_servers: mcp_servers
                .into_iter()
                .map(|(name, c)| {
                    let server = McpServer::new(&name, c);
                    (name, server)
                })
                .collect(),
        }
    }

    /// The MCP server `name` of the config.
    pub(crate) fn mcp_server(&self, name: &str) -> Option<&McpServer> {
        self.mcp_servers.get(name)
    }

    /// Stops the MCP servers that run (the daemon is exiting).
    pub async fn shutdown(&self) {
        futures::future::join_all(self.mcp_servers.values().map(McpServer::shutdown)).await;
    }

    /// An unknown source, with the names that are known.
    fn unknown(&self, name: &str) -> Error {
        let list = |names: Vec<&str>| {
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        };
        Error::new(
            ErrorKind::UnknownComponent,
            format!(
                "no tool source `{name}`; built in: workspace; configured plugins: {}; MCP servers: {}",
                list(self.plugins.keys().map(String::as_str).collect()),
                list(self.mcp_servers.keys().map(String::as_str).collect()),
            ),
        )
    }

    /// The tools of the source `name`, a plugin module or an MCP server.
    async fn source_tools(&self, name: &str) -> Result<Vec<Tool>> {
        match self.mcp_servers.get(name) {
            Some(server) => server.tools().await,
            None => Ok(self.module(name).await?.tools()),
        }
    }

    /// Checks that every name of a selection (a source, or `SOURCE.tool`) names a configured
    /// source; the error lists the configured ones.
    pub(crate) fn check_selection(&self, names: &[String]) -> Result<()> {
        for name in names.iter().filter(|n| *n != ENABLED) {
            let source = name.split_once('.').map_or(name.as_str(), |(s, _)| s);
            if !self.plugins.contains_key(source) && !self.mcp_servers.contains_key(source) {
                return Err(self.unknown(source));
            }
        }
        Ok(())
    }

    /// The module `name`, loaded once.
    pub(crate) async fn module(&self, name: &str) -> Result<Arc<PluginModule>> {
        if let Some(m) = self.loaded.lock().await.get(name) {
            return Ok(m.clone());
        }
        if self.mcp_servers.contains_key(name) {
            return Err(Error::invalid_params(format!(
                "`{name}` is an MCP server, not a plugin module"
            )));
        }
        let config = self.plugins.get(name).ok_or_else(|| self.unknown(name))?;
        let module = Arc::new(plugin::from_config(name, config).await?);
        self.loaded
            .lock()
            .await
            .insert(name.to_string(), module.clone());
        Ok(module)
    }

    /// The sources of `selection` (with the one tool a `SOURCE.tool` names; [`ENABLED`]: the
    /// enabled sources), or the enabled sources when `None`.
    fn wanted(&self, selection: Option<&[String]>) -> Vec<(String, Option<String>)> {
        match selection {
            Some(names) => {
                let mut wanted: Vec<(String, Option<String>)> = Vec::new();
                for n in names {
                    let more = match n.split_once('.') {
                        _ if n == ENABLED => self.wanted(None),
                        Some((m, f)) => vec![(m.to_string(), Some(f.to_string()))],
                        None => vec![(n.clone(), None)],
                    };
                    for w in more {
                        // A whole source covers its single tools.
                        let whole = (w.0.clone(), None);
                        if wanted.contains(&w) || wanted.contains(&whole) {
                            continue;
                        }
                        if w.1.is_none() {
                            wanted.retain(|(source, _)| *source != w.0);
                        }
                        wanted.push(w);
                    }
                }
                wanted
            }
            None => self
                .plugins
                .iter()
                .filter(|(_, c)| c.enabled)
                .map(|(n, _)| (n.clone(), None))
                .chain(
                    self.mcp_servers
                        .iter()
                        .filter(|(_, s)| s.enabled())
                        .map(|(n, _)| (n.clone(), None)),
                )
                .collect(),
        }
    }

    /// The tools of `selection` (source names, or `SOURCE.tool` for one tool), or of the
    /// enabled sources when `None`. Sources that fail to load are reported beside the tools.
    pub async fn list(&self, selection: Option<&[String]>) -> (Vec<Tool>, Vec<SourceError>) {
        let wanted = self.wanted(selection);
        let mut tools = Vec::new();
        let mut errors = Vec::new();
        for (module, function) in wanted {
            match self.source_tools(&module).await {
                Ok(listed) => tools.extend(listed.into_iter().filter(|t| match &function {
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

    /// The resources of the MCP servers of `selection` (or of the enabled ones); servers that
    /// fail are reported beside.
    pub async fn resources(
        &self,
        selection: Option<&[String]>,
    ) -> (Vec<McpResource>, Vec<SourceError>) {
        self.gather(selection, |s| s.resources().boxed()).await
    }

    /// The prompts of the MCP servers of `selection` (or of the enabled ones).
    pub async fn prompts(
        &self,
        selection: Option<&[String]>,
    ) -> (Vec<McpPrompt>, Vec<SourceError>) {
        self.gather(selection, |s| s.prompts().boxed()).await
    }

    /// What the MCP servers of `selection` offer beside tools, gathered by `get`; plugin
    /// modules offer none.
    async fn gather<T>(
        &self,
        selection: Option<&[String]>,
        get: impl for<'a> Fn(&'a McpServer) -> BoxFuture<'a, Result<Vec<T>>>,
    ) -> (Vec<T>, Vec<SourceError>) {
        let mut found = Vec::new();
        let mut errors = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for (source, _) in self.wanted(selection) {
            let Some(server) = self.mcp_servers.get(&source) else {
                continue;
            };
            if !seen.insert(source.clone()) {
                continue;
            }
            match get(server).await {
                Ok(items) => found.extend(items),
                Err(e) => errors.push(SourceError {
                    source,
                    message: e.message,
                }),
            }
        }
        (found, errors)
    }

    /// The contents of the resource `uri` if an enabled MCP server lists it.
    pub async fn read_listed_resource(&self, uri: &str) -> Option<Result<Vec<Part>>> {
        let (resources, _) = self.resources(None).await;
        let found = resources.into_iter().find(|r| r.uri == uri)?;
        Some(match self.mcp(&found.source) {
            Ok(server) => server.read_resource(uri).await,
            Err(e) => Err(e),
        })
    }

    /// The MCP server `name`, or an error listing the known ones.
    pub fn mcp(&self, name: &str) -> Result<&McpServer> {
        self.mcp_server(name).ok_or_else(|| self.unknown(name))
    }

    /// Confirms an operation of the module behind `tool` (POSTs the confirmation link).
    pub(crate) async fn confirm(&self, tool: &str, link: &str) -> Result<String> {
        let module = tool.split_once('.').map_or(tool, |(m, _)| m);
        self.module(module).await?.confirm(link).await
    }

    /// Sends the user's message to the collect link of the module behind `tool`.
    pub(crate) async fn collect(&self, tool: &str, link: &str, text: &str) -> Result<String> {
        let module = tool.split_once('.').map_or(tool, |(m, _)| m);
        self.module(module).await?.collect(link, text).await
    }

    /// Calls the tool `SOURCE.tool` with a JSON object of arguments.
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
        match self.mcp_servers.get(module) {
            Some(server) => server.call(function, arguments).await,
            None => self.module(module).await?.call(function, arguments).await,
        }
    }
}
