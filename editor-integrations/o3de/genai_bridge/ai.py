"""The `azlmbr.ai` buses of the O3DE GenAIFramework, carried over the genai daemon.

O3DE addresses a conversation and an agent by a number (`AZ::u64`); the daemon by a ULID. The
`Bridge` gives each conversation a number, and the conversation's own agent the *same* number
(as the seed's PythonFeatureBase passes one id for both), so a feature script sees the numbers
it expects. Bus calls and handlers then read as in O3DE:

    ConversationNotificationBus(bus.Event, "OnNewMessage", conversation, "Hello")      # widget
    ConversationNotificationBus(bus.Event, "OnFeatureResponse", conversation, summary, details)  # feature
    AIAgentRequestBus(bus.Event, "SendPrompt", agent, json_prompt)
    AIAgentRequestBus(bus.Event, "GetHistory", agent)          # -> JSON text

    handler = ConversationNotificationBusHandler(); handler.connect(conversation)
    handler.add_callback("OnFeatureResponse", fn)    # fn([summary, detailedResponse, info])

Events a handler can receive (each callback gets one list, as O3DE's Python handlers do):

* ConversationNotificationBus: `OnNewMessage` [text, message] (feature side, a turn started),
  `OnFeatureResponseChunk` [delta, info], `OnReasoningChunk` [delta, info] (a piece of the
  model's reasoning, apart from the reply's chunks), `OnFeatureResponse` [summary, detailedResponse, info]
  (widget side; `info` is the whole notification: isSuccess, final, error, turnId, usage...),
  `OnToolCallChunk` [name, arguments, info] (widget side, a `tools` conversation: a piece of a
  tool call the model writes; `name` comes with a call's first piece and is None after it,
  `arguments` is the next piece of its JSON arguments, `info` has index, id, turnId).
* AIAgentNotificationBus: `OnAIResponse` / `OnPromptResponse` [json_text, info] where json_text
  is the reply message, or `{"error": {"kind", "message"}}` when the prompt failed;
  `OnPromptResponseChunk` [delta, info].

Callbacks run on the daemon's dispatcher thread, one at a time, in arrival order.

Middleware: `bridge.register_middleware(name, transform)` hosts a middleware the config's
agents may list (`middleware = ["name"]`): before each request of such an agent the daemon calls
`transform(messages, info)` with the messages about to be sent (dicts as in docs/PROTOCOL.md;
`info` has `format` and `model`) and sends the messages it returns. An exception fails the turn.

Editor tools: `bridge.register_tool(name, description, input_schema, handler)` (or the
`genai_bridge.tool` decorator, see `tools.py`) offers `editor.NAME` to `tools` conversations;
the daemon's `OnToolCall` runs `handler(arguments, call)` (through `bridge.tool_runner` when one
is set, e.g. to run it on the editor's main thread). `bridge.on_confirmation(fn)` answers the
daemon's `RequestConfirmation` (a call the permission mode asks about); without it every ask is
refused.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from typing import Any, Callable

from . import bus as _bus
from .daemon import ClientError, Daemon, DaemonExit
from .tools import NO_ARGUMENTS, Tool, ToolCall, ToolError, ToolHandler, answer as _tool_answer, description_of

log = logging.getLogger("genai_bridge")

CONVERSATION_BUS = "ConversationNotificationBus"
AGENT_BUS = "AIAgentNotificationBus"
#: Callback names that mean the same event (the seed calls the agent's answer OnAIResponse).
ALIASES = {"OnAIResponse": "OnPromptResponse"}

#: How many early-ended turns are remembered (turns asked for by other means never claim theirs).
EARLY_KEPT = 256

#: Creates a feature's instance for one conversation: create(agent_address, conversation_address).
FeatureFactory = Callable[[int, int], Any]
#: A hosted middleware: (messages, info) -> the messages to send.
Middleware = Callable[[list, dict], list]
#: Answers a RequestConfirmation: (request) -> True/False, an option name, or the whole answer dict.
ConfirmationHandler = Callable[[dict], Any]


class BusError(Exception):
    """A bus call that cannot be carried out (unknown address, wrong addressing)."""


class Bridge:
    """One daemon, seen through the GenAIFramework's buses."""

    def __init__(self, daemon: Daemon):
        self.daemon = daemon
        self._lock = threading.RLock()
        self._numbers = itertools.count(1)
        self._address_of: dict[str, int] = {}
        self._conversation_at: dict[int, str] = {}
        self._agent_at: dict[int, str] = {}
        self._handlers: dict[tuple[str, int | None], list["_Handler"]] = {}
        #: Feature side: the turn of each conversation that waits for an OnFeatureResponse.
        self._waiting_turn: dict[str, str] = {}
        #: Widget side: turns asked for and not ended, per conversation.
        self._running: dict[str, set[str]] = {}
        #: Turns whose final notification came before the `{turnId}` answer (PROTOCOL.md, Guarantees).
        self._ended_early: dict[str, None] = {}  # an ordered set, trimmed to EARLY_KEPT
        #: The daemon generation each conversation is open in (a restarted daemon has none open).
        self._opened_in: dict[str, int] = {}
        self._features: dict[str, tuple[FeatureFactory, str]] = {}
        self._features_registered_in = daemon.generation
        self._feature_instances: set[tuple[str, int]] = set()
        self._middleware: dict[str, tuple[Middleware, int | None]] = {}
        self._tools: dict[str, Tool] = {}
        self._confirm: ConfirmationHandler | None = None
        #: Runs each tool call, `tool_runner(call_the_handler)`: None runs it on the dispatcher
        #: thread; the editor may hand it to its main thread and return the result.
        self.tool_runner: Callable[[Callable[[], Any]], Any] | None = None
        daemon.on_request("OnMiddleware", self._on_middleware)
        daemon.on_request("OnToolCall", self._on_tool_call)
        daemon.on_request("RequestConfirmation", self._on_request_confirmation)
        for method, handler in [
            ("OnNewMessage", self._on_new_message),
            ("OnFeatureResponse", self._on_feature_response),
            ("OnFeatureResponseChunk", self._on_feature_chunk),
            ("OnReasoningChunk", self._on_reasoning_chunk),
            ("OnToolCallChunk", self._on_tool_call_chunk),
            ("OnPromptResponse", self._on_prompt_response),
            ("OnPromptResponseChunk", self._on_prompt_chunk),
        ]:
            daemon.on_notification(method, handler)
        daemon.on_exit(self._on_exit)
        daemon.on_start(self._on_start)

    # ---- addresses ----------------------------------------------------------------------

    def _address(self, conversation_id: str, agent_id: str | None = None) -> int:
        with self._lock:
            address = self._address_of.get(conversation_id)
            if address is None:
                address = next(self._numbers)
                self._address_of[conversation_id] = address
                self._conversation_at[address] = conversation_id
            if agent_id:
                self._address_of[agent_id] = address
                self._agent_at[address] = agent_id
                self._opened_in[conversation_id] = self.daemon.generation
            return address

    def conversation_id(self, address: int) -> str:
        with self._lock:
            if address not in self._conversation_at:
                raise BusError(f"no conversation at address {address}")
            return self._conversation_at[address]

    def agent_id(self, address: int) -> str:
        with self._lock:
            if address not in self._agent_at:
                raise BusError(f"no agent at address {address} (is its conversation open?)")
            return self._agent_at[address]

    # ---- conversations and features -----------------------------------------------------

    def create_conversation(self, **params: Any) -> int:
        """`CreateConversation` (camelCase params as in docs/PROTOCOL.md); returns its address."""
        opened = self.daemon.request("CreateConversation", params)
        return self._address(opened["conversationId"], opened["agentId"])

    def resume_conversation(self, conversation: int | str) -> int:
        """Reopens a stored conversation (by address, id or id prefix); returns its address."""
        conversation_id = self.conversation_id(conversation) if isinstance(conversation, int) else conversation
        self._register_features_again()
        opened = self.daemon.request("ResumeConversation", {"conversationId": conversation_id})
        return self._address(opened["conversationId"], opened["agentId"])

    def register_feature(self, name: str, create: FeatureFactory, description: str = "") -> None:
        """Hosts feature `name` here: for each conversation that uses it, from any client, the
        first message calls `create(agent, conversation)`, which connects its handlers (as the
        seed's PythonFeatureBase runs its script). Registered again after a daemon restart."""
        self.daemon.request("RegisterFeature", {"name": name, "description": description})
        with self._lock:
            self._features[name] = (create, description)

    def register_middleware(self, name: str, transform: "Middleware", timeout_ms: int | None = None) -> None:
        """Hosts middleware `name` here: `transform(messages, info)` returns the messages each
        request of an agent that lists it sends, within `timeout_ms` (the daemon's default
        otherwise). Registered again after a daemon restart."""
        params: dict[str, Any] = {"name": name}
        if timeout_ms is not None:
            params["timeoutMs"] = timeout_ms
        self.daemon.request("RegisterMiddleware", params)
        with self._lock:
            self._middleware[name] = (transform, timeout_ms)

    def _on_middleware(self, p: dict) -> dict:
        with self._lock:
            entry = self._middleware.get(p.get("name", ""))
        if entry is None:
            raise BusError(f"no middleware {p.get('name')!r} is hosted here")
        messages = entry[0](p.get("messages", []), {"format": p.get("format"), "model": p.get("model"), "name": p.get("name")})
        return {"messages": list(messages)}

    # ---- editor tools -------------------------------------------------------------------

    def register_tool(
        self,
        name: str,
        description: str,
        input_schema: dict,
        handler: ToolHandler,
        read_only: bool = False,
        timeout_ms: int | None = None,
    ) -> str:
        """Offers tool `editor.NAME` to the `tools` conversations: a model's call runs
        `handler(arguments, call)` here (see `tools.py` for what it returns or raises).
        `read_only` tools are not confirmed in `ask` mode; `timeout_ms` is how long the handler
        may take (the daemon's default, 60 s, otherwise). Registering a name again replaces it;
        registered again after a daemon restart. Returns the full name (`editor.NAME`); a bad
        name or schema raises RpcError (-32602)."""
        tool = Tool(name, description, input_schema, handler, read_only, timeout_ms)
        registered = self.daemon.request("RegisterTool", tool.params())
        with self._lock:
            self._tools[name] = tool
        return (registered or {}).get("tool", f"editor.{name}")

    def unregister_tool(self, name: str) -> None:
        """Withdraws tool `name`; one this bridge did not register raises RpcError (-32602)."""
        with self._lock:
            self._tools.pop(name, None)
        self.daemon.request("UnregisterTool", {"name": name})

    def tool(self, name: Any = None, description: str | None = None, input_schema: dict | None = None, **options: Any) -> Any:
        """The `genai_bridge.tool` decorator, registering with this bridge."""
        return tool(name, description, input_schema, bridge=self, **options)

    @property
    def tools(self) -> dict[str, Tool]:
        with self._lock:
            return dict(self._tools)

    def on_confirmation(self, handler: ConfirmationHandler | None) -> None:
        """Answers the daemon's `RequestConfirmation` with `handler(request)`: `request` is its
        params (`text`, `tool`, `toolCallId`, `permission {subject?, arguments, reason, rule,
        options}` or `link`, ...) plus `conversation`, the bus address. It returns True / False
        (allow or refuse once), an option (`allow_once`, `allow_always`, `reject_once`,
        `reject_always`) or the answer dict itself. None (the default): every ask is refused."""
        self._confirm = handler

    def _on_tool_call(self, p: dict) -> dict:
        name = p.get("name", "")
        with self._lock:
            tool = self._tools.get(name)
        if tool is None:
            raise ClientError(f"editor.{name}: no such tool is registered in this editor", code=-32602, kind="invalidParams")
        conversation_id = p.get("conversationId", "")
        call = ToolCall(
            conversation_id=conversation_id,
            turn_id=p.get("turnId", ""),
            call_id=p.get("callId", ""),
            name=name,
            conversation=self._address(conversation_id) if conversation_id else None,
        )
        arguments = p.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        run = self.tool_runner or (lambda fn: fn())
        try:
            value = run(lambda: tool.handler(arguments, call))
        except ToolError as err:
            return {"content": [{"type": "text", "text": str(err)}], "isError": True}
        except Exception as err:
            log.exception("editor tool %s failed", name)
            raise ClientError(f"editor.{name} failed: {type(err).__name__}: {err}") from err
        return _tool_answer(value)

    def _on_request_confirmation(self, p: dict) -> dict:
        handler = self._confirm
        if handler is None:
            log.warning("refused %s (%s): no confirmation handler, see Bridge.on_confirmation", p.get("tool"), p.get("text"))
            return {"confirmed": False, "option": "reject_once"} if p.get("permission") else {"confirmed": False}
        request = dict(p, conversation=self._address(p["conversationId"]) if p.get("conversationId") else None)
        given = handler(request)
        if isinstance(given, dict):
            return given
        if isinstance(given, str):
            return {"confirmed": given.startswith("allow"), "option": given}
        confirmed = bool(given)
        if p.get("permission"):
            return {"confirmed": confirmed, "option": "allow_once" if confirmed else "reject_once"}
        return {"confirmed": confirmed}

    # ---- handlers -----------------------------------------------------------------------

    def connect(self, handler: "_Handler", address: int | None) -> None:
        with self._lock:
            self._handlers.setdefault((handler.bus_name, address), []).append(handler)

    def disconnect(self, handler: "_Handler") -> None:
        with self._lock:
            for handlers in self._handlers.values():
                if handler in handlers:
                    handlers.remove(handler)

    def _emit(self, bus_name: str, address: int, event: str, args: list) -> int:
        """Calls `event` on the handlers at `address` and the broadcast ones; returns how many ran."""
        with self._lock:
            handlers = list(self._handlers.get((bus_name, address), [])) + list(self._handlers.get((bus_name, None), []))
        ran = 0
        for handler in handlers:
            callback = handler.callback(event)
            if callback is not None:
                callback(args)
                ran += 1
        return ran

    # ---- bus calls ----------------------------------------------------------------------

    def conversation_event(self, addressing: str, event: str, address: int, *args: Any) -> Any:
        _require_event(addressing, CONVERSATION_BUS)
        conversation_id = self.conversation_id(address)
        if event == "OnNewMessage":
            (message,) = args
            if self._opened_in.get(conversation_id) != self.daemon.generation:
                self.resume_conversation(conversation_id)  # the daemon was started again
            turn = self.daemon.request("OnNewMessage", {"conversationId": conversation_id, "message": message})["turnId"]
            with self._lock:
                if turn in self._ended_early:
                    del self._ended_early[turn]
                else:
                    self._running.setdefault(conversation_id, set()).add(turn)
            return turn
        if event == "OnFeatureResponse":
            return self._feature_response(conversation_id, *args)
        if event == "Cancel":
            return self.daemon.request("Cancel", {"conversationId": conversation_id})["cancelled"]
        raise BusError(f"{CONVERSATION_BUS} has no event {event!r} (OnNewMessage, OnFeatureResponse, Cancel)")

    def _feature_response(
        self, conversation_id: str, summary: str, detailed_response: list | None = None, final: bool = True, error: str | None = None
    ) -> None:
        with self._lock:
            turn = self._waiting_turn.get(conversation_id)
        params: dict[str, Any] = {
            "conversationId": conversation_id,
            "summary": str(summary),
            "detailedResponse": [str(line) for line in (detailed_response or [])],
            "final": final,
        }
        if turn:
            params["turnId"] = turn
        if error is not None:
            params["error"] = str(error)
        self.daemon.request("OnFeatureResponse", params)
        if final:
            with self._lock:
                if self._waiting_turn.get(conversation_id) == turn:
                    self._waiting_turn.pop(conversation_id, None)

    def agent_request(self, addressing: str, event: str, address: int, *args: Any) -> Any:
        _require_event(addressing, "AIAgentRequestBus")
        agent_id = self.agent_id(address)
        if event == "SendPrompt":
            (prompt,) = args
            return self.daemon.request("SendPrompt", {"agentId": agent_id, "prompt": _prompt(prompt)})["requestId"]
        if event == "GetHistory":
            return json.dumps(self.daemon.request("GetHistory", {"agentId": agent_id}))
        if event == "SetModelParameter":
            name, value = args
            return self.daemon.request("SetModelParameter", {"agentId": agent_id, "name": name, "value": value})
        raise BusError(f"AIAgentRequestBus has no event {event!r} (SendPrompt, GetHistory, SetModelParameter)")

    # ---- what the daemon sends ----------------------------------------------------------

    def _on_new_message(self, p: dict) -> None:
        conversation_id, turn = p["conversationId"], p["turnId"]
        address = self._address(conversation_id, p.get("agentId"))
        with self._lock:
            self._waiting_turn[conversation_id] = turn
            feature = self._features.get(p.get("feature", ""))
            first = feature is not None and (p["feature"], address) not in self._feature_instances
            if first:
                self._feature_instances.add((p["feature"], address))
        try:
            if first:
                feature[0](address, address)
            ran = self._emit(CONVERSATION_BUS, address, "OnNewMessage", [_text(p["message"]), p["message"]])
            if ran == 0:
                raise BusError(f"no OnNewMessage handler is connected at conversation {address} (feature {p.get('feature')!r})")
        except Exception as err:
            log.exception("feature %s failed on OnNewMessage", p.get("feature"))
            self._end_turn_with_error(conversation_id, turn, f"the feature failed: {err}")

    def _on_prompt_response(self, p: dict) -> None:
        address = self._address_of.get(p["agentId"])
        if address is None:
            return
        if p.get("isSuccess"):
            text = json.dumps(p.get("message") or {})
        else:
            text = json.dumps({"error": p.get("error") or {"kind": "internal", "message": "unknown error"}})
        try:
            self._emit(AGENT_BUS, address, "OnPromptResponse", [text, p])
        except Exception as err:
            log.exception("a handler failed on OnPromptResponse")
            conversation_id = self._conversation_at.get(address)
            turn = self._waiting_turn.get(conversation_id or "")
            if conversation_id and turn:
                self._end_turn_with_error(conversation_id, turn, f"the feature failed: {err}")

    def _on_prompt_chunk(self, p: dict) -> None:
        address = self._address_of.get(p["agentId"])
        if address is not None:
            self._emit(AGENT_BUS, address, "OnPromptResponseChunk", [p.get("delta", ""), p])

    def _on_feature_chunk(self, p: dict) -> None:
        address = self._address_of.get(p["conversationId"])
        if address is not None:
            self._emit(CONVERSATION_BUS, address, "OnFeatureResponseChunk", [p.get("delta", ""), p])

    def _on_reasoning_chunk(self, p: dict) -> None:
        address = self._address_of.get(p["conversationId"])
        if address is not None:
            self._emit(CONVERSATION_BUS, address, "OnReasoningChunk", [p.get("delta", ""), p])

    def _on_tool_call_chunk(self, p: dict) -> None:
        address = self._address_of.get(p["conversationId"])
        if address is not None:
            self._emit(CONVERSATION_BUS, address, "OnToolCallChunk", [p.get("name"), p.get("arguments", ""), p])

    def _on_feature_response(self, p: dict) -> None:
        address = self._address(p["conversationId"])
        if p.get("final"):
            with self._lock:
                running = self._running.get(p["conversationId"], set())
                if p.get("turnId") in running:
                    running.discard(p.get("turnId"))
                else:
                    self._ended_early[p.get("turnId")] = None
                    while len(self._ended_early) > EARLY_KEPT:
                        del self._ended_early[next(iter(self._ended_early))]
        self._emit(CONVERSATION_BUS, address, "OnFeatureResponse", [p.get("summary", ""), p.get("detailedResponse", []), p])

    def _end_turn_with_error(self, conversation_id: str, turn: str, message: str) -> None:
        try:
            self.daemon.request(
                "OnFeatureResponse",
                {"conversationId": conversation_id, "turnId": turn, "summary": message, "detailedResponse": [f"error: {message}"], "error": message},
            )
        except Exception:
            log.exception("cannot end turn %s of %s", turn, conversation_id)
        with self._lock:
            if self._waiting_turn.get(conversation_id) == turn:
                self._waiting_turn.pop(conversation_id, None)

    def _on_exit(self, exit_info: DaemonExit) -> None:
        """Ends the turns the widget waits for: the daemon that ran them is gone."""
        with self._lock:
            running = {cid: set(turns) for cid, turns in self._running.items() if turns}
            self._running.clear()
            self._waiting_turn.clear()
            # A new daemon knows none of the open conversations; features start afresh.
            self._feature_instances.clear()
        for conversation_id, turns in running.items():
            address = self._address(conversation_id)
            for turn in turns:
                info = {
                    "conversationId": conversation_id,
                    "turnId": turn,
                    "final": True,
                    "isSuccess": False,
                    "summary": exit_info.message,
                    "detailedResponse": [f"error: {exit_info.message}"],
                    "error": {"kind": "daemonExited", "message": exit_info.message},
                }
                self._emit(CONVERSATION_BUS, address, "OnFeatureResponse", [info["summary"], info["detailedResponse"], info])

    def _on_start(self, generation: int) -> None:
        """After a restart: host the same features again."""
        try:
            self._register_features_again()
        except Exception:
            log.exception("cannot register the hosted features again after the daemon restarted")

    def _register_features_again(self) -> None:
        """Registers the hosted features in a restarted daemon, once per daemon generation
        (before a conversation of theirs can be resumed there)."""
        with self._lock:
            if self._features_registered_in == self.daemon.generation:
                return
            self._features_registered_in = self.daemon.generation
            features = dict(self._features)
            middleware = dict(self._middleware)
            tools = dict(self._tools)
        for name, (_create, description) in features.items():
            self.daemon.request("RegisterFeature", {"name": name, "description": description})
        for name, (_transform, timeout_ms) in middleware.items():
            params: dict[str, Any] = {"name": name}
            if timeout_ms is not None:
                params["timeoutMs"] = timeout_ms
            self.daemon.request("RegisterMiddleware", params)
        for tool in tools.values():
            self.daemon.request("RegisterTool", tool.params())


