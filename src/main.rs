//! The `genai` command: parse the command line, then hand over to `cli/`.

mod cli;

fn main() {
    std::process::exit(cli::run());
}
