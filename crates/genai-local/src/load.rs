//! How busy other processes keep this machine, for the engine's default threads: two
//! samples of the kernel's CPU times (`/proc/stat`), this process's own taken out
//! (`/proc/self/stat`), tell how many cores others used between them.
//!
//! llama.cpp's workers wait for each other at a barrier after every step of a graph, spinning
//! a while before they sleep (libgomp's wait policy: the build uses OpenMP, so ggml's own
//! `poll` setting is never read). A worker whose core another process takes stalls the whole
//! step: on a 2-core machine with one busy loop beside it, 2 threads ran about 3x slower than
//! one. So the default threads are the physical cores, as llama.cpp's tools take, less the
//! cores others keep busy while the model loads (which is the measuring window, so nothing is
//! added to the first answer). It reads two files and decides a number; it never sets anything.

use std::time::{Duration, Instant};

/// The shortest window a load is measured over: shorter ones say little.
const MIN_WINDOW: Duration = Duration::from_millis(100);

/// One sample of the CPU times, in clock ticks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuTimes {
    at: Instant,
    /// Busy time of all CPUs (everything but idle and iowait).
    busy: u64,
    /// All time of all CPUs.
    total: u64,
    /// This process's user and system time.
    own: u64,
}

impl CpuTimes {
    /// Now's times; `None` where the kernel does not tell (not Linux, no `/proc`).
    pub(crate) fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let own = std::fs::read_to_string("/proc/self/stat").ok()?;
        Self::parse(&stat, &own, Instant::now())
    }

    /// The times of `/proc/stat`'s first line and `/proc/self/stat`.
    fn parse(stat: &str, own: &str, at: Instant) -> Option<CpuTimes> {
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .take(8)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        let total: u64 = fields.iter().sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        // The command may hold spaces and parentheses: the fields start after the last `)`.
        let after = own.get(own.rfind(')')? + 1..)?;
        let f: Vec<&str> = after.split_whitespace().collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
        let own = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some(CpuTimes {
            at,
            busy: total.saturating_sub(idle),
            total,
            own,
        })
    }

    /// The cores other processes kept busy from `self` to `later`, on a machine of `cpus`.
    fn others_busy(&self, later: &CpuTimes, cpus: usize) -> f64 {
        let all = later.total.saturating_sub(self.total).max(1) as f64;
        let busy = later.busy.saturating_sub(self.busy);
        let others = busy.saturating_sub(later.own.saturating_sub(self.own)) as f64;
        others / all * cpus as f64
    }
}

/// The threads (generation, prompts) for a machine of `physical` cores where others keep
/// `busy` cores busy: what was wanted, less those cores, at least one.
fn fit((threads, batch): (u32, u32), busy: f64, physical: usize) -> (u32, u32) {
    let free = (physical as u32).saturating_sub(busy.round() as u32).max(1);
    (threads.min(free), batch.min(free))
}

/// The threads to run with, measured since `since`: `wanted` less the cores other processes
/// kept busy meanwhile (the window made at least [`MIN_WINDOW`] long); `wanted` when the load
/// cannot be read.
pub(crate) fn fitted(wanted: (u32, u32), since: CpuTimes, physical: usize) -> (u32, u32) {
    let waited = since.at.elapsed();
    if waited < MIN_WINDOW {
        std::thread::sleep(MIN_WINDOW - waited);
    }
    let Some(now) = CpuTimes::now() else {
        return wanted;
    };
    let cpus = std::thread::available_parallelism().map_or(physical, |n| n.get());
    let busy = since.others_busy(&now, cpus);
    let fitted = fit(wanted, busy, physical);
    tracing::debug!(
        others_busy = format!("{busy:.2}"),
        threads = fitted.0,
        threads_batch = fitted.1,
        "local threads fitted to the load"
    );
    fitted
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "4242 (genai (a) b) S 1 2 3 4 5 6 7 8 9 10 100 50 0 0 20 0";

    #[test]
    fn times_are_read_from_procs_lines() {
        let at = Instant::now();
        let t = CpuTimes::parse(
            "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n",
            OWN,
            at,
        )
        .unwrap();
        assert_eq!((t.busy, t.total, t.own), (150, 1000, 150));
        assert!(CpuTimes::parse("intr 1 2\n", OWN, at).is_none());
        assert!(CpuTimes::parse("cpu  1 2 3 4 5 6 7 8\n", "4242 (x", at).is_none());
    }

    #[test]
    fn the_cores_others_keep_busy_are_left_to_them() {
        let at = Instant::now();
        let cpu = |busy: u64, idle: u64, own: u64| CpuTimes {
            at,
            busy,
            total: busy + idle,
            own,
        };
        // Over 200 ticks of 2 CPUs: others ran 100 (one core), this process 20.
        let busy = cpu(0, 0, 0).others_busy(&cpu(120, 80, 20), 2);
        assert!((busy - 1.0).abs() < 1e-9, "{busy}");
        assert_eq!(fit((2, 2), busy, 2), (1, 1));
        // An idle machine keeps what was wanted; a loaded one still gets one thread.
        assert_eq!(fit((2, 2), 0.1, 2), (2, 2));
        assert_eq!(fit((4, 8), 1.2, 8), (4, 7));
        assert_eq!(fit((2, 2), 12.0, 2), (1, 1));
    }
}
