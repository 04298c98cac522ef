"""genai_bridge: the genai daemon for O3DE-style Python editors, standard library only.

    import genai_bridge
    bridge = genai_bridge.connect()              # spawns `genai daemon` (GENAI_BIN or PATH)
    from genai_bridge import bus
    from genai_bridge.ai import ConversationNotificationBus, ConversationNotificationBusHandler

`daemon` is the process and JSON-RPC, `ai` the `azlmbr.ai`-style buses, `bus` the addressing
constants, `features` the script-per-conversation features, `tools` the editor-hosted tools
(`bridge.register_tool(...)` or `@genai_bridge.tool(...)`).
"""

from __future__ import annotations

from . import ai, bus, tools
from .ai import Bridge, BusError, tool
from .daemon import ClientError, Daemon, DaemonExit, DaemonExited, RpcError
from .features import script_feature
from .tools import ToolCall, ToolError, ToolResult, image_part

__all__ = [
    "Bridge",
    "BusError",
    "ClientError",
    "Daemon",
    "DaemonExit",
    "DaemonExited",
    "RpcError",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ai",
    "bus",
    "connect",
    "image_part",
    "script_feature",
    "tool",
    "tools",
]


def connect(command: str | None = None, **daemon_options) -> Bridge:
    """Starts a daemon, wraps it in a Bridge and makes that the buses' bridge."""
    daemon = Daemon(command, **daemon_options).start()
    daemon.request("Initialize", {"clientInfo": {"name": "genai_bridge"}, "capabilities": {"streaming": True}})
    bridge = Bridge(daemon)
    ai.use(bridge)
    return bridge
