//! The `genai` command: parse the command line, then hand over to `cli/`.

mod cli;

/// Every allocation of the binary (the library leaves the choice to its user).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    cli::exit(cli::run())
}
