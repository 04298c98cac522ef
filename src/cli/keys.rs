//! `genai keys set|delete|list`: API keys in the OS keyring (service `genai`, user NAME) or, with
//! `--file` or `[keys] store = "file"`, in the key file only the user can read. A key is read
//! from a hidden prompt or from stdin, never from argv; `list` says which names have a key
//! and where (environment, keyring, file), never the key itself.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};

use clap::Subcommand;
use genai_core::config::{Config, KeyStore, ProviderConfig};
use genai_core::error::{Error, ErrorKind};
use genai_core::secrets::{self, key_file, os_keyring, Secret};

#[derive(Subcommand)]
pub enum Command {
    /// Store the key of NAME (a provider instance, `plugin:MODULE`, `CONNECTOR.CREDENTIAL`),
    /// read from a hidden prompt or from stdin.
    Set {
        /// Whose key: a provider instance, `plugin:MODULE` or `CONNECTOR.CREDENTIAL`.
        name: String,
        /// Store it in the key file (keys.toml in the config folder, readable only by you)
        /// instead of the OS keyring: for machines with no keyring service.
        #[arg(long)]
        file: bool,
    },
    /// Delete the key of NAME from the OS keyring and the key file.
    Delete {
        /// Whose key, named as for `keys set`.
        name: String,
    },
    /// Show which names have a key and where (environment, keyring, file); never the keys.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(c: Command) -> Result<(), Error> {
    match c {
        Command::Set { name, file } => {
            let config = super::load()?.1;
            let key = read_key(&name)?;
            if file || config.keys.store == KeyStore::File {
                let path = key_file::path()?;
                key_file::set_in(&path, &name, &key)?;
                eprintln!("stored the key of `{name}` in {}", path.display());
            } else {
                let place = os_keyring::set(&name, &key)?;
                eprintln!("stored the key of `{name}` in {place}");
            }
            Ok(())
        }
        Command::Delete { name } => {
            let path = key_file::path()?;
            let in_file = key_file::delete_in(&path, &name)?;
            let in_keyring = match os_keyring::delete(&name) {
                Ok(d) => d,
                // With no keyring service, the file was the only place to look.
                Err(_) if in_file => false,
                Err(e) => return Err(e),
            };
            match (in_keyring, in_file) {
                (false, false) => Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("neither the keyring nor the key file holds a key for `{name}`"),
                )),
                (k, f) => {
                    let from = match (k, f) {
                        (true, true) => "the keyring and the key file",
                        (true, false) => "the keyring",
                        _ => "the key file",
                    };
                    eprintln!("deleted the key of `{name}` from {from}");
                    Ok(())
                }
            }
        }
        Command::List { json } => list(json),
    }
}

fn read_key(name: &str) -> Result<Secret, Error> {
    let key = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("API key for {name}: ")).map_err(|e| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("cannot read the key: {e}"),
            )
        })?
    } else {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Error::new(
                ErrorKind::InvalidParams,
                format!("cannot read the key from stdin: {e}"),
            )
        })?;
        s
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(Error::new(ErrorKind::InvalidParams, "no key given"));
    }
    Ok(Secret::new(key))
}

/// Where a name's key may be found besides the keyring and the key file: its environment
/// variable, and the config (`api_key` written in it, or `api_key_cmd`).
#[derive(Default)]
struct Sources {
    env: Option<String>,
    config: Option<&'static str>,
}

/// What the config itself holds of a key: the key (`api_key`, `value`) or a command.
fn in_config(key: &Option<String>, cmd: &Option<String>) -> Option<&'static str> {
    let set = |v: &Option<String>| v.as_ref().is_some_and(|v| !v.trim().is_empty());
    if set(key) {
        Some("config")
    } else if set(cmd) {
        Some("command")
    } else {
        None
    }
}

