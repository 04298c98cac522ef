"""Editor-hosted tools against the real `genai daemon` and a scripted model (the fake provider
in `--control` mode): the model calls `editor__NAME`, the bridge runs the Python handler, and
the model's next request carries what it returned. The level is examples/azlmbr_standin.py's."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import genai_bridge
from genai_bridge import ToolError, bus
from genai_bridge.ai import ConversationNotificationBus, ConversationNotificationBusHandler
from genai_bridge.daemon import RpcError

from conftest import GENAI_BIN, REPLY

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def level_tools():
    """examples/level_tools.py, imported once, on a fresh stand-in level."""
    module = sys.modules.get("level_tools")
    if module is None:
        spec = importlib.util.spec_from_file_location("level_tools", EXAMPLES / "level_tools.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["level_tools"] = module
        spec.loader.exec_module(module)
    assert module.IN_EDITOR is False
    import azlmbr_standin

    azlmbr_standin.LEVEL.reset()
    module.LEVEL = azlmbr_standin.LEVEL
    return module


def open_tools_conversation(bridge, events, **params):
    """A `tools` conversation offering the editor's tools, on the scripted model; its widget."""
    address = bridge.create_conversation(feature="tools", tools=["editor"], serviceProvider="scripted", **params)
    responses = events()
    handler = ConversationNotificationBusHandler()
    handler.connect(address)
    handler.add_callback("OnFeatureResponse", responses)
    return address, responses, handler


def turn(address, responses, text, timeout=20.0):
    """Sends `text`; returns (turn id, summary, details, info) of its final response."""
    turn_id = ConversationNotificationBus(bus.Event, "OnNewMessage", address, text)
    summary, details, info = responses.wait(lambda a: a[2].get("final") and a[2]["turnId"] == turn_id, timeout)
    return turn_id, summary, details, info


def tool_results(body):
    """The `tool` messages of a chat request: {tool_call_id: its text}."""

    def text(content):
        if isinstance(content, str):
            return content
        return "\n".join(p.get("text", json.dumps(p)) if isinstance(p, dict) else str(p) for p in content or [])

    return {m["tool_call_id"]: text(m["content"]) for m in body["messages"] if m["role"] == "tool"}


def offered(body):
    """The tools a chat request offered: {wire name: function}."""
    return {t["function"]["name"]: t["function"] for t in body.get("tools", [])}


def test_the_model_calls_a_read_only_tool_and_reads_its_result(tool_bridge, scripted, events, level_tools):
    asks, seen = [], []
    tool_bridge.on_confirmation(lambda request: asks.append(request) or "allow_once")

    @genai_bridge.tool(read_only=True)  # the connected bridge; name and description from here
    def list_entities(arguments, call):
        """Every entity of the open level.

        (Not this paragraph.)"""
        seen.append((arguments, call))
        return level_tools.list_entities(arguments, call)

    assert list_entities.tool_name == "list_entities"
    scripted.push(tool_calls=[("editor__list_entities", {})])
    address, responses, _h = open_tools_conversation(tool_bridge, events, mode="ask")
    turn_id, summary, details, info = turn(address, responses, "What is in the level?")
    assert info["isSuccess"] is True, info
    assert summary == REPLY

    # The handler ran once, told which conversation, turn and call it serves.
    assert len(seen) == 1, seen
    arguments, call = seen[0]
    assert arguments == {}
    assert call == genai_bridge.ToolCall(
        conversation_id=tool_bridge.conversation_id(address), turn_id=turn_id, call_id="call_1", name="list_entities", conversation=address
    )
    assert asks == [], "a read-only tool is not confirmed in ask mode"
    assert any("editor.list_entities" in line for line in details), details

    # The model was offered the tool under its wire name, and read the level in the next request.
    requests = scripted.requests()
    assert len(requests) == 2, requests
    function = offered(requests[0])["editor__list_entities"]
    assert function["description"] == "Every entity of the open level."
    assert function["parameters"] == {"type": "object", "properties": {}}
    result = tool_results(requests[1])["call_1"]
    for name in ("Atom Default Environment", "Camera", "Sun"):
        assert name in result, result


