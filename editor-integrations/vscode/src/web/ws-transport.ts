// The web page's way to a shared daemon: `genai serve` over WebSocket, as a Transport for
// GenaiClient. The daemon's notifications (and its requests, such as RequestConfirmation)
// arrive inside `Event` subscription messages of a `Subscribe {}` made first; they are
// unwrapped and handed to vscode-jsonrpc as if the daemon had sent them, and the answers to
// the daemon's requests go back as `AnswerRequest`. Browser only.
import {
  AbstractMessageReader,
  AbstractMessageWriter,
  createMessageConnection,
  type DataCallback,
  type Disposable,
  type Message,
  type MessageConnection,
} from 'vscode-jsonrpc/browser';
import type { DaemonExit, DaemonListener } from '../client/daemon';
import type { Transport } from '../client/transport';

/** The id of the `Subscribe` request this transport makes itself. */
const SUBSCRIBE_ID = 'genai-web-subscribe';
const ANSWER_PREFIX = 'genai-web-answer-';

class SocketReader extends AbstractMessageReader {
  private callback: DataCallback | undefined;
  private readonly queue: Message[] = [];

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    for (const m of this.queue.splice(0)) callback(m);
    return { dispose: () => (this.callback = undefined) };
  }

  deliver(m: Message): void {
    if (this.callback) this.callback(m);
    else this.queue.push(m);
  }

  closed(): void {
    this.fireClose();
  }
}

class SocketWriter extends AbstractMessageWriter {
  private answers = 0;

  constructor(private readonly socket: WebSocket) {
    super();
  }

  async write(msg: Message): Promise<void> {
    const m = msg as { id?: unknown; method?: string; result?: unknown; error?: unknown };
    if (m.method === undefined && m.id !== undefined) {
      // vscode-jsonrpc answering a daemon request: over WebSocket that is `AnswerRequest`.
      const params = m.error !== undefined ? { id: m.id, error: m.error } : { id: m.id, result: m.result ?? null };
      this.socket.send(JSON.stringify({ jsonrpc: '2.0', id: `${ANSWER_PREFIX}${++this.answers}`, method: 'AnswerRequest', params }));
      return;
    }
    this.socket.send(JSON.stringify(msg));
  }

  end(): void {}
}

export class WebSocketTransport implements Transport {
  private conn: MessageConnection | undefined;
  private socket: WebSocket | undefined;
  private gen = 0;
  private readonly listeners: DaemonListener[] = [];
  private exitSignal: Promise<DaemonExit> = new Promise(() => {});

  constructor(
    private readonly url: string,
    private readonly token: string,
  ) {}

  on(listener: DaemonListener): void {
    this.listeners.push(listener);
  }

  get connection(): MessageConnection {
    if (!this.conn) throw new Error('not connected to genai serve');
    return this.conn;
  }

  get generation(): number {
    return this.gen;
  }

  exitWithin(ms: number): Promise<DaemonExit | undefined> {
    return Promise.race([this.exitSignal, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]);
  }

  /** Connects (the token as the subprotocol `bearer.TOKEN`) and subscribes to this client's events. */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url, ['genai', `bearer.${this.token}`]);
      const reader = new SocketReader();
      let signalExit: (exit: DaemonExit) => void = () => {};
      this.exitSignal = new Promise((r) => (signalExit = r));
      let subscription: unknown;
      socket.onmessage = (event) => {
        let m: { id?: unknown; method?: string; params?: { subscription?: unknown; result?: Message }; result?: unknown };
        try {
          m = JSON.parse(String(event.data));
        } catch {
          return;
        }
        if (m.id === SUBSCRIBE_ID) {
          subscription = m.result;
          this.gen += 1;
          const conn = createMessageConnection(reader, new SocketWriter(socket));
          this.conn = conn;
          for (const l of this.listeners) l.started?.(conn, this.gen);
          conn.listen();
          resolve();
          return;
        }
        if (typeof m.id === 'string' && m.id.startsWith(ANSWER_PREFIX)) return;
        const inner = m.method === 'Event' && m.params?.subscription === subscription ? m.params?.result : undefined;
        if (inner) {
          reader.deliver(inner);
          return;
        }
        reader.deliver(m as Message);
      };
      socket.onopen = () => socket.send(JSON.stringify({ jsonrpc: '2.0', id: SUBSCRIBE_ID, method: 'Subscribe', params: {} }));
      socket.onerror = () => reject(new Error(`cannot connect to ${this.url} (is genai serve running, and the token right?)`));
      socket.onclose = (event) => {
        const exit: DaemonExit = {
          code: null,
          signal: null,
          expected: false,
          willRestart: false,
          message: `the connection to genai serve closed (${event.code}); reload the page to connect again`,
        };
        this.conn?.dispose();
        this.conn = undefined;
        reader.closed();
        signalExit(exit);
        for (const l of this.listeners) l.exited?.(exit);
      };
      this.socket = socket;
    });
  }

  async stop(): Promise<void> {
    this.socket?.close();
  }
}
