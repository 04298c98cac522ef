//! `genai plugins add|list|remove|call`: plugin modules in the config file (`[plugins.NAME]`).
//! `add` validates the module's manifest before writing anything, and edits the config with
//! `toml_edit` so the user's comments and layout stay as they were.

use std::path::Path;

use clap::Subcommand;
use genai_core::config::{Config, Paths};
use genai_core::error::{Error, ErrorKind};
use genai_core::tools::plugin::{self, manifest_url, PluginModule};
use serde_json::{json, Value};

#[derive(Subcommand)]
pub enum Command {
    /// Add a module from its base URL or manifest URL (the manifest is fetched and checked).
    Add {
        /// The module's base URL, or the URL of its manifest.
        url: String,
        /// The name of its tools' prefix (default: the manifest's name_for_model).
        #[arg(long)]
        name: Option<String>,
        /// Give its tools to conversations that name no tools.
        #[arg(long)]
        enable: bool,
    },
    /// List the configured modules; with --tools, fetch each manifest and list its tools.
    List {
        /// Fetch each module's manifest and list its tools.
        #[arg(long)]
        tools: bool,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Remove a module from the config.
    Remove {
        /// The module's name in the config.
        name: String,
    },
    /// Call one function of a module, for debugging: ARGS is a JSON object.
    Call {
        /// The module's name in the config.
        name: String,
        /// The function to call, as its manifest names it.
        method: String,
        /// Its arguments, a JSON object.
        #[arg(default_value = "{}")]
        args: String,
    },
}

fn config_error(message: String) -> Error {
    Error::new(ErrorKind::Config, message)
}

fn read_doc(path: &Path) -> Result<toml_edit::DocumentMut, Error> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(config_error(format!("cannot read {}: {e}", path.display()))),
    };
    text.parse()
        .map_err(|e| config_error(format!("{} is not valid TOML: {e}", path.display())))
}

fn write_doc(path: &Path, doc: &toml_edit::DocumentMut) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| config_error(format!("cannot create {}: {e}", dir.display())))?;
    }
    // Write beside, then rename: a crash never leaves half a config.
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, doc.to_string())
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| config_error(format!("cannot write {}: {e}", path.display())))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

async fn load(config: &Config, name: &str) -> Result<PluginModule, Error> {
    let c = config.plugins.get(name).ok_or_else(|| {
        let names: Vec<&str> = config.plugins.keys().map(String::as_str).collect();
        Error::new(
            ErrorKind::UnknownComponent,
            format!(
                "no plugin `{name}` in the config; configured: {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    })?;
    plugin::from_config(name, c).await
}

pub async fn run(c: Command) -> Result<(), Error> {
    let paths = Paths::from_env()?;
    let file = paths.config_file();
    match c {
        Command::Add { url, name, enable } => {
            let manifest_url = manifest_url(&url)?;
            let probe = PluginModule::load(
                name.as_deref().unwrap_or("new"),
                manifest_url.clone(),
                None,
                std::time::Duration::from_secs(30),
            )
            .await?;
            let name = name.unwrap_or_else(|| probe.manifest.name_for_model.clone());
            if !valid_name(&name) {
                return Err(Error::invalid_params(format!(
                    "`{name}` cannot name a plugin: use letters, digits, `_` and `-`"
                )));
            }
            let config = Config::load(&file)?;
            if config.plugins.contains_key(&name) {
                return Err(Error::invalid_params(format!(
                    "a plugin named `{name}` exists: `genai plugins remove {name}` first, or pass --name"
                )));
            }
            let mut doc = read_doc(&file)?;
            let plugins = doc
                .entry("plugins")
                .or_insert_with(|| {
                    let mut t = toml_edit::Table::new();
                    t.set_implicit(true);
                    toml_edit::Item::Table(t)
                })
                .as_table_mut()
                .ok_or_else(|| config_error("`plugins` in the config is not a table".into()))?;
            let mut entry = toml_edit::Table::new();
            entry["url"] = toml_edit::value(manifest_url.as_str());
            entry["enabled"] = toml_edit::value(enable);
            plugins.insert(&name, toml_edit::Item::Table(entry));
            write_doc(&file, &doc)?;
            let tools = probe.manifest.tools(&name);
            outln!("added plugin `{name}` with {} tools:", tools.len());
            for t in &tools {
                outln!("  {}  {}", t.name, t.description);
            }
            if probe.manifest.auth == genai_core::tools::manifest::Auth::ServiceApiKey {
                eprintln!(
                    "this module needs a service API key: run `genai keys set {}` or set {}",
                    plugin::key_name(&name),
                    genai_core::secrets::plugin_key_env(&name)
                );
            }
            Ok(())
        }
        Command::List { tools, json } => {
            let config = Config::load(&file)?;
            let mut rows = Vec::new();
            for (name, c) in &config.plugins {
                let mut row = json!({"name": name, "url": c.url, "enabled": c.enabled});
                if tools {
                    match plugin::from_config(name, c).await {
                        Ok(m) => {
                            let tools: Vec<genai_protocol::listings::Tool> =
                                m.tools().into_iter().map(Into::into).collect();
                            row["tools"] = serde_json::to_value(tools).unwrap_or(Value::Null)
                        }
                        Err(e) => row["error"] = json!(e.message),
                    }
                }
                rows.push(row);
            }
            if json {
                super::print_json(&rows);
                return Ok(());
            }
            if rows.is_empty() {
                outln!("no plugins configured: `genai plugins add URL`");
            }
            for row in &rows {
                let on = if row["enabled"] == true {
                    "enabled"
                } else {
                    "on request"
                };
                outln!(
                    "{}  {}  ({on})",
                    row["name"].as_str().unwrap_or(""),
                    row["url"].as_str().unwrap_or("")
                );
                if let Some(e) = row["error"].as_str() {
                    outln!("  error: {e}");
                }
                for t in row["tools"].as_array().into_iter().flatten() {
                    outln!(
                        "  {}  {}",
                        t["name"].as_str().unwrap_or(""),
                        t["description"].as_str().unwrap_or("")
                    );
                }
            }
            Ok(())
        }
        Command::Remove { name } => {
            let mut doc = read_doc(&file)?;
            let removed = doc
                .get_mut("plugins")
                .and_then(|p| p.as_table_like_mut())
                .and_then(|p| p.remove(&name))
                .is_some();
            if !removed {
                return Err(Error::new(
                    ErrorKind::UnknownComponent,
                    format!("no plugin `{name}` in {}", file.display()),
                ));
            }
            write_doc(&file, &doc)?;
            eprintln!("removed plugin `{name}`");
            Ok(())
        }
        Command::Call { name, method, args } => {
            let args: Value = serde_json::from_str(&args)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| {
                    Error::invalid_params(format!("ARGS must be a JSON object, got `{args}`"))
                })?;
            let config = Config::load(&file)?;
            let module = load(&config, &name).await?;
            let answer = module.call(&method, &args).await?;
            let out = json!({
                "text": answer.text,
                "isError": answer.is_error,
                "confirmationLink": answer.confirmation_link,
                "actions": answer.actions,
                "collectLink": answer.collect_link,
            });
            super::print_json(&out);
            if answer.is_error {
                return Err(Error::new(
                    ErrorKind::FeatureError,
                    format!("plugin `{name}`: {}", answer.text),
                ));
            }
            Ok(())
        }
    }
}
