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
            println!("config  {}", paths.config_file().display());
            println!("history {}", paths.history_db().display());
            println!("data    {}", paths.data_dir.display());
            println!(
                "models  {}",
                genai::models::ModelLibrary::open(&paths).dir().display()
            );
        }
        Command::Show => {
            let file = paths.config_file();
            if !file.exists() {
                println!(
                    "# no config file at {}: built-in defaults apply",
                    file.display()
                );
            }
            print!("{}", Config::load(&file)?.masked_toml());
        }
    }
    Ok(())
}
