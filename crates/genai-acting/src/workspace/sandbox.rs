//! The confinement of a command the model runs: on Linux, Landlock (write only under the
//! workspace root and the command's temp folder; no TCP unless allowed) and, where the kernel
//! lets an unprivileged process have them, user namespaces (an empty network namespace, a
//! private mount namespace where the secret files read as empty).
//!
//! It owns what the kernel offers ([`support`]) and the set-up of one child (`Sandbox::confine`).
//! It must never allocate, lock or call anything but raw syscalls in the code that runs between
//! `fork` and `exec` (genai is a multi-threaded tokio process): everything is prepared before.
//! It never starts or waits for the command itself (that is [`super::command`]).

use std::path::PathBuf;
use std::sync::OnceLock;

use genai_base::error::{Error, ErrorKind, Result};

/// What this kernel offers, probed once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Landlock works: its ABI version, and whether it has TCP connect/bind rules (ABI >= 4).
    Landlock { abi: i32, network: bool },
    /// Commands cannot be sandboxed here, and why.
    Missing(String),
}

/// What this kernel offers (probed on the first call, then cached).
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(imp::probe_landlock)
}

/// The confinement of one command.
#[derive(Debug, Clone)]
pub struct Sandbox {
    /// The workspace root: the command may write under it.
    pub root: PathBuf,
    /// The command's own temp folder: the command may write under it.
    pub temp: PathBuf,
    /// Whether the command may use the network.
    pub network: bool,
    /// Files (or folders) inside the root that must read as empty to the command: the secrets.
    pub hidden: Vec<PathBuf>,
}

impl Sandbox {
    /// Makes `command` start confined, via `pre_exec`:
    /// * file system (Landlock): read and execute everywhere; write, create, remove, truncate
    ///   only under `root`, `temp`, and the character devices a shell writes to (`/dev/null`,
    ///   `/dev/zero`, `/dev/full`, `/dev/tty`, `/dev/random`, `/dev/urandom`); the command cannot
    ///   signal processes outside its sandbox;
    /// * network, when `network` is false: no TCP connect or bind (Landlock, ABI >= 4), no
    ///   abstract unix socket outside (ABI >= 6) and, when unprivileged user namespaces work, a
    ///   new empty network namespace so UDP and DNS fail too;
    /// * `hidden`: when user and mount namespaces work, `/dev/null` is bind-mounted over each
    ///   file (an empty read-only tmpfs over each folder) in a private mount namespace; the
    ///   command keeps the user's uid and gid.
    ///
    /// Answers notes on what could not be done (meant for the user or the model). Errors when
    /// this platform has no sandbox or a folder of the confinement cannot be opened.
    pub fn confine(&self, command: &mut tokio::process::Command) -> Result<Vec<String>> {
        imp::confine(self, command)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::{CStr, CString};
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    use std::path::Path;
    use std::sync::OnceLock;

    use landlock::{
        Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, ABI,
    };

    use super::{Error, ErrorKind, Result, Sandbox, Support};

    /// The Landlock ABI whose rights genai asks for: the newest it was tested on. On an older
    /// kernel the `landlock` crate drops what the kernel lacks (best effort); a newer kernel
    /// gets no more than this until genai is tested on it.
    const TARGET_ABI: ABI = ABI::V7;

    /// `LANDLOCK_CREATE_RULESET_VERSION`: `landlock_create_ruleset` answers the ABI version.
    /// The crate keeps its own probe private (it wants no ABI chosen at run time), and genai
    /// must tell the user which ABI it found, so the syscall is made here.
    const CREATE_RULESET_VERSION: libc::c_uint = 1;

    /// The character devices a shell and common tools write to.
    const DEVICES: [&str; 6] = [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    ];

    pub(super) fn probe_landlock() -> Support {
        // SAFETY: the version query reads no memory (null attribute, size 0).
        let abi = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        if abi >= 1 {
            let abi = abi as i32;
            return Support::Landlock {
                abi,
                network: abi >= 4,
            };
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => Support::Missing(
                "the kernel has Landlock but it is disabled (add landlock to the lsm= boot \
                 parameter)"
                    .to_string(),
            ),
            _ => Support::Missing(
                "the kernel has no Landlock (Linux 5.13+ with landlock in the LSM list)"
                    .to_string(),
            ),
        }
    }

    /// Whether an unprivileged process may have its own user and network namespaces.
    fn network_namespace() -> &'static std::result::Result<(), String> {
        static PROBE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
        PROBE.get_or_init(|| probe_namespaces(libc::CLONE_NEWNET, false))
    }

