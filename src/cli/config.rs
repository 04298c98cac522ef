//! `genai config path|show`: where the files are, and the config with secrets masked.

use clap::Subcommand;
use genai::config::{Config, Paths};
use genai::error::Error;

#[derive(Subcommand)]
pub enum Command {
    /// Print the config file, the history database, the data folder and the models folder.
    Path,
    /// Print the config with every secret masked.
    Show,
}

pub fn run(c: Command) -> Result<(), Error> {
    let paths = Paths::from_env()?;
    match c {
        Command::Path => {
            outln!("config  {}", paths.config_file().display());
            outln!("history {}", paths.history_db().display());
            outln!("data    {}", paths.data_dir.display());
            outln!(
                "models  {}",
                genai::models::ModelLibrary::open(&paths).dir().display()
            );
        }
        Command::Show => {
            let file = paths.config_file();
            if !file.exists() {
                outln!(
                    "# no config file at {}: built-in defaults apply",
                    file.display()
                );
            }
            out!("{}", Config::load(&file)?.masked_toml());
        }
    }
    Ok(())
}