def test_add_entity_in_ask_mode_is_confirmed_first(tool_bridge, scripted, events, level_tools):
    asks = []
    answers = iter(["allow_once", "reject_once"])
    tool_bridge.on_confirmation(lambda request: asks.append(request) or next(answers))
    level_tools.register_tools(tool_bridge)
    scripted.push(tool_calls=[("editor__add_entity", {"name": "Lamp"})])
    scripted.push(reply="Lamp added.")
    scripted.push(tool_calls=[("editor__add_entity", {"name": "Tree"})])
    scripted.push(reply="Tree not added.")
    address, responses, _h = open_tools_conversation(tool_bridge, events, mode="ask")

    # Allowed: the entity is in the level and the model is told so.
    turn_id, summary, _details, info = turn(address, responses, "Add a lamp")
    assert info["isSuccess"] is True, info
    assert summary == "Lamp added."
    assert len(asks) == 1, asks
    ask = asks[0]
    assert ask["tool"] == "editor.add_entity" and ask["toolCallId"] == "call_1"
    assert ask["turnId"] == turn_id and ask["conversation"] == address
    assert ask["permission"]["arguments"] == {"name": "Lamp"}, ask
    assert "allow_once" in ask["permission"]["options"], ask
    assert level_tools.LEVEL.names()[-1] == "Lamp"
    requests = scripted.requests()
    assert "Added the entity Lamp" in tool_results(requests[1])["call_1"]

    # Refused: the handler does not run, and the model hears it was not done.
    turn_id, summary, _details, info = turn(address, responses, "Add a tree")
    assert info["isSuccess"] is True, info
    assert summary == "Tree not added."
    assert len(asks) == 2 and asks[1]["turnId"] == turn_id
    assert "Tree" not in level_tools.LEVEL.names()
    refused = tool_results(scripted.requests()[3])["call_1"]
    assert refused and "Added the entity" not in refused, refused


def test_a_handler_that_raises_is_a_failed_call_for_the_model(tool_bridge, scripted, events):
    @tool_bridge.tool(read_only=True)
    def explode(arguments, call):
        """Fails the Python way."""
        raise ValueError("the viewport is gone")

    @tool_bridge.tool("refuse", "Fails on purpose.", read_only=True)
    def refuse_handler(arguments, call):
        raise ToolError("no level is open")

    scripted.push(tool_calls=[("editor__explode", {}), ("editor__refuse", {})])
    address, responses, _h = open_tools_conversation(tool_bridge, events, mode="ask")
    _turn, summary, details, info = turn(address, responses, "Try both")
    assert info["isSuccess"] is True, info  # a failed call is the model's to handle
    assert summary == REPLY
    results = tool_results(scripted.requests()[1])
    assert "the viewport is gone" in results["call_1"] and "ValueError" in results["call_1"], results
    assert "no level is open" in results["call_2"], results
    calls = [line for line in details if line.startswith(("tool editor.explode", "tool editor.refuse"))]
    assert len(calls) == 2 and all("→ error" in line for line in calls), details


def test_a_handler_past_its_timeout_is_reported_and_the_late_answer_is_harmless(tool_bridge, scripted, events):
    def slow(arguments, call):
        time.sleep(1.5)
        return "too late"

    tool_bridge.register_tool("slow", "Takes its time.", {"type": "object", "properties": {}}, slow, read_only=True, timeout_ms=300)
    scripted.push(tool_calls=[("editor__slow", {})])
    address, responses, _h = open_tools_conversation(tool_bridge, events)
    _turn, summary, _details, info = turn(address, responses, "Be quick")
    assert info["isSuccess"] is True, info
    result = tool_results(scripted.requests()[1])["call_1"]
    assert "editor.slow" in result and "did not answer within" in result, result
    assert "too late" not in result
    time.sleep(1.5)  # the handler answers now, to a call the daemon gave up on
    _turn, summary, _details, info = turn(address, responses, "Still there?")
    assert info["isSuccess"] is True and summary == REPLY, info