    /// Whether an unprivileged process may have its own user and mount namespaces and
    /// bind-mount `/dev/null` over a file there.
    fn mount_namespace() -> &'static std::result::Result<(), String> {
        static PROBE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
        PROBE.get_or_init(|| probe_namespaces(libc::CLONE_NEWNS, true))
    }

    /// Starts `/bin/sh -c :` in the namespaces of `flags` (plus a user namespace), doing what
    /// [`Confinement::apply`] does (a bind mount over `/dev/null` itself when `bind`): the
    /// kernel, its sysctls, AppArmor or seccomp may each refuse a step, and only trying tells.
    fn probe_namespaces(flags: libc::c_int, bind: bool) -> std::result::Result<(), String> {
        let plan = Confinement {
            unshare: flags | libc::CLONE_NEWUSER,
            uid_map: uid_map(),
            gid_map: gid_map(),
            hidden: if bind {
                vec![Hidden {
                    path: c"/dev/null".to_owned(),
                    folder: false,
                }]
            } else {
                Vec::new()
            },
            ruleset: None,
        };
        let mut probe = std::process::Command::new("/bin/sh");
        probe
            .args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: `apply` only makes syscalls on memory prepared before the fork.
        unsafe { probe.pre_exec(move || plan.apply()) };
        match probe.status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("the namespace probe failed ({status})")),
            Err(e) => Err(format!("user namespaces are not usable here ({e})")),
        }
    }

    /// The uid map that keeps the user's uid inside a new user namespace.
    fn uid_map() -> Vec<u8> {
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        format!("{uid} {uid} 1\n").into_bytes()
    }

    /// The gid map that keeps the user's gid inside a new user namespace.
    fn gid_map() -> Vec<u8> {
        // SAFETY: getegid cannot fail.
        let gid = unsafe { libc::getegid() };
        format!("{gid} {gid} 1\n").into_bytes()
    }

    /// A path to hide, ready for `mount(2)`.
    struct Hidden {
        path: CString,
        /// A folder gets an empty tmpfs (a bind of `/dev/null` fits only a file).
        folder: bool,
    }

    /// Everything the child does between fork and exec, prepared before the fork.
    struct Confinement {
        /// `unshare(2)` flags; 0: no namespaces.
        unshare: libc::c_int,
        uid_map: Vec<u8>,
        gid_map: Vec<u8>,
        hidden: Vec<Hidden>,
        /// The Landlock ruleset to enforce last (mounting is impossible under Landlock).
        ruleset: Option<OwnedFd>,
    }

    /// `Err(errno)` when a syscall answered -1.
    fn check(result: libc::c_long) -> io::Result<()> {
        if result == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Writes `content` to the file at `path` (async-signal-safe).
    fn write_file(path: &CStr, content: &[u8]) -> io::Result<()> {
        // SAFETY: `path` is a valid C string and `content` a valid buffer.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            check(fd as libc::c_long)?;
            let written = libc::write(fd, content.as_ptr().cast(), content.len());
            let error = io::Error::last_os_error();
            libc::close(fd);
            if written != content.len() as isize {
                return Err(error);
            }
        }
        Ok(())
    }

    impl Confinement {
        /// Runs in the child after fork: syscalls only (no allocation: `io::Error` from an
        /// errno holds no heap memory).
        fn apply(&self) -> io::Result<()> {
            // SAFETY: every pointer passed is a C string or buffer owned by `self`, alive
            // until exec; the calls only change this (single-threaded) child.
            unsafe {
                if self.unshare != 0 {
                    check(libc::unshare(self.unshare).into())?;
                    write_file(c"/proc/self/uid_map", &self.uid_map)?;
                    write_file(c"/proc/self/setgroups", b"deny")?;
                    write_file(c"/proc/self/gid_map", &self.gid_map)?;
                }
                if self.unshare & libc::CLONE_NEWNS != 0 {
                    // Nothing mounted here may reach the user's mount namespace.
                    check(
                        libc::mount(
                            std::ptr::null(),
                            c"/".as_ptr(),
                            std::ptr::null(),
                            libc::MS_REC | libc::MS_PRIVATE,
                            std::ptr::null(),
                        )
                        .into(),
                    )?;
                    for hidden in &self.hidden {
                        let result = if hidden.folder {
                            libc::mount(
                                c"tmpfs".as_ptr(),
                                hidden.path.as_ptr(),
                                c"tmpfs".as_ptr(),
                                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
                                c"size=0,mode=0555".as_ptr().cast(),
                            )
                        } else {
                            libc::mount(
                                c"/dev/null".as_ptr(),
                                hidden.path.as_ptr(),
                                std::ptr::null(),
                                libc::MS_BIND,
                                std::ptr::null(),
                            )
                        };
                        check(result.into())?;
                    }
                }
                if let Some(ruleset) = &self.ruleset {
                    check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into())?;
                    check(libc::syscall(
                        libc::SYS_landlock_restrict_self,
                        ruleset.as_raw_fd(),
                        0u32,
                    ))?;
                }
            }
            Ok(())
        }
    }

    pub fn confine(
        sandbox: &Sandbox,
        command: &mut tokio::process::Command,
    ) -> Result<Vec<String>> {
        let abi = match super::support() {
            Support::Landlock { abi, .. } => *abi,
            Support::Missing(why) => {
                return Err(Error::new(
                    ErrorKind::FeatureError,
                    format!("the command cannot be sandboxed: {why}"),
                ))
            }
        };
        let mut notes = Vec::new();
        let hidden = hidden_paths(sandbox)?;
        let mut unshare = 0;
        if !sandbox.network {
            match network_namespace() {
                Ok(()) => unshare |= libc::CLONE_NEWNET,
                Err(why) if abi >= 4 => notes.push(format!(
                    "only TCP is blocked for the command, not UDP or DNS: {why}"
                )),
                Err(why) => notes.push(format!(
                    "the command's network is not blocked (Landlock ABI {abi} has no network \
                     rules, and {why})"
                )),
            }
        }
        if !hidden.is_empty() {
            match mount_namespace() {
                Ok(()) => unshare |= libc::CLONE_NEWNS,
                Err(why) => notes.push(format!(
                    "the command can read the {} secret file(s) of the workspace: they could \
                     not be hidden ({why})",
                    hidden.len()
                )),
            }
        }
        if unshare != 0 {
            unshare |= libc::CLONE_NEWUSER;
        }
        let plan = Confinement {
            unshare,
            uid_map: uid_map(),
            gid_map: gid_map(),
            hidden: if unshare & libc::CLONE_NEWNS != 0 {
                hidden
            } else {
                Vec::new()
            },
            ruleset: Some(ruleset(sandbox)?),
        };
        // SAFETY: `apply` only makes syscalls on memory prepared here, before the fork.
        unsafe { command.pre_exec(move || plan.apply()) };
        Ok(notes)
    }

    /// The hidden paths that exist, resolved (a missing secret needs no hiding).
    fn hidden_paths(sandbox: &Sandbox) -> Result<Vec<Hidden>> {
        let mut out = Vec::new();
        for path in &sandbox.hidden {
            let Ok(resolved) = path.canonicalize() else {
                continue;
            };
            let path = CString::new(resolved.as_os_str().as_bytes()).map_err(|_| {
                Error::invalid_params(format!(
                    "the secret file {} has a NUL byte in its path",
                    resolved.display()
                ))
            })?;
            out.push(Hidden {
                folder: resolved.is_dir(),
                path,
            });
        }
        Ok(out)
    }

    /// The Landlock ruleset of `sandbox`, created (not yet enforced).
    fn ruleset(sandbox: &Sandbox) -> Result<OwnedFd> {
        let failed = |e: landlock::RulesetError| {
            Error::new(
                ErrorKind::FeatureError,
                format!("the command's Landlock sandbox could not be built: {e}"),
            )
        };
        let every = AccessFs::from_all(TARGET_ABI);
        let mut ruleset = Ruleset::default().handle_access(every).map_err(failed)?;
        let mut scopes: BitFlags<Scope> = Scope::Signal.into();
        if !sandbox.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(TARGET_ABI))
                .map_err(failed)?;
            scopes |= Scope::AbstractUnixSocket;
        }
        let mut created = ruleset
            .scope(scopes)
            .map_err(failed)?
            .create()
            .map_err(failed)?;
        let open = |path: &Path, what: &str| {
            PathFd::new(path).map_err(|e| {
                Error::new(
                    ErrorKind::FeatureError,
                    format!("the sandbox cannot open {what} {}: {e}", path.display()),
                )
            })
        };
        created = created
            .add_rule(PathBeneath::new(
                open(Path::new("/"), "the file system root")?,
                AccessFs::from_read(TARGET_ABI),
            ))
            .map_err(failed)?;
        for (folder, what) in [
            (&sandbox.root, "the workspace root"),
            (&sandbox.temp, "the command's temp folder"),
        ] {
            created = created
                .add_rule(PathBeneath::new(open(folder, what)?, every))
                .map_err(failed)?;
        }
        let file = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        for device in DEVICES {
            // A device this machine lacks is one the command cannot write to anyway.
            let Ok(fd) = PathFd::new(device) else {
                continue;
            };
            // No ioctl on the terminal: TIOCSTI would type into the user's shell.
            let rights = if device == "/dev/tty" {
                file
            } else {
                file | AccessFs::IoctlDev
            };
            created = created
                .add_rule(PathBeneath::new(fd, rights))
                .map_err(failed)?;
        }
        let fd: Option<OwnedFd> = created.into();
        fd.ok_or_else(|| {
            Error::new(
                ErrorKind::FeatureError,
                "the kernel refused to create the command's Landlock ruleset",
            )
        })
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{Error, ErrorKind, Result, Sandbox, Support};

    pub(super) fn probe_landlock() -> Support {
        Support::Missing(
            "not Linux: commands are not sandboxed here (macOS sandbox-exec and Windows are \
             documented, not built)"
                .to_string(),
        )
    }

    pub(super) fn confine(
        _sandbox: &Sandbox,
        _command: &mut tokio::process::Command,
    ) -> Result<Vec<String>> {
        let why = match super::support() {
            Support::Missing(why) => why.as_str(),
            Support::Landlock { .. } => "Landlock is Linux's",
        };
        Err(Error::new(
            ErrorKind::FeatureError,
            format!("the command cannot be sandboxed: {why}"),
        ))
    }
}
