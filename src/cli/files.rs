//! `-f/--file`: the files `genai::context_files` reads, with what a folder walk left out said
//! on stderr. It must hold no reading of its own.

use genai::error::Error;

/// Reads every `-f`, in order, as fenced blocks separated by blank lines; what folders left
/// out is listed on stderr.
pub fn load_all(specs: &[String]) -> Result<String, Error> {
    let loaded = genai::context_files::load(specs)?;
    for (path, why) in &loaded.skipped {
        eprintln!("genai: -f skipped {path}: {why}");
    }
    Ok(loaded.text)
}
