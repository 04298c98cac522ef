"""Fixtures: the fake provider (examples/fake-provider.rs) and a genai daemon with its own
config and data folders, both real processes; waits have deadlines."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import genai_bridge  # noqa: E402
from genai_bridge import ai  # noqa: E402

REPO = HERE.parents[2]
GENAI_BIN = os.environ.get("GENAI_BIN", str(REPO / "target" / "debug" / "genai"))
FAKE_PROVIDER_BIN = os.environ.get("FAKE_PROVIDER_BIN", str(REPO / "target" / "debug" / "examples" / "fake-provider"))
REPLY = "Hello from the fake provider."
DOWN_URL = "http://127.0.0.1:9/v1"


def start_fake_provider(reply: str, chunks: int, delay_ms: int, tool_calls: tuple = (), reasoning: str = ""):
    """The fake provider; `tool_calls` (`WIRE_NAME:ARGS_JSON` each) make its first answer those
    tool calls, later ones the reply; `reasoning` is streamed before every answer."""
    proc = subprocess.Popen(
        [FAKE_PROVIDER_BIN, "--port", "0", "--reply", reply, "--chunks", str(chunks), "--delay-ms", str(delay_ms)]
        + [arg for call in tool_calls for arg in ("--tool-call", call)]
        + (["--reasoning", reasoning] if reasoning else []),
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=10)
    except queue.Empty:
        proc.kill()
        raise RuntimeError("the fake provider did not say where it listens within 10 s")
    match = re.match(r"listening on (\S+)", line)
    assert match, f"unexpected first line from fake-provider: {line!r}"
    return proc, match.group(1)


@pytest.fixture(scope="session")
def providers():
    fast, fast_url = start_fake_provider(REPLY, 4, 5)
    slow, slow_url = start_fake_provider("One two three four five six seven eight nine ten.", 20, 100)
    yield {"fast": fast_url, "slow": slow_url, "down": DOWN_URL}
    for proc in (fast, slow):
        proc.kill()
        proc.wait()


@pytest.fixture
def daemon_env(providers, tmp_path):
    config = tmp_path / "config"
    data = tmp_path / "data"
    config.mkdir()
    data.mkdir()
    (config / "config.toml").write_text(
        "\n".join(
            f'[service_providers.{name}]\nkind = "openai"\nbase_url = "{url}"\ndefault_model = "{name}-model"\n'
            for name, url in providers.items()
        )
    )
    env = dict(os.environ, GENAI_CONFIG_DIR=str(config), GENAI_DATA_DIR=str(data), NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GENAI_LOG"):
        env.pop(var, None)
    return env


@pytest.fixture
def bridge(daemon_env):
    b = genai_bridge.connect(GENAI_BIN, env=daemon_env, restart=True)
    yield b
    ai.use(None)
    b.daemon.stop()


class Events:
    """Collects callback arguments; `wait` blocks until a matching one arrives (with a deadline)."""

    def __init__(self):
        self._items: list = []
        self._cond = threading.Condition()

    def __call__(self, args):
        with self._cond:
            self._items.append(args)
            self._cond.notify_all()

    @property
    def items(self) -> list:
        with self._cond:
            return list(self._items)

    def wait(self, pred=lambda args: True, timeout: float = 10.0):
        with self._cond:
            found = self._cond.wait_for(lambda: next((a for a in self._items if pred(a)), None), timeout)
            if not found:
                raise AssertionError(f"timed out after {timeout} s; got {self._items!r}")
            return next(a for a in self._items if pred(a))


@pytest.fixture
def events():
    return Events


class ScriptedProvider:
    """The fake provider in `--control` mode: `push` queues how its next chat request is
    answered (tool calls as `(WIRE_NAME, ARGS)`, ARGS a dict or JSON text), later ones get
    `reply`; `requests` returns the chat requests' bodies it received so far."""

    def __init__(self, reply: str = REPLY):
        self.proc = subprocess.Popen(
            [FAKE_PROVIDER_BIN, "--port", "0", "--reply", reply, "--chunks", "2", "--control"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()
        match = re.match(r"listening on (\S+)", self._line())
        assert match, "the fake provider did not say where it listens"
        self.url = match.group(1)

    def _line(self, timeout: float = 10.0) -> str:
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: lines.put(self.proc.stdout.readline()), daemon=True).start()
        try:
            return lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the fake provider did not answer within {timeout} s") from None

    def command(self, command: dict) -> dict:
        with self._lock:
            self.proc.stdin.write(json.dumps(command) + "\n")
            self.proc.stdin.flush()
            answer = json.loads(self._line())
        assert "error" not in answer, answer
        return answer

    def push(self, reply: str | None = None, tool_calls: list | None = None) -> None:
        spec: dict = {}
        if reply is not None:
            spec["reply"] = reply
        if tool_calls is not None:
            spec["toolCalls"] = [[name, args if isinstance(args, str) else json.dumps(args)] for name, args in tool_calls]
            spec.setdefault("reply", "")
        self.command({"push": spec})

    def requests(self) -> list:
        """The chat requests' bodies (those with messages), in order."""
        return [body for body in self.command({"requests": True})["requests"] if isinstance(body, dict) and "messages" in body]

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def scripted(daemon_env):
    """A scripted model as service provider `scripted` of the daemon's config."""
    provider = ScriptedProvider()
    config = Path(daemon_env["GENAI_CONFIG_DIR"]) / "config.toml"
    config.write_text(
        config.read_text() + f'\n[service_providers.scripted]\nkind = "openai"\nbase_url = "{provider.url}"\ndefault_model = "scripted-model"\n'
    )
    yield provider
    provider.close()


@pytest.fixture
def tool_bridge(scripted, daemon_env):
    """A bridge (restart=True) whose daemon knows the `scripted` provider."""
    b = genai_bridge.connect(GENAI_BIN, env=daemon_env, restart=True)
    yield b
    ai.use(None)
    b.daemon.stop()
