"""A chat widget for O3DE-style editors, on the GenAIFramework buses.

Inside the O3DE Editor (where `azlmbr` exists) it uses `azlmbr.bus` and `azlmbr.ai` and talks to
an existing conversation (`--conversation N`). Anywhere else it starts `genai daemon` through
genai_bridge and creates a conversation (`--feature`, `--provider`, `--model`). The window needs
PySide6 or PySide2 (O3DE ships PySide2); without either, or with `--text`, it chats in the
terminal instead, with the same ChatSession.

    python chat_widget.py --provider openai             # a window, or the terminal without PySide
    python chat_widget.py --text --provider openai      # the terminal
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

try:  # inside the O3DE Editor
    import azlmbr.bus as bus
    from azlmbr.ai import ConversationNotificationBus, ConversationNotificationBusHandler

    IN_O3DE = True
except ImportError:  # standalone: the same buses over genai_bridge
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import genai_bridge
    from genai_bridge import bus
    from genai_bridge.ai import ConversationNotificationBus, ConversationNotificationBusHandler

    IN_O3DE = False


class ChatSession:
    """The widget's logic without any UI: one conversation, its turns and their replies.

    `on_chunk(delta)` and `on_response(summary, details, ok)` are called on the bus thread;
    a UI must hand them over to its own thread.
    """

    def __init__(self, conversation: int, on_chunk, on_response):
        self.conversation = conversation
        self.busy = threading.Event()
        self._on_chunk = on_chunk
        self._on_response = on_response
        self.handler = ConversationNotificationBusHandler()
        self.handler.connect(conversation)
        self.handler.add_callback("OnFeatureResponseChunk", lambda args: on_chunk(args[0]))
        self.handler.add_callback("OnFeatureResponse", self._response)

    def send(self, text: str) -> None:
        self.busy.set()
        try:
            ConversationNotificationBus(bus.Event, "OnNewMessage", self.conversation, text)
        except Exception as err:  # shown to the user as a failed reply
            self.busy.clear()
            self._on_response(str(err), [], False)

    def stop(self) -> None:
        ConversationNotificationBus(bus.Event, "Cancel", self.conversation)

    def _response(self, args) -> None:
        summary, details = args[0], list(args[1])
        info = args[2] if len(args) > 2 else {"final": True, "isSuccess": True}
        if info.get("final", True):
            self.busy.clear()
        self._on_response(summary, details, info.get("isSuccess", True))


def open_conversation(args) -> int:
    if IN_O3DE:
        if args.conversation is None:
            raise SystemExit("in the O3DE Editor, pass --conversation with the id of a GenAIFramework conversation")
        return args.conversation
    bridge = genai_bridge.connect(restart=True)
    params = {"feature": args.feature}
    if args.provider:
        params["serviceProvider"] = args.provider
        if args.model:
            params["model"] = args.model
    return bridge.create_conversation(**params)


def run_terminal(conversation: int) -> None:
    done = threading.Event()

    def chunk(delta):
        print(delta, end="", flush=True)

    def response(summary, details, ok):
        print(f"\n[error] {summary}" if not ok else "")
        for line in details:
            print(f"  · {line}")
        done.set()

    session = ChatSession(conversation, chunk, response)
    print("genai chat: type a message, an empty line or end of input quits.", flush=True)
    for line in sys.stdin:
        text = line.strip()
        if not text:
            break
        print(f"> {text}", flush=True)
        done.clear()
        session.send(text)
        if not done.wait(120):
            print("[error] no reply within 120 s", flush=True)


def build_window(conversation: int, qt):
    """The chat window (a QWidget) on one conversation."""
    QtCore, QtWidgets = qt

    class Bridge(QtCore.QObject):
        chunk = QtCore.Signal(str)
        response = QtCore.Signal(str, list, bool)

    class ChatWidget(QtWidgets.QWidget):
        def __init__(self):
            super().__init__()
            self.setWindowTitle("genai chat")
            self.resize(480, 640)
            self.signals = Bridge()
            self.log = QtWidgets.QTextBrowser()
            self.details = QtWidgets.QCheckBox("Show details")
            self.prompt = QtWidgets.QLineEdit()
            self.prompt.setPlaceholderText("Ask something")
            send, self.stop_button = QtWidgets.QPushButton("Send"), QtWidgets.QPushButton("Stop")
            self.stop_button.setEnabled(False)
            row = QtWidgets.QHBoxLayout()
            row.addWidget(self.prompt)
            row.addWidget(send)
            row.addWidget(self.stop_button)
            layout = QtWidgets.QVBoxLayout(self)
            layout.addWidget(self.log)
            layout.addWidget(self.details)
            layout.addLayout(row)
            self.transcript = ""
            self.streaming = ""
            self.signals.chunk.connect(self.on_chunk)
            self.signals.response.connect(self.on_response)
            self.session = ChatSession(conversation, self.signals.chunk.emit, self.signals.response.emit)
            send.clicked.connect(self.send)
            self.prompt.returnPressed.connect(self.send)
            self.stop_button.clicked.connect(self.session.stop)

        def render(self):
            self.log.setMarkdown(self.transcript + self.streaming)
            self.log.verticalScrollBar().setValue(self.log.verticalScrollBar().maximum())

        def send(self):
            text = self.prompt.text().strip()
            if not text:
                return
            self.prompt.clear()
            self.transcript += f"\n\n**You:** {text}\n\n"
            self.stop_button.setEnabled(True)
            self.render()
            self.session.send(text)

        def on_chunk(self, delta):
            self.streaming += delta
            self.render()

        def on_response(self, summary, details, ok):
            self.streaming = ""
            self.transcript += f"**genai:** {summary}" if ok else f"**Error:** {summary}"
            if self.details.isChecked() and details:
                self.transcript += "\n\n" + "\n".join(f"- {line}" for line in details)
            self.stop_button.setEnabled(self.session.busy.is_set())
            self.render()

    return ChatWidget()


def run_window(conversation: int, qt) -> None:
    _QtCore, QtWidgets = qt
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv)
    widget = build_window(conversation, qt)
    widget.show()
    if not IN_O3DE:  # the Editor runs its own event loop
        app.exec() if hasattr(app, "exec") else app.exec_()


def import_qt():
    for name in ("PySide6", "PySide2"):
        try:
            module = __import__(name, fromlist=["QtCore", "QtWidgets"])
            return module.QtCore, module.QtWidgets
        except ImportError:
            continue
    return None


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--text", action="store_true", help="chat in the terminal even if PySide is there")
    parser.add_argument("--feature", default="assistant")
    parser.add_argument("--provider", help="a service provider instance (default: the config's)")
    parser.add_argument("--model", help="a model id for the provider")
    parser.add_argument("--conversation", type=int, help="in O3DE: the conversation's id")
    args = parser.parse_args(argv)
    conversation = open_conversation(args)
    qt = None if args.text else import_qt()
    if qt is None:
        if not args.text:
            print("PySide6/PySide2 not found: chatting in the terminal.", file=sys.stderr)
        run_terminal(conversation)
    else:
        run_window(conversation, qt)
    if not IN_O3DE:
        genai_bridge.ai.current().daemon.stop()


if __name__ == "__main__":
    main()
