"""The `genai daemon` child process and JSON-RPC over its stdio, newline-delimited.

`Daemon` owns the process and three threads: a reader (stdout: answers resolve the waiting
calls, everything else is queued), a dispatcher (runs notification and request handlers one at a
time, in arrival order, so a handler may itself call the daemon and wait), and a stderr reader
(the daemon's log). When the process ends, every waiting call fails with `DaemonExited`, the
exit handlers run, and with `restart=True` a new process is started. Standard library only.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("genai_bridge")

#: Restarts allowed within RESTART_WINDOW seconds before giving up (a daemon that cannot start).
MAX_RESTARTS = 3
RESTART_WINDOW = 30.0
#: How much of stderr is kept to explain an exit.
STDERR_TAIL = 2000


class RpcError(Exception):
    """A JSON-RPC error answer from the daemon; `kind` is its stable `data.kind`."""

    def __init__(self, method: str, code: int, message: str, kind: str | None):
        super().__init__(f"{method}: {message}" + (f" ({kind})" if kind else ""))
        self.method = method
        self.code = code
        self.kind = kind
        self.daemon_message = message


class ClientError(Exception):
    """Raised by a handler of a daemon's request to answer with this JSON-RPC error, its
    message as it is (any other exception is answered as "METHOD failed in the client: ...")."""

    def __init__(self, message: str, code: int = -32603, kind: str = "internal"):
        super().__init__(message)
        self.code = code
        self.kind = kind


class DaemonExited(Exception):
    """The daemon process ended before it answered (or is not running)."""

    kind = "daemonExited"


@dataclass(frozen=True)
class DaemonExit:
    """How a daemon process ended."""

    code: int | None
    expected: bool
    will_restart: bool
    message: str


class _Call:
    """A request waiting for its answer."""

    def __init__(self, method: str):
        self.method = method
        self.done = threading.Event()
        self.response: dict | None = None
        self.error: BaseException | None = None


class Daemon:
    """A running `genai daemon`, spoken to in newline-delimited JSON-RPC."""

    def __init__(
        self,
        command: str | None = None,
        args: tuple[str, ...] | list[str] = ("daemon",),
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        restart: bool = False,
        on_log: Callable[[str], None] | None = None,
    ):
        self.command = command or os.environ.get("GENAI_BIN") or shutil.which("genai") or "genai"
        self.args = list(args)
        self.env = env
        self.cwd = cwd
        self.restart = restart
        self._on_log = on_log or (lambda line: log.debug("daemon: %s", line))
        self._ids = itertools.count(1)
        self._pending: dict[int, _Call] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._generation = 0
        self._stopping = False
        self._restarts: list[float] = []
        self._stderr_tail = ""
        self._notification_handlers: dict[str, list[Callable[[dict], None]]] = {}
        self._request_handlers: dict[str, Callable[[dict], Any]] = {}
        self._exit_handlers: list[Callable[[DaemonExit], None]] = []
        self._start_handlers: list[Callable[[int], None]] = []
        self._events: queue.Queue = queue.Queue()
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="genai-dispatch", daemon=True)
        self._dispatcher.start()

    # ---- handlers -----------------------------------------------------------------------

    def on_notification(self, method: str, handler: Callable[[dict], None]) -> None:
        """Calls `handler(params)` for each notification `method`, on the dispatcher thread."""
        self._notification_handlers.setdefault(method, []).append(handler)

    def on_request(self, method: str, handler: Callable[[dict], Any]) -> None:
        """Answers the daemon's request `method` with `handler(params)`; an exception is an error answer."""
        self._request_handlers[method] = handler

    def on_exit(self, handler: Callable[[DaemonExit], None]) -> None:
        self._exit_handlers.append(handler)

    def on_start(self, handler: Callable[[int], None]) -> None:
        """Calls `handler(generation)` after each restart (generation 2, 3, ...)."""
        self._start_handlers.append(handler)

    # ---- life cycle ---------------------------------------------------------------------

    @property
    def generation(self) -> int:
        """1 for the first process, 2 after the first restart, ..."""
        return self._generation

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> "Daemon":
        """Starts the daemon; raises OSError naming the command if it cannot be run."""
        self._stopping = False
        self._spawn()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Asks the daemon to shut down and waits for it (killing it after `timeout`)."""
        self._stopping = True
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            self.request("Shutdown", None, timeout=timeout)
        except (DaemonExited, TimeoutError, RpcError):
            pass  # gone already, or stuck: the kill below settles it
        try:
            proc.stdin.close()
            proc.wait(timeout)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()

    def __enter__(self) -> "Daemon":
        return self.start() if not self.running else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---- calls --------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> Any:
        """Sends a request and waits for its result; raises RpcError, DaemonExited or TimeoutError."""
        call = _Call(method)
        with self._lock:
            if not self.running:
                raise DaemonExited(f"{method}: the genai daemon is not running")
            call_id = next(self._ids)
            self._pending[call_id] = call
        message = {"jsonrpc": "2.0", "id": call_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._write(message)
        except OSError as err:
            with self._lock:
                self._pending.pop(call_id, None)
            raise DaemonExited(f"{method}: cannot write to the genai daemon: {err}") from err
        if not call.done.wait(timeout):
            with self._lock:
                self._pending.pop(call_id, None)
            raise TimeoutError(f"{method}: no answer from the genai daemon within {timeout} s")
        if call.error:
            raise call.error
        response = call.response or {}
        if "error" in response:
            err = response["error"] or {}
            kind = (err.get("data") or {}).get("kind")
            raise RpcError(method, err.get("code", 0), err.get("message", "unknown error"), kind)
        return response.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    def _write(self, message: dict) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise OSError("the genai daemon is not running")
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._write_lock:
            proc.stdin.write(line.encode("utf-8"))
            proc.stdin.flush()

    # ---- threads ------------------------------------------------------------------------

    def _spawn(self) -> None:
        try:
            proc = subprocess.Popen(
                [self.command, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
            )
        except OSError as err:
            raise OSError(f"cannot start the genai daemon `{self.command}`: {err}") from err
        self._stderr_tail = ""
        self._proc = proc
        self._generation += 1
        stderr = threading.Thread(target=self._read_stderr, args=(proc,), name="genai-stderr", daemon=True)
        stderr.start()
        threading.Thread(target=self._read_stdout, args=(proc, stderr), name="genai-stdout", daemon=True).start()

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._stderr_tail = (self._stderr_tail + line + "\n")[-STDERR_TAIL:]
            self._on_log(line)

    def _read_stdout(self, proc: subprocess.Popen, stderr: threading.Thread) -> None:
        for raw in proc.stdout:
            text = raw.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except ValueError:
                log.error("the genai daemon wrote a line that is not JSON: %r", text[:200])
                continue
            for one in message if isinstance(message, list) else [message]:
                self._receive(one)
        self._exited(proc, stderr)

    def _receive(self, message: dict) -> None:
        if "method" not in message:
            with self._lock:
                call = self._pending.pop(message.get("id"), None)
            if call is None:
                log.warning("an answer to no waiting request: %s", json.dumps(message)[:200])
                return
            call.response = message
            call.done.set()
        else:
            self._events.put(("message", message))

    def _exited(self, proc: subprocess.Popen, stderr: threading.Thread) -> None:
        code = proc.wait()
        stderr.join(2.0)  # its last words explain the exit
        expected = self._stopping
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW]
        # Exit code 3 is a config error: starting again would fail the same way.
        will_restart = self.restart and not expected and code != 3 and len(self._restarts) < MAX_RESTARTS
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        said = " | ".join(self._stderr_tail.strip().splitlines()[-3:])
        message = f"the genai daemon {how}" + (f": {said}" if said else "")
        if not expected:
            message += "; starting it again" if will_restart else "; not starting it again"
        exit_info = DaemonExit(code=code, expected=expected, will_restart=will_restart, message=message)
        with self._lock:
            if self._proc is proc:
                self._proc = None
            waiting = list(self._pending.values())
            self._pending.clear()
        for call in waiting:
            call.error = DaemonExited(f"{call.method}: {message}")
            call.done.set()
        self._events.put(("exit", exit_info))
        if will_restart:
            self._restarts.append(now)
            try:
                self._spawn()
                self._events.put(("start", self._generation))
            except OSError as err:
                self._events.put(("exit", DaemonExit(None, False, False, str(err))))

    def _dispatch_loop(self) -> None:
        while True:
            what, item = self._events.get()
            try:
                if what == "message":
                    self._dispatch(item)
                elif what == "exit":
                    for handler in list(self._exit_handlers):
                        handler(item)
                elif what == "start":
                    for handler in list(self._start_handlers):
                        handler(item)
            except Exception:  # a handler's bug must not stop the dispatcher; it is logged whole
                log.exception("a genai_bridge handler failed on %s", what)

    def _dispatch(self, message: dict) -> None:
        method = message["method"]
        params = message.get("params") or {}
        if "id" not in message:
            handlers = self._notification_handlers.get(method, [])
            if not handlers:
                log.debug("no handler for notification %s", method)
            for handler in list(handlers):
                handler(params)
            return
        handler = self._request_handlers.get(method)
        answer: dict = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            answer["error"] = {"code": -32601, "message": f"the client does not handle {method}"}
        else:
            try:
                answer["result"] = handler(params)
            except ClientError as err:  # the handler chose its answer (and logged what it needed)
                answer["error"] = {"code": err.code, "message": str(err), "data": {"kind": err.kind}}
            except Exception as err:  # the daemon gets the error; the log gets the traceback
                log.exception("handler for the daemon's request %s failed", method)
                answer["error"] = {"code": -32603, "message": f"{method} failed in the client: {err}", "data": {"kind": "internal"}}
        try:
            self._write(answer)
        except OSError as err:
            log.error("cannot answer the daemon's %s: %s", method, err)
