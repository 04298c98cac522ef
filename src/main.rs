//! The `genai` command: install the in-process llama.cpp engine (`genai-local`, the `local`
//! feature), parse the command line, then hand over to `cli/`.

mod alloc;
mod cli;

/// Every allocation of the binary (the library leaves the choice to its user).
#[global_allocator]
static ALLOCATOR: alloc::Mimalloc = alloc::Mimalloc;

fn main() {
    // Before any registry is built: the registry makes the implicit `local` instance only
    // when an engine is installed.
    #[cfg(feature = "local")]
    genai_local::install();
    cli::exit(cli::run())
}
