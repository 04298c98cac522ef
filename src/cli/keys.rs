//! `genai keys set|delete NAME`: API keys in the OS keyring (service `genai`, user NAME).
//! The key is read from a hidden prompt or from stdin, never from argv.

use std::io::{IsTerminal, Read};

use clap::Subcommand;
use genai::error::{Error, ErrorKind};
use genai::secrets::{self, Secret};

#[derive(Subcommand)]
pub enum Command {
    /// Store the key of provider instance NAME (read from a hidden prompt, or from stdin).
    Set { name: String },
    /// Delete the key of provider instance NAME.
    Delete { name: String },
}

pub fn run(c: Command) -> Result<(), Error> {
    match c {
        Command::Set { name } => {
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
            secrets::keyring_set(&name, &Secret::new(key))?;
            eprintln!("stored the key of `{name}` in the OS keyring");
            Ok(())
        }
        Command::Delete { name } => {
            if secrets::keyring_delete(&name)? {
                eprintln!("deleted the key of `{name}`");
                Ok(())
            } else {
                Err(Error::new(
                    ErrorKind::InvalidParams,
                    format!("the keyring holds no key for `{name}`"),
                ))
            }
        }
    }
}
