//! Links the `genai` binary as a position-dependent executable.
//!
//! A position-independent `genai` carried about 91,000 relative relocations that the dynamic
//! loader applied on every start, writing to 1.4 MB of the binary's pages before `main`.
//! Packed relocations (`-z pack-relative-relocs`) still touch those pages and were measured
//! 0.5 to 0.7 ms slower per `genai ask` than this. The crates are built as usual; only the
//! final link resolves those addresses itself. The price: the executable's own image is not
//! placed at a random address (its libraries, stack and heap still are).
//! Nothing else reads or writes anything here.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=genai=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
