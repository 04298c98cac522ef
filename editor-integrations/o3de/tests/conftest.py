"""Fixtures: the fake provider (examples/fake-provider.rs) and a genai daemon with its own
config and data folders, both real processes; waits have deadlines."""

from __future__ import annotations

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
