//! What both benchmark programs need from their surroundings: the `genai` binary built beside
//! them, and a process's memory figures from `/proc`. Measuring and reporting stay in each
//! program.

use std::path::{Path, PathBuf};

/// The `genai` binary of the same cargo profile; `build_hint` says how to build it when it is
/// missing.
pub fn genai_binary(build_hint: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| format!("{} has no grandparent folder", exe.display()))?;
    let genai = dir.join(format!("genai{}", std::env::consts::EXE_SUFFIX));
    if !genai.is_file() {
        return Err(format!(
            "{} is missing: build it first with {build_hint}",
            genai.display()
        ));
    }
    Ok(genai)
}

/// VmRSS and VmHWM of the process `pid`, in KiB.
pub fn memory_kib(pid: u32) -> Result<(u64, u64), String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or_else(|| format!("no {name} in {path}"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}
