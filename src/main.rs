//! The `genai` command: parse the command line, then hand over to `cli/`.

mod cli;

fn main() {
    cli::exit(cli::run())
}