def _require_event(addressing: str, bus_name: str) -> None:
    if addressing != _bus.Event:
        raise BusError(f"{bus_name} calls need bus.Event and an address, not {addressing!r}")


def _prompt(prompt: Any) -> Any:
    """A prompt as the seed passes it (JSON text of a message list) or as Python values."""
    if isinstance(prompt, str):
        try:
            return json.loads(prompt)
        except ValueError:
            return prompt  # plain text: one user message
    return prompt


def _text(message: Any) -> str:
    """The text parts of a message, joined."""
    if isinstance(message, str):
        return message
    content = message.get("content", [])
    if isinstance(content, str):
        return content
    return "\n".join(p if isinstance(p, str) else p.get("text", "") for p in content if isinstance(p, str) or p.get("type") == "text")


# ---- the azlmbr.ai surface: module-level bus calls and handler classes ---------------------

_current: Bridge | None = None


def use(bridge: Bridge | None) -> None:
    """Makes `bridge` the one the module-level buses talk to (`genai_bridge.connect` does it)."""
    global _current
    _current = bridge


def current() -> Bridge:
    if _current is None:
        raise BusError("no genai daemon is connected: call genai_bridge.connect() first")
    return _current


def ConversationNotificationBus(addressing: str, event: str, address: int, *args: Any) -> Any:  # noqa: N802 (O3DE's name)
    return current().conversation_event(addressing, event, address, *args)


