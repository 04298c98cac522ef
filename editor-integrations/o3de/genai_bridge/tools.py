"""Editor-hosted tools: Python functions the model of a `tools` conversation may call.

    @genai_bridge.tool(read_only=True)
    def list_entities(arguments, call):
        "The level's entities, one per line."
        return "\\n".join(names_of_the_level())

    bridge.register_tool("add_entity", "Adds an entity to the level.",
                         {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                         add_entity)

A tool named NAME is `editor.NAME` to the daemon (`editor__NAME` on the model's wire); a
conversation offers it with `CreateConversation {feature: "tools", tools: ["editor"]}`. When the
model calls it, the daemon sends `OnToolCall` and the bridge runs `handler(arguments, call)`:

* `arguments`: the model's JSON object (a dict); `call`: a `ToolCall` (conversation, turn, call ids);
* it returns a `str` (one text part), a list of parts (`str`, `{"type": "text", ...}`,
  `image_part(...)`), a `ToolResult`, `None` (no content) or any other JSON value (sent as its
  JSON text);
* it raises `ToolError("...")` for a failure the model should read as it is (the answer
  `{content: [text], isError: true}`); any other exception is a JSON-RPC error answer naming the
  tool and the exception (its traceback goes to the `genai_bridge` logger). The model sees either
  as a failed call.

`read_only=True` tools run without asking in the `read-only` and `ask` permission modes; others
are confirmed first in `ask` mode (`RequestConfirmation`, see `Bridge.on_confirmation`).
"""

from __future__ import annotations

import base64
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable

#: The source the daemon files the editor's tools under.
SOURCE = "editor"

#: A tool's handler: (arguments, call) -> str | list of parts | ToolResult | None | JSON value.
ToolHandler = Callable[[dict, "ToolCall"], Any]

#: The input schema of a tool that takes no arguments.
NO_ARGUMENTS = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class ToolCall:
    """One call of an editor tool by the model."""

    conversation_id: str
    turn_id: str
    call_id: str
    name: str
    #: The conversation's bus address (the number `Bridge.create_conversation` returned).
    conversation: int | None = None


class ToolError(Exception):
    """Raised by a tool's handler: the call failed, and the model reads this message."""


@dataclass
class ToolResult:
    """A handler's answer given in full: its content parts and whether it is a failure."""

    content: Any = field(default_factory=list)
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    """A registered tool, kept so that it is registered again in a restarted daemon."""

    name: str
    description: str
    input_schema: dict
    handler: ToolHandler
    read_only: bool = False
    timeout_ms: int | None = None

    def params(self) -> dict:
        """The `RegisterTool` params."""
        params: dict[str, Any] = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.read_only:
            params["readOnly"] = True
        if self.timeout_ms is not None:
            params["timeoutMs"] = self.timeout_ms
        return params


def text_part(text: str) -> dict:
    return {"type": "text", "text": str(text)}


def image_part(data: bytes, media_type: str = "image/png") -> dict:
    """An image part (a viewport capture, say) from the image file's bytes."""
    return {"type": "image", "mediaType": media_type, "data": base64.b64encode(data).decode("ascii")}


def answer(value: Any) -> dict:
    """A handler's return value as the `OnToolCall` result `{content: Part[], isError?}`."""
    if isinstance(value, ToolResult):
        result: dict[str, Any] = {"content": parts(value.content)}
        if value.is_error:
            result["isError"] = True
        return result
    return {"content": parts(value)}


def parts(value: Any) -> list:
    """`None` → no part; a string → one text part; a part → itself; a list or tuple → each item
    so; anything else → its JSON text."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [one for item in value for one in parts(item)]
    if isinstance(value, str):
        return [text_part(value)]
    if isinstance(value, dict) and value.get("type") in ("text", "image"):
        return [value]
    return [text_part(json.dumps(value, ensure_ascii=False, default=str))]


def description_of(handler: Callable) -> str:
    """A handler's docstring, its first paragraph, on one line."""
    doc = inspect.getdoc(handler) or ""
    return " ".join(doc.split("\n\n")[0].split())
