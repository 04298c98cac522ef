//! `-f/--file`: the files `genai::context_files` reads, with what a folder walk left out said
//! on stderr, and where they go in the message. It must hold no reading of its own.

use genai::error::Error;
use genai::message::Part;

/// Reads every `-f`, in order, as fenced blocks separated by blank lines; what folders left
/// out is listed on stderr.
pub fn load_all(specs: &[String]) -> Result<String, Error> {
    let loaded = genai::context_files::load(specs)?;
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
