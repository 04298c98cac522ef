"""Editor tools over the O3DE level: the model of a `tools` conversation lists the level's
entities and adds one, through the Editor's own buses (`azlmbr.entity.SearchBus`,
`azlmbr.editor.ToolsApplicationRequestBus`, `EditorEntityAPIBus`, `EditorEntityInfoRequestBus`).

* `list_entities` (read-only: runs without asking): every entity of the level, as JSON.
* `add_entity {name}`: a new entity at the level's root, named so. In the `ask` permission
  mode (the default) the user confirms it first.

In the O3DE Editor (Python scripting, this folder's parent on `sys.path`) the real `azlmbr` is
used. Elsewhere the stand-in of `azlmbr_standin.py` is (an in-memory level), so this runs in a
terminal too:

    python examples/level_tools.py --provider openai "Add a Lamp entity, then list the level."
    # --yes allows each ask; otherwise the terminal asks [y/N]

The tools' handlers run on genai_bridge's dispatcher thread. The Editor's buses want its main
thread; set `bridge.tool_runner` to a function that runs the call there and returns its result
if your calls need it (the stand-in does not).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # genai_bridge, when not installed
sys.path.insert(0, str(HERE))  # azlmbr_standin

try:
    import azlmbr  # noqa: F401 (the O3DE Editor's)
except ImportError:  # not in the O3DE Editor: the stand-in level
    import azlmbr_standin

    azlmbr_standin.install()
import azlmbr.bus as azbus  # noqa: E402
import azlmbr.editor as editor  # noqa: E402
import azlmbr.entity as entity  # noqa: E402

IN_EDITOR = not getattr(sys.modules["azlmbr"], "STANDIN", False)

import genai_bridge  # noqa: E402
from genai_bridge import ToolError, bus  # noqa: E402
from genai_bridge.ai import ConversationNotificationBus, ConversationNotificationBusHandler  # noqa: E402

ADD_ENTITY_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "The new entity's name."}},
    "required": ["name"],
}


def list_entities(arguments: dict, call: genai_bridge.ToolCall) -> str:
    """Every entity of the open level: id, name and parent's name, as JSON."""
    ids = entity.SearchBus(azbus.Broadcast, "SearchEntities", entity.SearchFilter())  # no names: all
    found = []
    for entity_id in ids:
        parent = editor.EditorEntityInfoRequestBus(azbus.Event, "GetParent", entity_id)
        found.append(
            {
                "id": entity_id.ToString(),
                "name": editor.EditorEntityInfoRequestBus(azbus.Event, "GetName", entity_id),
                "parent": editor.EditorEntityInfoRequestBus(azbus.Event, "GetName", parent) if parent and parent.IsValid() else None,
            }
        )
    return json.dumps(found)


def add_entity(arguments: dict, call: genai_bridge.ToolCall) -> str:
    """Adds an entity named `name` at the level's root."""
    name = arguments.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolError("add_entity needs a non-empty `name`")
    entity_id = editor.ToolsApplicationRequestBus(azbus.Broadcast, "CreateNewEntity", entity.EntityId())
    if entity_id is None or not entity_id.IsValid():
        raise ToolError(f"the Editor did not create the entity {name!r} (is a level open?)")
    editor.EditorEntityAPIBus(azbus.Event, "SetName", entity_id, name.strip())
    return f"Added the entity {name.strip()} ({entity_id.ToString()}) to the level."


def register_tools(bridge: genai_bridge.Bridge) -> None:
    """Offers both tools to the bridge's `tools` conversations (as `editor.list_entities`, ...)."""
    bridge.register_tool("list_entities", list_entities.__doc__, {"type": "object", "properties": {}}, list_entities, read_only=True)
    bridge.register_tool("add_entity", add_entity.__doc__, ADD_ENTITY_SCHEMA, add_entity)


def ask_on_terminal(request: dict) -> str:
    """A RequestConfirmation answered on the terminal (in the Editor: a dialog)."""
    print(f"? {request.get('text')} [{request.get('tool')}] allow? [y/N] ", end="", flush=True)
    answer = sys.stdin.readline().strip().lower()
    print()
    return "allow_once" if answer in ("y", "yes") else "reject_once"


def run(bridge: genai_bridge.Bridge, message: str, yes: bool = False, wait: float | None = 300.0, **conversation) -> dict | None:
    """Registers the tools, opens a `tools` conversation offering them (`conversation`: more
    CreateConversation params, e.g. serviceProvider, mode) and sends `message`. Prints the
    answer; returns the final response's info (None when `wait` is None: the Editor's main
    thread must not block, the answer is printed when it comes)."""
    register_tools(bridge)
    bridge.on_confirmation((lambda request: "allow_once") if yes else ask_on_terminal)
    address = bridge.create_conversation(feature="tools", tools=["editor"], **conversation)
    done = threading.Event()
    ended: dict = {}

    def on_response(args):
        summary, details, info = args
        if not info.get("final"):
            return
        print(summary)
        for line in details:
            print(f"  · {line}")
        ended.update(info)
        done.set()

    handler = ConversationNotificationBusHandler()
    handler.connect(address)
    handler.add_callback("OnFeatureResponse", on_response)
    run.handler = handler  # kept alive with the module (the Editor keeps scripts' globals)
    ConversationNotificationBus(bus.Event, "OnNewMessage", address, message)
    if wait is None:
        return None
    if not done.wait(wait):
        raise TimeoutError(f"no answer within {wait} s")
    return ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("message", nargs="?", default="Add an entity named Lamp, then list the level's entities.")
    parser.add_argument("--provider", help="a service provider of genai's config (default: genai's default model)")
    parser.add_argument("--model", help="a model id of that provider")
    parser.add_argument("--mode", default="ask", choices=["read-only", "ask", "edit", "full"], help="the permission mode (default: ask)")
    parser.add_argument("--yes", action="store_true", help="allow each ask without asking")
    args = parser.parse_args(argv)
    conversation = {"mode": args.mode}
    if args.provider:
        conversation["serviceProvider"] = args.provider
    if args.model:
        conversation["model"] = args.model
    if IN_EDITOR:  # the Editor's main thread must not wait: the answer is printed when it comes
        global editor_bridge
        editor_bridge = genai_bridge.connect(restart=True)
        run(editor_bridge, args.message, yes=args.yes, wait=None, **conversation)
        return 0
    import azlmbr_standin

    bridge = genai_bridge.connect()
    try:
        info = run(bridge, args.message, yes=args.yes, **conversation)
        print("level: " + ", ".join(azlmbr_standin.LEVEL.names()))
        return 0 if info and info.get("isSuccess") else 1
    finally:
        bridge.daemon.stop()


if __name__ == "__main__":
    code = main()
    if not IN_EDITOR:
        sys.exit(code)