/// Every name genai may look a key up for, with where else its key may be (the environment
/// variable it reads first, the config): the built-in provider instances, the config's
/// providers (a kind's well-known variable only where the provider reads it:
/// `remote::key_env`), connector credentials and plugin modules, and whatever the key file
/// holds.
fn known_names(config: &Config, in_file: &[String]) -> BTreeMap<String, Sources> {
    use genai_core::provider::kinds::HTTP_KINDS;
    use genai_core::provider::remote::key_env;
    let mut names = BTreeMap::new();
    for k in HTTP_KINDS {
        if k.key_env.is_some() {
            let env = key_env(k, &Default::default());
            names.insert(k.name.to_string(), Sources { env, config: None });
        }
    }
    for (name, c) in &config.service_providers {
        let http = match c {
            ProviderConfig::OpenAi(s)
            | ProviderConfig::Anthropic(s)
            | ProviderConfig::Ollama(s)
            | ProviderConfig::Gemini(s) => s,
            ProviderConfig::AzureOpenAi(a) => &a.http,
            ProviderConfig::Bedrock(b) => &b.http,
            ProviderConfig::Http(h) => {
                for (cred, source) in &h.credentials {
                    let sources = Sources {
                        env: source.env.clone(),
                        config: in_config(&source.value, &source.cmd),
                    };
                    names.insert(format!("{name}.{cred}"), sources);
                }
                &h.http
            }
            ProviderConfig::Local(_) => continue,
        };
        let env = match HTTP_KINDS.iter().find(|k| k.name == c.kind()) {
            Some(kind) => key_env(kind, http),
            None => http.api_key_env.clone(),
        };
        let config = in_config(&http.api_key, &http.api_key_cmd);
        names.insert(name.clone(), Sources { env, config });
    }
    for module in config.plugins.keys() {
        let env = Some(secrets::plugin_key_env(module));
        names.insert(
            genai_core::tools::plugin::key_name(module),
            Sources { env, config: None },
        );
    }
    for name in in_file {
        names.entry(name.clone()).or_insert_with(|| Sources {
            env: name.strip_prefix("plugin:").map(secrets::plugin_key_env),
            config: None,
        });
    }
    names
}

fn list(json: bool) -> Result<(), Error> {
    let config = super::load()?.1;
    let path = key_file::path()?;
    let in_file = key_file::names_in(&path)?;
    // The same availability `keys set` meets; a keyring that cannot store is not searched.
    let mut keyring_failure = os_keyring::probe().err();
    let mut rows = Vec::new();
    for (name, sources) in known_names(&config, &in_file) {
        let mut places = Vec::new();
        let env = sources
            .env
            .filter(|v| std::env::var(v).is_ok_and(|k| !k.trim().is_empty()));
        if env.is_some() {
            places.push("env");
        }
        if keyring_failure.is_none() {
            match os_keyring::get(&name) {
                Ok(Some(_)) => places.push("keyring"),
                Ok(None) => {}
                Err(e) => keyring_failure = Some(e),
            }
        }
        if in_file.contains(&name) {
            places.push("file");
        }
        places.extend(sources.config);
        if !places.is_empty() {
            rows.push((name, places, env));
        }
    }
    if json {
        let keys: Vec<_> = rows
            .iter()
            .map(|(name, places, env)| {
                let mut o = serde_json::json!({"name": name, "places": places});
                if let Some(var) = env {
                    o["envVar"] = var.clone().into();
                }
                o
            })
            .collect();
        let out = serde_json::json!({
            "keys": keys,
            "keyFile": path.display().to_string(),
            "keyringAvailable": keyring_failure.is_none(),
        });
        outln!("{out:#}");
    } else {
        if rows.is_empty() {
            eprintln!("no keys: store one with `genai keys set NAME`");
        }
        let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
        for (name, places, env) in &rows {
            let shown: Vec<String> = places
                .iter()
                .map(|p| match (*p, env) {
                    ("env", Some(var)) => format!("env ({var})"),
                    ("file", _) => format!("file ({})", path.display()),
                    (p, _) => p.to_string(),
                })
                .collect();
            outln!("{name:width$}  {}", shown.join(", "));
        }
    }
    // One short line, and none once the key file is the chosen store: the long reason is
    // `genai keys set`'s to give, when a key cannot go to the keyring.
    if keyring_failure.is_some() && config.keys.store != KeyStore::File && !json {
        eprintln!(
            "genai: no OS keyring answers here, so only the environment, the key file and the \
             config were searched ([keys] store = \"file\" makes the key file the default)"
        );
    }
    Ok(())
}