def AIAgentRequestBus(addressing: str, event: str, address: int, *args: Any) -> Any:  # noqa: N802
    return current().agent_request(addressing, event, address, *args)


class _Handler:
    bus_name = ""

    def __init__(self) -> None:
        self._callbacks: dict[str, Callable[[list], Any]] = {}
        self._bridge: Bridge | None = None

    def connect(self, address: int | None = None) -> bool:
        """Receives the events at `address` (every address when None)."""
        self.disconnect()
        self._bridge = current()
        self._bridge.connect(self, address)
        return True

    def disconnect(self) -> None:
        if self._bridge is not None:
            self._bridge.disconnect(self)
            self._bridge = None

    def add_callback(self, event: str, callback: Callable[[list], Any]) -> None:
        self._callbacks[ALIASES.get(event, event)] = callback

    def callback(self, event: str) -> Callable[[list], Any] | None:
        return self._callbacks.get(event)


class ConversationNotificationBusHandler(_Handler):  # noqa: N801
    bus_name = CONVERSATION_BUS


class AIAgentNotificationBusHandler(_Handler):  # noqa: N801
    bus_name = AGENT_BUS


def tool(
    name: str | Callable | None = None,
    description: str | None = None,
    input_schema: dict | None = None,
    *,
    read_only: bool = False,
    timeout_ms: int | None = None,
    bridge: Any = None,
) -> Any:
    """Registers the decorated function as an editor tool, on `bridge` or the connected one
    (`genai_bridge.connect()` first). The name defaults to the function's, the description to
    its docstring, the input schema to no arguments. Usable bare (`@tool`) or with arguments.
    The function is returned unchanged, with `tool_name` set."""

    def register(handler: ToolHandler) -> ToolHandler:
        target = bridge or current()
        tool_name = name if isinstance(name, str) else handler.__name__
        target.register_tool(
            tool_name,
            description if description is not None else (description_of(handler) or tool_name),
            input_schema if input_schema is not None else dict(NO_ARGUMENTS),
            handler,
            read_only=read_only,
            timeout_ms=timeout_ms,
        )
        handler.tool_name = tool_name  # type: ignore[attr-defined]
        return handler

    if callable(name):  # @tool without parentheses
        return register(name)
    return register
