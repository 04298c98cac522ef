"""Python features as O3DE runs them: a script executed once per conversation.

`script_feature(path)` returns a factory for `Bridge.register_feature`: for each new
conversation it runs the script with `sys.argv = [path, agent, conversation]` in one namespace
shared by all its runs (O3DE's editor has one global Python interpreter, which is why the seed's
script keeps its instances in a global `myFeatures` list).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Callable


def script_feature(path: str | Path) -> Callable[[int, int], None]:
    path = Path(path)
    code = compile(path.read_text(encoding="utf-8"), str(path), "exec")
    namespace: dict = {"__name__": "__genai_feature__", "__file__": str(path)}
    lock = threading.Lock()

    def create(agent: int, conversation: int) -> None:
        with lock:
            saved = sys.argv
            sys.argv = [str(path), str(agent), str(conversation)]
            try:
                exec(code, namespace)
            finally:
                sys.argv = saved

    return create