def test_register_replace_unregister_and_bad_input(tool_bridge, scripted, events):
    def echo(arguments, call):
        return [f"echo {arguments}", {"type": "text", "text": "second part"}]

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    assert tool_bridge.register_tool("echo", "Echoes.", schema, echo) == "editor.echo"
    assert tool_bridge.register_tool("echo", "Echoes, replaced.", schema, echo, read_only=True) == "editor.echo"
    tool_bridge.register_tool("gone", "Soon gone.", schema, echo)
    tool_bridge.unregister_tool("gone")
    assert set(tool_bridge.tools) == {"echo"}

    with pytest.raises(RpcError) as err:
        tool_bridge.register_tool("no spaces!", "Bad name.", schema, echo)
    assert err.value.code == -32602 and "name" in str(err.value), err.value
    with pytest.raises(RpcError) as err:
        tool_bridge.register_tool("listy", "Bad schema.", {"type": "array"}, echo)
    assert err.value.code == -32602 and "inputSchema" in str(err.value), err.value
    with pytest.raises(RpcError) as err:
        tool_bridge.unregister_tool("never_registered")
    assert err.value.code == -32602, err.value

    scripted.push(tool_calls=[("editor__echo", {"text": "hi"})])
    address, responses, _h = open_tools_conversation(tool_bridge, events, mode="ask")
    _turn, _summary, _details, info = turn(address, responses, "Echo hi")
    assert info["isSuccess"] is True, info
    requests = scripted.requests()
    tools = offered(requests[0])
    assert "editor__gone" not in tools and "editor__no spaces!" not in tools, list(tools)
    assert tools["editor__echo"]["description"] == "Echoes, replaced."
    assert tools["editor__echo"]["parameters"] == schema
    result = tool_results(requests[1])["call_1"]
    assert "echo {'text': 'hi'}" in result and "second part" in result, result


def test_tools_are_registered_again_after_the_daemon_restarts(tool_bridge, scripted, events, level_tools):
    restarted = events()
    tool_bridge.daemon.on_start(restarted)
    level_tools.register_tools(tool_bridge)
    os.kill(tool_bridge.daemon.pid, signal.SIGKILL)
    assert restarted.wait(timeout=20) == 2

    # The bridge's own start handler (registering again) ran before this test's.
    scripted.push(tool_calls=[("editor__list_entities", {})])
    address, responses, _h = open_tools_conversation(tool_bridge, events, mode="ask")
    _turn, summary, _details, info = turn(address, responses, "What is in the level now?")
    assert info["isSuccess"] is True and summary == REPLY, info
    requests = scripted.requests()
    assert {"editor__list_entities", "editor__add_entity"} <= set(offered(requests[0])), offered(requests[0])
    assert "Atom Default Environment" in tool_results(requests[1])["call_1"]


def test_level_tools_example_adds_an_entity_to_the_stand_in_level(daemon_env, scripted):
    """The example as a script: the model adds Lamp (confirmed on the terminal), lists the
    level, answers; the script prints the answer and the stand-in level."""
    scripted.push(tool_calls=[("editor__add_entity", {"name": "Lamp"})])
    scripted.push(tool_calls=[("editor__list_entities", {})])
    scripted.push(reply="Lamp is in the level now.")
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "level_tools.py"), "--provider", "scripted", "Add a lamp, then list the level."],
        input="y\n",
        capture_output=True,
        text=True,
        env=dict(daemon_env, GENAI_BIN=GENAI_BIN),
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Lamp is in the level now." in run.stdout
    assert "level: Atom Default Environment, Camera, Global Sky, Ground, Sun, Lamp" in run.stdout, run.stdout
    requests = scripted.requests()
    assert len(requests) == 3, requests
    assert "Added the entity Lamp" in tool_results(requests[1])["call_1"]
    assert '"name": "Lamp"' in tool_results(requests[2])["call_1"], requests[2]
    # ask mode (the example's default) asked on the terminal before add_entity ran.
    asked = [line for line in run.stdout.splitlines() if "allow? [y/N]" in line]
    assert len(asked) == 1 and "editor.add_entity" in asked[0], run.stdout
