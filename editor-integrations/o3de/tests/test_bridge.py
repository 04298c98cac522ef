"""genai_bridge against the real `genai daemon` and the fake provider: the seed's Python
feature hosted here, streaming, tool-call pieces, errors, and daemon restart."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

import genai_bridge
from genai_bridge import bus, script_feature
from genai_bridge.ai import (
    AIAgentRequestBus,
    BusError,
    ConversationNotificationBus,
    ConversationNotificationBusHandler,
)
from genai_bridge.daemon import Daemon, DaemonExited, RpcError

from conftest import GENAI_BIN, REPLY, start_fake_provider

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def widget(address, events_cls):
    """A widget-side handler at a conversation: final responses and chunks."""
    responses, chunks = events_cls(), events_cls()
    handler = ConversationNotificationBusHandler()
    handler.connect(address)
    handler.add_callback("OnFeatureResponse", responses)
    handler.add_callback("OnFeatureResponseChunk", chunks)
    return handler, responses, chunks


def final(args):
    return args[2].get("final")


def test_seed_feature_runs_a_turn_and_the_agent_keeps_the_history(bridge, events):
    bridge.register_feature("seed", script_feature(EXAMPLES / "seed_feature.py"), "The seed's Python feature")
    components = bridge.daemon.request("ListComponents")
    assert {"name": "seed", "origin": "client"}.items() <= next(f for f in components["features"] if f["name"] == "seed").items()

    conversation = bridge.create_conversation(feature="seed", serviceProvider="fast")
    _handler, responses, _chunks = widget(conversation, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "Hi from the widget")
    summary, details, info = responses.wait(final)
    assert info["isSuccess"] is True, info
    assert summary == REPLY
    assert details == ["prompt: the user message", f"reply: {len(REPLY)} characters"]

    history = json.loads(AIAgentRequestBus(bus.Event, "GetHistory", conversation))
    assert [(m["role"], m["content"][0]["text"]) for m in history] == [("user", "Hi from the widget"), ("assistant", REPLY)]

    # A second conversation of the same feature gets its own instance (the script runs again).
    other = bridge.create_conversation(feature="seed", serviceProvider="fast")
    assert other != conversation
    _h2, responses2, _c2 = widget(other, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", other, "Second conversation")
    assert responses2.wait(final)[0] == REPLY


def test_streaming_chunks_add_up_to_the_summary(bridge, events):
    conversation = bridge.create_conversation(feature="assistant", serviceProvider="fast")
    _handler, responses, chunks = widget(conversation, events)
    turn = ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "Stream please")
    summary, _details, info = responses.wait(final)
    assert info["turnId"] == turn and info["isSuccess"] is True
    deltas = [delta for delta, chunk in chunks.items if chunk["turnId"] == turn]
    assert len(deltas) == 4
    assert "".join(deltas) == summary == REPLY


def test_tool_call_chunks_reach_the_conversation_handler(daemon_env, events):
    """A `tools` conversation whose model first calls a tool no plugin serves: the widget sees
    the call's pieces, the error goes back to the model, and its next answer ends the turn."""
    args = '{"day":"today","limit":3}'
    proc, url = start_fake_provider(REPLY, 2, 5, tool_calls=(f"events__getEvents:{args}",))
    config = Path(daemon_env["GENAI_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text() + f'\n[service_providers.caller]\nkind = "openai"\nbase_url = "{url}"\ndefault_model = "caller-model"\n')
    bridge = genai_bridge.connect(GENAI_BIN, env=daemon_env)
    try:
        conversation = bridge.create_conversation(feature="tools", serviceProvider="caller")
        _handler, responses, _chunks = widget(conversation, events)
        pieces = events()
        _handler.add_callback("OnToolCallChunk", pieces)
        turn = ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "What is on today?")
        summary, details, info = responses.wait(final)
        assert info["turnId"] == turn and info["isSuccess"] is True, info
        assert summary == REPLY
        mine = [p for p in pieces.items if p[2]["turnId"] == turn]
        assert len(mine) >= 2, mine
        name, _arguments, first = mine[0]
        assert name == "events__getEvents"  # no plugin knows it: the model's wire name
        assert first["id"] == "call_1" and first["index"] == 0
        assert all(p[0] is None for p in mine[1:]), "the name comes with the first piece only"
        assert "".join(p[1] for p in mine) == args
        assert any(line.startswith(f"tool events__getEvents({args}) → error:") for line in details), details
    finally:
        genai_bridge.ai.use(None)
        bridge.daemon.stop()
        proc.kill()
        proc.wait()


def test_reasoning_reaches_the_on_reasoning_chunk_handler_apart_from_the_reply(daemon_env, events):
    """A model that reasons first: its reasoning comes to `OnReasoningChunk`, never to the
    reply's chunks or summary, and the history keeps it with the reply."""
    proc, url = start_fake_provider("9.8 is larger.", 2, 5, reasoning="Compare the tenths: 8 > 1.")
    config = Path(daemon_env["GENAI_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text() + f'\n[service_providers.thinker]\nkind = "openai"\nbase_url = "{url}"\ndefault_model = "thinker-model"\n')
    bridge = genai_bridge.connect(GENAI_BIN, env=daemon_env)
    try:
        conversation = bridge.create_conversation(serviceProvider="thinker")
        handler, responses, chunks = widget(conversation, events)
        reasoning = events()
        handler.add_callback("OnReasoningChunk", reasoning)
        turn = ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "9.11 or 9.8?")
        summary, _details, info = responses.wait(final)
        assert info["turnId"] == turn and info["isSuccess"] is True, info
        assert summary == "9.8 is larger."
        thought = [r for r in reasoning.items if r[1]["turnId"] == turn]
        assert "".join(r[0] for r in thought) == "Compare the tenths: 8 > 1."
        assert "".join(c[0] for c in chunks.items if c[1]["turnId"] == turn) == "9.8 is larger."
        history = json.loads(AIAgentRequestBus(bus.Event, "GetHistory", conversation))
        assert history[-1]["content"] == [
            {"type": "reasoning", "text": "Compare the tenths: 8 > 1."},
            {"type": "text", "text": "9.8 is larger."},
        ]
    finally:
        genai_bridge.ai.use(None)
        bridge.daemon.stop()
        proc.kill()
        proc.wait()


def test_a_hosted_middleware_sees_each_request_and_its_failure_fails_the_turn(daemon_env, events):
    """`register_middleware`: an agent of the config that lists it sends what the transform
    returns; an exception in the transform fails the turn, naming the middleware."""
    config = Path(daemon_env["GENAI_CONFIG_DIR"]) / "config.toml"
    config.write_text(config.read_text() + '\n[agents.loud]\nprovider = "fast"\nmodel = "fast-model"\nmiddleware = ["shout"]\n')
    bridge = genai_bridge.connect(GENAI_BIN, env=daemon_env)
    seen = []

    def shout(messages, info):
        seen.append((messages, info))
        if any("fail" in part.get("text", "") for m in messages for part in m["content"]):
            raise ValueError("no shouting today")
        return [{"role": m["role"], "content": [{"type": "text", "text": p.get("text", "").upper()} for p in m["content"]]} for m in messages]

    try:
        bridge.register_middleware("shout", shout, timeout_ms=5000)
        conversation = bridge.create_conversation(agent="loud")
        _handler, responses, _chunks = widget(conversation, events)
        turn = ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "hello there")
        summary, details, info = responses.wait(lambda a: final(a) and a[2]["turnId"] == turn)
        assert info["isSuccess"] is True, info
        assert summary == REPLY
        assert "middleware shout (client): 1 messages in, 1 out" in details, details
        messages, about = seen[0]
        assert messages[-1]["content"][0]["text"] == "hello there"
        assert about["model"] == "fast-model" and about["format"] == "openai-chat"

        turn = ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "please fail")
        summary, _details, info = responses.wait(lambda a: final(a) and a[2]["turnId"] == turn)
        assert info["isSuccess"] is False
        assert "middleware shout (client)" in summary and "no shouting today" in summary, summary
        history = json.loads(AIAgentRequestBus(bus.Event, "GetHistory", conversation))
        assert [m["content"][0]["text"] for m in history] == ["hello there", REPLY], "the history is what was said"
    finally:
        genai_bridge.ai.use(None)
        bridge.daemon.stop()


