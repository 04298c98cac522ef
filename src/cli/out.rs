//! stdout for every command. What a command prints goes through [`outln!`] and [`out!`] (or
//! [`write`]), never `outln!`: when stdout's reader has gone away (`genai params | head -1`)
//! genai ends quietly with exit 0, as ripgrep does, where `outln!` would panic with "failed
//! printing to stdout"; any other failure to write is one line on stderr and exit 1. Clippy's
//! `print_stdout` (denied in `cli/`) keeps `outln!` out.
//!
//! A turn's reply is written by `turn.rs` with [`closed`] in hand: a closed stdout cancels the
//! turn through the core first, so that the model stops generating.

use std::io::{self, Write};

/// Prints a line on stdout; see the module doc for what a closed stdout does.
macro_rules! outln {
    () => {
        $crate::cli::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// Prints on stdout without a line break; see the module doc for what a closed stdout does.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write(format_args!($($arg)*))
    };
}

/// Writes `args` on stdout, or ends the process when that fails ([`give_up`]).
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args) {
        give_up(&e)
    }
}

/// Writes `bytes` on stdout and flushes them, or ends the process when that fails.
pub fn write_bytes(bytes: &[u8]) {
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|_| stdout.flush()) {
        give_up(&e)
    }
}

/// Flushes what is left on stdout, or ends the process when that fails.
pub fn flush() {
    if let Err(e) = io::stdout().lock().flush() {
        give_up(&e)
    }
}

/// Whether a failed write on stdout means that its reader went away (a closed pipe).
pub fn closed(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Ends the process after a write on stdout failed: quietly with 0 when its reader went away,
/// else with the reason on stderr and 1.
pub fn give_up(e: &io::Error) -> ! {
    if closed(e) {
        super::exit(0)
    }
    eprintln!("genai: cannot write to stdout: {e}");
    super::exit(1)
}
