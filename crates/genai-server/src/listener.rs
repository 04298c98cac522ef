//! The accept loop of `genai serve`: each accepted socket becomes an HTTP/1.1 connection
//! (hyper, with upgrades for the WebSocket protocol) whose requests go to the gate
//! ([`Router`]). It owns what keeps a crowd of clients from taking the server down: a
//! request's head must arrive within the read timeout (so a client trickling its headers, or a
//! keep-alive connection left idle that long, is closed), the open connections are counted and
//! past the cap the oldest is asked to close (at once when idle, after its answer otherwise), so
//! a new client is always served; the process's open-file limit is raised to its hard limit and
//! the cap kept under it; and a failed accept (out of file descriptors) backs off instead of
//! spinning. At a stop it closes the listener, asks every connection to close after its
//! answer, and ends those still open when told to cut them ([`Ending`]). It must never read a request's body (the routes do, within their own deadline)
//! nor hold one connection's work up behind another's.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::router::Router;
use super::Limits;

/// File descriptors kept for everything but clients' connections (the store, the upstream
/// connections, the models' files).
const RESERVED_FILES: u64 = 1024;

/// How long a failed accept waits before the next (out of file descriptors, the listener
/// would otherwise fail again at once, forever).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// The open connections, oldest first, each with the signal that asks it to close.
struct Open {
    cap: usize,
    next: AtomicU64,
    by_age: Mutex<BTreeMap<u64, Arc<Notify>>>,
}

/// One connection's place among the open ones, given up when dropped.
struct Place {
    id: u64,
    open: Arc<Open>,
    close: Arc<Notify>,
}

impl Open {
    /// A place for a new connection; past the cap, the oldest connection is asked to close.
    fn admit(self: &Arc<Self>) -> Place {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        let mut by_age = self.by_age.lock().unwrap_or_else(|e| e.into_inner());
        by_age.insert(id, close.clone());
        while by_age.len() > self.cap {
            let Some((_, oldest)) = by_age.pop_first() else {
                break;
            };
            oldest.notify_one();
        }
        Place {
            id,
            open: self.clone(),
            close,
        }
    }

    /// Asks the oldest connection to close (when accepting fails for want of descriptors).
    fn close_oldest(&self) {
        let oldest = self
            .by_age
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_first();
        if let Some((_, close)) = oldest {
            close.notify_one();
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut by_age = self.open.by_age.lock().unwrap_or_else(|e| e.into_inner());
        by_age.remove(&self.id);
    }
}

/// Raises the soft limit of open files to the hard one; returns the limit in force.
fn raise_open_files() -> u64 {
    #[cfg(unix)]
    {
        let mut l = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit/setrlimit with a valid pointer to an rlimit; no other effects.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
                return u64::MAX;
            }
            if l.rlim_cur < l.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: l.rlim_max,
                    rlim_max: l.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    l.rlim_cur = l.rlim_max;
                }
            }
        }
        // rlim_t is not u64 on every unix.
        #[allow(clippy::unnecessary_cast)]
        let limit = l.rlim_cur as u64;
        limit
    }
    #[cfg(not(unix))]
    {
        u64::MAX
    }
}

/// The cap on open connections: `wanted`, kept under the open-file limit.
fn cap(wanted: usize) -> usize {
    let files = raise_open_files();
    let room = files.saturating_sub(RESERVED_FILES).max(files / 2);
    wanted
        .min(usize::try_from(room).unwrap_or(usize::MAX))
        .max(1)
}

/// How the connections end: `stop` closes the listener and asks each to close after its
/// answer, `cut` ends those still open; `connections` tracks their tasks.
pub(super) struct Ending {
    pub(super) stop: CancellationToken,
    pub(super) cut: CancellationToken,
    pub(super) connections: TaskTracker,
}

/// Accepts connections until `stop`, each served on its own task.
pub(super) async fn accept(
    listener: TcpListener,
    router: Arc<Router>,
    limits: Limits,
    ending: Ending,
) {
    let Ending {
        stop,
        cut,
        connections,
    } = ending;
    let open = Arc::new(Open {
        cap: cap(limits.open_connections),
        next: AtomicU64::new(0),
        by_age: Mutex::default(),
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.read_timeout)
        .keep_alive(true);
    loop {
        let socket = tokio::select! {
            s = listener.accept() => s,
            _ = stop.cancelled() => break,
        };
        let socket = match socket {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("accepting a connection failed: {e}");
                open.close_oldest();
                tokio::select! {
                    _ = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    _ = stop.cancelled() => break,
                }
            }
        };
        // Frames go out as soon as they are written: with Nagle's algorithm a notification
        // waited for the client's delayed ACK, about 40 ms a turn.
        if let Err(e) = socket.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let place = open.admit();
        let router = router.clone();
        let svc = hyper::service::service_fn(move |req| {
            let router = router.clone();
            async move { Ok::<_, std::convert::Infallible>(router.answer(req).await) }
        });
        let conn = http
            .serve_connection(TokioIo::new(socket), svc)
            .with_upgrades();
        let (server_stop, cut) = (stop.clone(), cut.clone());
        connections.spawn(async move {
            tokio::pin!(conn);
            let asked = tokio::select! {
                r = &mut conn => Some(r),
                _ = server_stop.cancelled() => None,
                _ = place.close.notified() => None,
            };
            let ended = match asked {
                Some(r) => r,
                None => {
                    conn.as_mut().graceful_shutdown();
                    tokio::select! {
                        r = &mut conn => r,
                        // Dropping the connection drops what it was answering.
                        _ = cut.cancelled() => Ok(()),
                    }
                }
            };
            if let Err(e) = ended {
                tracing::debug!("connection ended: {e}");
            }
            drop(place);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_the_cap_the_oldest_connection_is_asked_to_close_and_a_closed_one_frees_its_place() {
        let open = Arc::new(Open {
            cap: 2,
            next: AtomicU64::new(0),
            by_age: Mutex::default(),
        });
        let (a, b) = (open.admit(), open.admit());
        let c = open.admit();
        let asked = |p: &Place| futures::FutureExt::now_or_never(p.close.notified()).is_some();
        assert!(asked(&a), "the oldest is asked to close");
        assert!(!asked(&b) && !asked(&c));
        drop(b);
        let d = open.admit();
        assert!(
            !asked(&c) && !asked(&d),
            "a closed connection freed its place"
        );
        assert_eq!(open.by_age.lock().unwrap().len(), 2);
    }

    #[test]
    fn the_cap_stays_under_the_open_file_limit() {
        assert!(cap(usize::MAX) < usize::MAX);
        assert_eq!(cap(10), 10);
    }
}