def test_prompt_chunks_reach_the_agent_handler(bridge, events):
    conversation = bridge.create_conversation(feature="assistant", serviceProvider="fast")
    replies, chunks = events(), events()
    handler = genai_bridge.ai.AIAgentNotificationBusHandler()
    handler.connect(conversation)
    handler.add_callback("OnPromptResponse", replies)
    handler.add_callback("OnPromptResponseChunk", chunks)
    AIAgentRequestBus(bus.Event, "SendPrompt", conversation, "Direct prompt")
    text, info = replies.wait()
    assert json.loads(text)["content"][0]["text"] == REPLY
    assert info["isSuccess"] is True
    assert "".join(delta for delta, _ in chunks.items) == REPLY


def test_errors_are_reported_not_swallowed(bridge, events):
    # A provider that is down: the turn ends with the provider's error.
    down = bridge.create_conversation(feature="assistant", serviceProvider="down")
    _h, responses, _c = widget(down, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", down, "Anyone?")
    summary, _details, info = responses.wait(final)
    assert info["isSuccess"] is False and info["error"]["kind"] == "providerError"
    assert "cannot connect" in summary

    # A bad request: RpcError with the daemon's kind.
    with pytest.raises(RpcError) as err:
        bridge.create_conversation(feature="assistant", serviceProvider="nope")
    assert err.value.kind == "unknownComponent" and "nope" in str(err.value)

    # An address nobody opened.
    with pytest.raises(BusError, match="no conversation at address 999"):
        ConversationNotificationBus(bus.Event, "OnNewMessage", 999, "x")

    # A hosted feature that raises: the turn ends with the feature's error instead of hanging.
    def broken(agent, conversation):
        raise RuntimeError("the feature could not load its context")

    bridge.register_feature("broken", broken)
    conversation = bridge.create_conversation(feature="broken", serviceProvider="fast")
    _h2, responses2, _c2 = widget(conversation, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "Go")
    summary, _details, info = responses2.wait(final)
    assert info["isSuccess"] is False and info["error"]["kind"] == "featureError"
    assert "the feature could not load its context" in summary


def test_daemon_restart_fails_the_running_turn_and_features_come_back(bridge, events):
    restarted, exits = events(), events()
    bridge.daemon.on_start(restarted)
    bridge.daemon.on_exit(exits)
    bridge.register_feature("seed", script_feature(EXAMPLES / "seed_feature.py"))
    before = bridge.create_conversation(feature="seed", serviceProvider="fast")
    _h0, responses0, _c0 = widget(before, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", before, "Before the restart")
    assert responses0.wait(final)[0] == REPLY
    slow = bridge.create_conversation(feature="assistant", serviceProvider="slow")
    _h, responses, chunks = widget(slow, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", slow, "Count slowly")
    chunks.wait()
    first_pid = bridge.daemon.pid
    os.kill(first_pid, signal.SIGKILL)

    summary, _details, info = responses.wait(final)
    assert info["isSuccess"] is False and info["error"]["kind"] == "daemonExited"
    assert "killed by signal 9; starting it again" in summary
    assert exits.wait().will_restart is True
    assert restarted.wait() == 2
    assert bridge.daemon.pid != first_pid

    # The feature is registered again in the new daemon and serves a new conversation.
    conversation = bridge.create_conversation(feature="seed", serviceProvider="fast")
    _h2, responses2, _c2 = widget(conversation, events)
    ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "After the restart")
    assert responses2.wait(final)[0] == REPLY

    # A conversation opened before the restart is resumed on its next message, with its history.
    ConversationNotificationBus(bus.Event, "OnNewMessage", before, "Still there?")
    assert responses0.wait(lambda a: final(a) and a[2]["turnId"] != responses0.items[0][2]["turnId"])[0] == REPLY
    history = json.loads(AIAgentRequestBus(bus.Event, "GetHistory", before))
    assert [m["content"][0]["text"] for m in history if m["role"] == "user"] == ["Before the restart", "Still there?"]


def test_calls_waiting_when_the_daemon_exits_fail_with_its_reason(daemon_env):
    daemon = Daemon(GENAI_BIN, env=daemon_env, restart=False).start()
    try:
        daemon.request("ListComponents")
        os.kill(daemon.pid, signal.SIGKILL)
        with pytest.raises(DaemonExited, match="killed by signal 9; not starting it again|not running"):
            # Either the call was waiting when the process died, or it starts after that.
            daemon.request("ListConversations", {}, timeout=10)
    finally:
        daemon.stop()


def test_a_daemon_that_cannot_start_is_named():
    with pytest.raises(OSError, match="cannot start the genai daemon `/nonexistent/genai`"):
        Daemon("/nonexistent/genai").start()


def test_chat_widget_example_chats_in_the_terminal(daemon_env):
    """The PySide widget's example without PySide (--text): the same ChatSession, in a terminal."""
    import subprocess
    import sys

    env = dict(daemon_env, GENAI_BIN=GENAI_BIN)
    run = subprocess.run(
        [sys.executable, str(EXAMPLES / "chat_widget.py"), "--text", "--provider", "fast"],
        input="Hello there\n\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert "> Hello there" in run.stdout
    assert REPLY in run.stdout
    assert "· provider: fast (openai)" in run.stdout


def test_chat_widget_window_streams_a_reply(bridge, tmp_path):
    """The PySide window itself, offscreen (skipped where PySide6/PySide2 is not installed)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("chat_widget", EXAMPLES / "chat_widget.py")
    chat_widget = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chat_widget)
    qt = chat_widget.import_qt()
    if qt is None:
        pytest.skip("PySide6/PySide2 is not installed (the window is optional)")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    QtCore, QtWidgets = qt
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv)
    conversation = bridge.create_conversation(feature="assistant", serviceProvider="fast")
    window = chat_widget.build_window(conversation, qt)
    window.details.setChecked(True)
    window.show()
    loop = QtCore.QEventLoop()
    window.signals.response.connect(lambda *_: loop.quit())
    QtCore.QTimer.singleShot(10_000, loop.quit)  # the deadline
    window.prompt.setText("Hello window")
    window.send()
    loop.exec() if hasattr(loop, "exec") else loop.exec_()
    text = window.log.toPlainText()
    assert "You: Hello window" in text
    assert REPLY in text
    assert "provider: fast (openai)" in text
    shot = Path(__file__).resolve().parents[1] / "test-artifacts"
    shot.mkdir(exist_ok=True)
    window.grab().save(str(shot / "chat_widget.png"))
    window.close()
