//! `genai config path|paths|show`: where the config file is (alone, for `$(genai config
//! path)`), where every file is, and the config with secrets masked.

use clap::Subcommand;
use genai_core::config::{Config, Paths};
use genai_core::error::Error;

#[derive(Subcommand)]
pub enum Command {
    /// Print the config file's path, alone (`cat > "$(genai config path)"`).
    Path,
    /// Print where every file is: the config file, the history database, the data folder and
    /// the models folder, one labelled line each.
    Paths,
    /// Print the config with every secret masked.
    Show,
}

pub fn run(c: Command) -> Result<(), Error> {
    let paths = Paths::from_env()?;
    match c {
        Command::Path => outln!("{}", paths.config_file().display()),
        Command::Paths => {
            outln!("config  {}", paths.config_file().display());
            outln!("history {}", paths.history_db().display());
            outln!("data    {}", paths.data_dir.display());
            outln!(
                "models  {}",
                genai_core::models::ModelLibrary::open(&paths)
                    .dir()
                    .display()
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
