//! The `genai` command: parse the command line, then hand over to `cli/`.

mod cli;

fn main() {
    let code = cli::run();
    genai::provider::local::stop_engines();
    std::process::exit(code);
}
