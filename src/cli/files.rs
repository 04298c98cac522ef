//! `-f/--file`: the files `genai_core::context_files` reads, with what a folder walk left out said
//! on stderr, and where they go in the message. It must hold no reading of its own.

use genai_core::context_files::Secrets;
use genai_core::error::Error;
use genai_core::message::Part;

use super::conversation::ConversationArgs;

/// What `-f` keeps back: genai's own secret files, and the secret files no rule of the config
/// or of `--allow` names (the rules the workspace tools follow).
pub fn secrets(flags: &ConversationArgs) -> Result<Secrets, Error> {
    let paths = genai_core::config::Paths::from_env()?;
    let config = genai_core::config::Config::load(&paths.config_file())?;
    Secrets::of(
        genai_core::secrets::own_files(&paths),
        &config.permissions,
        &flags.allow,
        &flags.deny,
    )
}

/// Reads every `-f`, in order, as fenced blocks separated by blank lines; what folders left
/// out is listed on stderr.
pub fn load_all(specs: &[String], secrets: &Secrets) -> Result<String, Error> {
    if specs.is_empty() {
        return Ok(String::new());
    }
    let loaded = genai_core::context_files::load(specs, secrets)?;
    for (path, why) in &loaded.skipped {
        eprintln!("genai: -f skipped {path}: {why}");
    }
    Ok(loaded.text)
}

/// Puts the `-f` blocks after the prompt, in its last text part (a part of their own when it
/// has none), as `ask` and `chat` send them.
pub fn after_prompt(parts: &mut Vec<Part>, files: &str) {
    if files.is_empty() {
        return;
    }
    match parts.last_mut() {
        Some(Part::Text { text }) => {
            text.push_str("\n\n");
            text.push_str(files);
        }
        _ => parts.push(Part::text(files)),
    }
}
