//! A command file of each dialect from any text, rendered with any words and input: a clear
//! error or a prompt, never a panic.
#![no_main]

use genai_core::command::{parse_text, split_words, Dialect, Place};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The last line is the words after the command; the rest is the file.
    let (file, line) = text.rsplit_once('\n').unwrap_or((text, ""));
    let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    for dialect in [Dialect::Genai, Dialect::ClaudeCode, Dialect::Codex] {
        if let Ok(command) = parse_text("fuzz", file, dialect, Place::Project, None) {
            if let Ok(mut invocation) = split_words(&command, &words) {
                invocation.input = Some(line.to_string());
                let _ = command.prepare(&invocation);
            }
        }
    }
});
