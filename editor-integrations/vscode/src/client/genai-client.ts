// The client side of the genai protocol: typed requests, conversations, and turns assembled from
// the daemon's notifications. It owns a Transport (a DaemonProcess, or in the web page a
// WebSocketTransport) and survives its restarts: a conversation opened before a restart is
// resumed in the new daemon before its next message. No `vscode` import, so the Node tests
// drive exactly what the extension runs; no Node import, so the web page bundles it too.
import { ErrorCodes, ResponseError, type MessageConnection } from 'vscode-jsonrpc';
import type { DaemonExit } from './daemon';
import type { Transport } from './transport';
import type {
  ConversationRecord,
  CreateConversationParams,
  CreateConversationResult,
  DaemonRequests,
  ErrorKind,
  InitializeParams,
  InitializeResult,
  ListCommandsResult,
  ListComponentsResult,
  ListConversationsResult,
  MessageInput,
  Notifications,
  OnFeatureResponseNotification,
  OnSubagentEventNotification,
  OnToolCallChunkNotification,
  PlanEntry,
  Requests,
  RunCommandParams,
  RunCommandResult,
  StoredMessage,
} from '../protocol';

/** A `RunCommand`'s params; the conversation is the one it runs in (or none: a new one). */
export type CommandRun = Omit<RunCommandParams, 'conversationId'>;

/**
 * The kind of a GenaiError or of a failed turn: the daemon's `data.kind`, or `daemonExited`, which
 * the client gives when the daemon process ended while the request or turn was under way.
 */
export type ClientErrorKind = ErrorKind | 'daemonExited';

/** A JSON-RPC error from the daemon, or a request that the daemon's exit cut short. */
export class GenaiError extends Error {
  constructor(
    message: string,
    readonly kind: ClientErrorKind | undefined,
    readonly code?: number,
  ) {
    super(message);
    this.name = 'GenaiError';
  }
}

type ConfirmationRequest = DaemonRequests['RequestConfirmation'];
type MiddlewareRequest = DaemonRequests['OnMiddleware'];
type ToolCallRequest = DaemonRequests['OnToolCall'];
type ReadTextFileRequest = DaemonRequests['ReadTextFile'];
type WriteTextFileRequest = DaemonRequests['WriteTextFile'];

/** A tool this client hosts (`RegisterTool`): offered to the model as `editor.NAME`. */
export interface HostedTool {
  description: string;
  /** A JSON Schema whose `type` is `"object"`. */
  inputSchema: Record<string, unknown>;
  /** It only reads: the `read-only` and `ask` modes run it without asking. */
  readOnly?: boolean;
  /** How long the daemon waits for the answer (its default otherwise). */
  timeoutMs?: number;
}

/** What a tool's handler may answer: text, message parts, or the whole `{content, isError}`. */
export type ToolAnswer = string | ToolCallRequest['result']['content'] | ToolCallRequest['result'];

/**
 * Runs one call of a hosted tool (`OnToolCall`): `args` is the model's JSON object. A throw is
 * answered as a JSON-RPC error, which the model sees as the failed call.
 */
export type ToolHandler = (args: Record<string, unknown>, call: ToolCallRequest['params']) => Promise<ToolAnswer> | ToolAnswer;

/**
 * The editor's side of the workspace tools' files (`capabilities.editor` of `Initialize`): the
 * daemon reads files through `readTextFile` (the editor's unsaved text) and writes them only
 * through `writeTextFile`. A throw (such as the user rejecting the edit) is answered as a
 * JSON-RPC error with its message, which the model is told.
 */
export interface EditorFiles {
  /** The file's text as the editor has it; `null` when there is no such file. */
  readTextFile?: (request: ReadTextFileRequest['params']) => Promise<string | null>;
  /** Makes `request.text` the whole text of the file (through the editor). */
  writeTextFile?: (request: WriteTextFileRequest['params']) => Promise<void>;
}

/** The code of the JSON-RPC errors this client answers with (its message says what went wrong). */
export const CLIENT_ERROR_CODE = -32000;

/**
 * A middleware this client hosts: given the messages a request is about to send (and the
 * format and model they go to), the messages to send instead. A throw fails the turn.
 */
export type MiddlewareTransform = (
  messages: MiddlewareRequest['params']['messages'],
  call: MiddlewareRequest['params'],
) => Promise<MiddlewareRequest['result']['messages']> | MiddlewareRequest['result']['messages'];

export interface ClientHooks {
  /**
   * Answers the daemon's `RequestConfirmation`; without it the answer is "no". `true`/`false`
   * answers `{confirmed}`; a permission ask (`request.permission`) is answered with one of its
   * options as `{confirmed, option}` (`src/chat/confirm.ts` has the choices).
   */
  confirm?: (request: ConfirmationRequest['params']) => Promise<boolean | ConfirmationRequest['result']>;
  /** Receives `DoAction` notifications. */
  action?: (action: Notifications['DoAction']) => void;
  /** The daemon exited (and maybe is starting again), or came back. */
  daemon?: (event: { state: 'exited'; exit: DaemonExit } | { state: 'started'; generation: number }) => void;
  /** Reads and writes the workspace tools' files in the editor (declared in `Initialize`). */
  editor?: EditorFiles;
}

/** The notifications of a turn, by method, typed from the schemas: a renamed field breaks the build. */
type TurnNotification =
  | { method: 'OnFeatureResponseChunk'; params: Notifications['OnFeatureResponseChunk'] }
  | { method: 'OnReasoningChunk'; params: Notifications['OnReasoningChunk'] }
  | { method: 'OnFeatureResponse'; params: Notifications['OnFeatureResponse'] }
  | { method: 'OnToolCallChunk'; params: Notifications['OnToolCallChunk'] }
  | { method: 'OnPlan'; params: Notifications['OnPlan'] }
  | { method: 'OnSubagentEvent'; params: Notifications['OnSubagentEvent'] };

/** vscode-jsonrpc's own codes for a broken connection (not errors the daemon sent). */
const CONNECTION_ERRORS = new Set<number>([
  ErrorCodes.MessageWriteError,
  ErrorCodes.MessageReadError,
  ErrorCodes.PendingResponseRejected,
  ErrorCodes.ConnectionInactive,
]);

/** How long notifications of a turn whose `{turnId}` response has not come yet are kept. */
const EARLY_NOTIFICATION_MS = 30_000;

/** The folders a shared daemon (`genai serve`) lets conversations work in, and its default. */
export type WorkspaceRoots = NonNullable<InitializeResult['roots']>;

export class GenaiClient<T extends Transport = Transport> {
  private readonly turns = new Map<string, Turn>();
  /** What the last `Initialize` answered. */
  private initialized: InitializeResult | undefined;
  /** Notifications that came before the response announcing their turn (PROTOCOL.md, Guarantees). */
  private readonly early = new Map<string, { at: number; items: TurnNotification[] }>();
  /** The middleware this client hosts, registered again in a restarted daemon. */
  private readonly middleware = new Map<string, { transform: MiddlewareTransform; timeoutMs?: number }>();
  /** The tools this client hosts, by name, registered again in a restarted daemon. */
  private readonly tools = new Map<string, { tool: HostedTool; handler: ToolHandler }>();

  constructor(
    readonly daemon: T,
    private readonly hooks: ClientHooks = {},
  ) {
    this.daemon.on({
      started: (conn, generation) => {
        this.attach(conn);
        if (generation > 1) {
          for (const [name, m] of this.middleware) {
            this.request('RegisterMiddleware', { name, timeoutMs: m.timeoutMs }).catch(() => undefined);
          }
          for (const [name, t] of this.tools) {
            this.request('RegisterTool', registerParams(name, t.tool)).catch(() => undefined);
          }
          this.hooks.daemon?.({ state: 'started', generation });
        }
      },
      exited: (exit) => {
        // Turns under way cannot end normally any more: end them here, with the reason.
        for (const turn of [...this.turns.values()]) {
          turn.finish(failedResponse(turn, 'daemonExited', exit.message));
        }
        this.early.clear();
        this.hooks.daemon?.({ state: 'exited', exit });
      },
    });
  }

  /** Starts the daemon and says hello (streaming on; the editor's files when `hooks.editor` has them). */
  async start(): Promise<void> {
    await this.daemon.start();
    this.initialized = await this.request('Initialize', { clientInfo: { name: 'genai-vscode' }, capabilities: this.capabilities() });
  }

  /** The folders `genai serve` lets conversations work in (its `Initialize` says); none from `genai daemon`. */
  get roots(): WorkspaceRoots | undefined {
    return this.initialized?.roots ?? undefined;
  }

  /** What `Initialize` declares. */
  capabilities(): NonNullable<InitializeParams['capabilities']> {
    const editor = this.hooks.editor;
    if (!editor || (!editor.readTextFile && !editor.writeTextFile)) return { streaming: true };
    return { streaming: true, editor: { readTextFile: Boolean(editor.readTextFile), writeTextFile: Boolean(editor.writeTextFile) } };
  }

  async dispose(): Promise<void> {
    await this.daemon.stop();
  }

  /** Sends one request; a JSON-RPC error becomes a GenaiError with its `data.kind`. */
  async request<M extends keyof Requests>(method: M, params: Requests[M]['params']): Promise<Requests[M]['result']> {
    let conn: MessageConnection;
    try {
      conn = this.daemon.connection;
    } catch (err) {
      throw new GenaiError((err as Error).message, 'daemonExited');
    }
    try {
      return (await conn.sendRequest(method, params)) as Requests[M]['result'];
    } catch (err) {
      if (err instanceof ResponseError && !CONNECTION_ERRORS.has(err.code)) {
        const kind = (err.data as { kind?: ErrorKind } | undefined)?.kind;
        throw new GenaiError(`${method}: ${err.message}`, kind, err.code);
      }
      // The connection broke: the daemon exited. Say why, as its exit tells it.
      const exit = await this.daemon.exitWithin(2_000);
      const why = exit?.message ?? `the genai daemon went away (${(err as Error).message})`;
      throw new GenaiError(`${method}: ${why}`, 'daemonExited');
    }
  }

  /**
   * Hosts the middleware `name` here (`RegisterMiddleware`): agents of the config that list it
   * send, on every request, the messages `transform` returns; it must answer within
   * `timeoutMs` (the daemon's default otherwise).
   */
  async registerMiddleware(name: string, transform: MiddlewareTransform, options: { timeoutMs?: number } = {}): Promise<void> {
    await this.request('RegisterMiddleware', { name, timeoutMs: options.timeoutMs });
    this.middleware.set(name, { transform, timeoutMs: options.timeoutMs });
  }

  /**
   * Hosts the tool `name` here (`RegisterTool`): conversations offered the `editor` source may
   * call it as `editor.NAME`; each call runs `handler`. Registering a name again replaces it.
   * Returns the tool's full name.
   */
  async registerTool(name: string, tool: HostedTool, handler: ToolHandler): Promise<string> {
    const registered = await this.request('RegisterTool', registerParams(name, tool));
    this.tools.set(name, { tool, handler });
    return registered.tool;
  }

  /** Stops hosting the tool `name` (`UnregisterTool`). */
  async unregisterTool(name: string): Promise<void> {
    this.tools.delete(name);
    await this.request('UnregisterTool', { name });
  }

  /** The names of the tools hosted here. */
  get hostedTools(): string[] {
    return [...this.tools.keys()];
  }

  listComponents(): Promise<ListComponentsResult> {
    return this.request('ListComponents', undefined);
  }

  listConversations(pageSize = 50, cursor?: string): Promise<ListConversationsResult> {
    return this.request('ListConversations', { pageSize, cursor });
  }

  async createConversation(params: CreateConversationParams): Promise<Conversation> {
    const opened = await this.request('CreateConversation', params);
    return new Conversation(this, opened, params.title ?? undefined);
  }

  async resumeConversation(conversationId: string, title?: string): Promise<Conversation> {
    const opened = await this.request('ResumeConversation', { conversationId });
    return new Conversation(this, opened, title);
  }

  /** The commands seen from `cwd` (`ListCommands`): command files, built-in ones, MCP prompts. */
  listCommands(cwd?: string): Promise<ListCommandsResult> {
    return this.request('ListCommands', cwd === undefined ? {} : { cwd });
  }

  /**
   * Runs a command in a new conversation it sets up (`RunCommand` without `conversationId`):
   * the conversation, open here, and what started; `conversation.follow(started.turnId)`
   * follows its turn (notifications that come before are kept for it).
   */
  async runCommand(params: CommandRun): Promise<{ conversation: Conversation; started: RunCommandResult }> {
    const started = await this.request('RunCommand', params);
    const conversation = await this.resumeConversation(started.conversationId);
    return { conversation, started };
  }

  /** Every stored message of a conversation, all pages. */
  async conversationHistory(conversationId: string): Promise<StoredMessage[]> {
    const messages: StoredMessage[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.request('GetConversationHistory', { conversationId, pageSize: 200, cursor });
      messages.push(...page.messages);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return messages;
  }

  /** @internal Called by Conversation: registers the turn and replays what came early. */
  adoptTurn(turn: Turn): void {
    this.turns.set(turn.id, turn);
    const early = this.early.get(turn.id);
    this.early.delete(turn.id);
    for (const params of early?.items ?? []) this.route(params);
  }

  /** @internal */
  forgetTurn(turn: Turn): void {
    this.turns.delete(turn.id);
  }

  private attach(conn: MessageConnection): void {
    conn.onNotification('OnFeatureResponseChunk', (params: Notifications['OnFeatureResponseChunk']) =>
      this.route({ method: 'OnFeatureResponseChunk', params }),
    );
    conn.onNotification('OnReasoningChunk', (params: Notifications['OnReasoningChunk']) =>
      this.route({ method: 'OnReasoningChunk', params }),
    );
    conn.onNotification('OnFeatureResponse', (params: Notifications['OnFeatureResponse']) =>
      this.route({ method: 'OnFeatureResponse', params }),
    );
    conn.onNotification('OnToolCallChunk', (params: Notifications['OnToolCallChunk']) =>
      this.route({ method: 'OnToolCallChunk', params }),
    );
    conn.onNotification('OnPlan', (params: Notifications['OnPlan']) => this.route({ method: 'OnPlan', params }));
    conn.onNotification('OnSubagentEvent', (params: Notifications['OnSubagentEvent']) =>
      this.route({ method: 'OnSubagentEvent', params }),
    );
    conn.onRequest('RequestConfirmation', async (params: ConfirmationRequest['params']): Promise<ConfirmationRequest['result']> => {
      const answer = this.hooks.confirm ? await this.hooks.confirm(params) : false;
      return typeof answer === 'boolean' ? { confirmed: answer } : answer;
    });
    conn.onNotification('DoAction', (params: Notifications['DoAction']) => this.hooks.action?.(params));
    conn.onRequest('OnMiddleware', async (params: MiddlewareRequest['params']): Promise<MiddlewareRequest['result']> => {
      const m = this.middleware.get(params.name);
      if (!m) throw new ResponseError(ErrorCodes.MethodNotFound, `no middleware ${params.name} is hosted here`);
      return { messages: await m.transform(params.messages, params) };
    });
    conn.onRequest('OnToolCall', async (params: ToolCallRequest['params']): Promise<ToolCallRequest['result']> => {
      const t = this.tools.get(params.name);
      if (!t) throw new ResponseError(ErrorCodes.MethodNotFound, `no tool ${params.name} is hosted by this client`);
      const args = (params.arguments && typeof params.arguments === 'object' ? params.arguments : {}) as Record<string, unknown>;
      return toolResult(await answering(() => t.handler(args, params)));
    });
    conn.onRequest('ReadTextFile', async (params: ReadTextFileRequest['params']): Promise<ReadTextFileRequest['result']> => {
      const read = this.hooks.editor?.readTextFile;
      if (!read) throw new ResponseError(ErrorCodes.MethodNotFound, 'this client does not read files (no editor.readTextFile capability)');
      return { text: await answering(() => read(params)) };
    });
    conn.onRequest('WriteTextFile', async (params: WriteTextFileRequest['params']): Promise<WriteTextFileRequest['result']> => {
      const write = this.hooks.editor?.writeTextFile;
      if (!write) throw new ResponseError(ErrorCodes.MethodNotFound, 'this client does not write files (no editor.writeTextFile capability)');
      await answering(() => write(params));
      return {};
    });
  }

  /** Hands a turn's notification to its Turn, or keeps it until the turn is announced. */
  private route(n: TurnNotification): void {
    const turnId = n.params.turnId;
    const turn = this.turns.get(turnId);
    if (!turn) {
      const now = Date.now();
      for (const [id, e] of this.early) if (now - e.at > EARLY_NOTIFICATION_MS) this.early.delete(id);
      const entry = this.early.get(turnId) ?? { at: now, items: [] };
      entry.items.push(n);
      this.early.set(turnId, entry);
      return;
    }
    switch (n.method) {
      case 'OnFeatureResponseChunk':
        turn.chunk(n.params.delta);
        break;
      case 'OnReasoningChunk':
        turn.reasoningChunk(n.params.delta);
        break;
      case 'OnToolCallChunk':
        turn.toolCallChunk(n.params);
        break;
      case 'OnPlan':
        turn.planned(n.params.entries);
        break;
      case 'OnSubagentEvent':
        turn.subagentEvent(n.params);
        break;
      case 'OnFeatureResponse':
        if (n.params.final) turn.finish(n.params);
        else turn.progress(n.params);
        break;
    }
  }
}

/** An open conversation: a feature and an agent in the daemon. */
export class Conversation {
  readonly id: string;
  agentId: string;
  readonly feature: string;
  readonly serviceProvider: string;
  readonly model: string;
  /** The folder its workspace tools work in (its `cwd`), when the daemon says. */
  readonly root: string | undefined;
  /** The daemon generation this conversation is open in. */
  private generation: number;
  private running: Turn | undefined;

  constructor(
    private readonly client: GenaiClient,
    opened: CreateConversationResult,
    readonly title?: string,
  ) {
    this.id = opened.conversationId;
    this.agentId = opened.agentId;
    this.feature = opened.feature;
    this.serviceProvider = opened.serviceProvider;
    this.model = opened.model;
    this.root = opened.cwd ?? undefined;
    this.generation = client.daemon.generation;
  }

  /** The turn that has not ended yet, if any. */
  get currentTurn(): Turn | undefined {
    return this.running;
  }

  /**
   * Sends a user message; the turn streams its reply to `listener` and ends with `turn.done`.
   * The listener is attached before any notification is delivered, early ones included.
   */
  async send(message: MessageInput, listener?: TurnListener): Promise<Turn> {
    await this.reopen();
    const { turnId } = await this.client.request('OnNewMessage', { conversationId: this.id, message });
    return this.follow(turnId, listener);
  }

  /**
   * Runs a command in this conversation (`RunCommand`: its prompt and schema apply to this
   * turn); `follow(started.turnId)` follows the turn, as `send`'s.
   */
  async runCommand(params: CommandRun): Promise<RunCommandResult> {
    await this.reopen();
    return this.client.request('RunCommand', { ...params, conversationId: this.id });
  }

  /**
   * Follows the turn `turnId` of this conversation (started by `RunCommand`, or `send`): the
   * listener gets its notifications, those that came before included.
   */
  follow(turnId: string, listener?: TurnListener): Turn {
    const turn = new Turn(turnId, this.id, this.client);
    if (listener) turn.on(listener);
    this.running = turn;
    void turn.done.then(() => {
      if (this.running === turn) this.running = undefined;
    });
    this.client.adoptTurn(turn);
    return turn;
  }

  /** After a daemon restart, opens this conversation in the new daemon first. */
  private async reopen(): Promise<void> {
    if (this.generation === this.client.daemon.generation) return;
    const reopened = await this.client.request('ResumeConversation', { conversationId: this.id });
    this.agentId = reopened.agentId;
    this.generation = this.client.daemon.generation;
  }

  /** Stops the running turn; false when nothing was running. */
  async cancel(): Promise<boolean> {
    const turn = this.running;
    if (!turn) return false;
    return turn.cancel();
  }

  history(): Promise<StoredMessage[]> {
    return this.client.conversationHistory(this.id);
  }

  /** Closes the conversation in the daemon (the stored history stays). */
  async close(): Promise<void> {
    if (this.generation !== this.client.daemon.generation) return;
    await this.client.request('RemoveConversation', { conversationId: this.id });
  }
}

/** Called with the turn itself: early notifications are replayed before `send` returns. */
export type TurnListener = {
  chunk?: (delta: string, turn: Turn) => void;
  /** A piece of the model's reasoning (`OnReasoningChunk`), apart from the reply's text. */
  reasoning?: (delta: string, turn: Turn) => void;
  progress?: (step: OnFeatureResponseNotification, turn: Turn) => void;
  /** A piece of a tool call arrived (`OnToolCallChunk`); `call` holds the call so far. */
  toolCall?: (call: ToolCall, turn: Turn) => void;
  /** The model set out or updated its plan (`OnPlan`): every step, with its status. */
  plan?: (entries: PlanEntry[], turn: Turn) => void;
  /** A subagent of one of the turn's task calls did something (`OnSubagentEvent`). */
  subagent?: (notice: OnSubagentEventNotification, turn: Turn) => void;
};

/** A tool call the model is writing, assembled from its `OnToolCallChunk` pieces. */
export interface ToolCall {
  index: number;
  id?: string;
  /** The tool's name (`SOURCE.function`), or the model's wire name for a tool the daemon does not know. */
  name?: string;
  /** The JSON arguments so far (complete once the call runs). */
  arguments: string;
}

/** One user message and the reply to it, as the notifications bring it in. */
export class Turn {
  /** The reply text streamed so far. */
  text = '';
  /** The model's reasoning streamed so far (never part of `text`). */
  reasoning = '';
  /**
   * The tool calls the model streamed, by index. A later round of calls in the same turn reuses
   * the indexes: its first piece (a new id, or a name) replaces the earlier call at its index.
   */
  readonly toolCalls = new Map<number, ToolCall>();
  /** The model's last plan in this turn (`OnPlan`), if it gave one. */
  plan: PlanEntry[] | undefined;
  /** Resolves with the final `OnFeatureResponse` (success or failure); never rejects. */
  readonly done: Promise<OnFeatureResponseNotification>;
  private resolve!: (r: OnFeatureResponseNotification) => void;
  private ended = false;
  private readonly listeners: TurnListener[] = [];

  constructor(
    readonly id: string,
    readonly conversationId: string,
    private readonly client: GenaiClient,
  ) {
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  on(listener: TurnListener): this {
    this.listeners.push(listener);
    return this;
  }

  get isDone(): boolean {
    return this.ended;
  }

  async cancel(): Promise<boolean> {
    if (this.ended) return false;
    const { cancelled } = await this.client.request('Cancel', { turnId: this.id });
    return cancelled;
  }

  /** @internal */
  chunk(delta: string): void {
    if (this.ended) return;
    this.text += delta;
    for (const l of this.listeners) l.chunk?.(delta, this);
  }

  /** @internal */
  reasoningChunk(delta: string): void {
    if (this.ended) return;
    this.reasoning += delta;
    for (const l of this.listeners) l.reasoning?.(delta, this);
  }

  /** @internal */
  toolCallChunk(piece: OnToolCallChunkNotification): void {
    if (this.ended) return;
    let call = this.toolCalls.get(piece.index);
    const newCall = (piece.id && call?.id && piece.id !== call.id) || (piece.name && call?.name);
    if (!call || newCall) {
      call = { index: piece.index, arguments: '' };
      this.toolCalls.set(piece.index, call);
    }
    if (piece.id && !call.id) call.id = piece.id;
    if (piece.name && !call.name) call.name = piece.name;
    call.arguments += piece.arguments;
    for (const l of this.listeners) l.toolCall?.(call, this);
  }

  /** @internal */
  planned(entries: PlanEntry[]): void {
    if (this.ended) return;
    this.plan = entries;
    for (const l of this.listeners) l.plan?.(entries, this);
  }

  /** @internal */
  subagentEvent(notice: OnSubagentEventNotification): void {
    if (!this.ended) for (const l of this.listeners) l.subagent?.(notice, this);
  }

  /** @internal */
  progress(step: OnFeatureResponseNotification): void {
    if (!this.ended) for (const l of this.listeners) l.progress?.(step, this);
  }

  /** @internal */
  finish(response: OnFeatureResponseNotification): void {
    if (this.ended) return;
    this.ended = true;
    this.client.forgetTurn(this);
    this.resolve(response);
  }
}

function registerParams(name: string, tool: HostedTool): Requests['RegisterTool']['params'] {
  return {
    name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.readOnly !== undefined ? { readOnly: tool.readOnly } : {}),
    ...(tool.timeoutMs !== undefined ? { timeoutMs: tool.timeoutMs } : {}),
  };
}

/** A handler's answer as `OnToolCall`'s result. */
function toolResult(answer: ToolAnswer): ToolCallRequest['result'] {
  if (typeof answer === 'string') return { content: [{ type: 'text', text: answer }] };
  if (Array.isArray(answer)) return { content: answer };
  return answer;
}

/**
 * Runs a hook answering a daemon request; what it throws becomes a JSON-RPC error carrying its
 * own message (vscode-jsonrpc would otherwise prefix "Request X failed with message").
 */
async function answering<R>(run: () => Promise<R> | R): Promise<R> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ResponseError) throw err;
    throw new ResponseError(CLIENT_ERROR_CODE, err instanceof Error ? err.message : String(err));
  }
}

/** A final response for a turn the daemon can no longer end itself. */
function failedResponse(turn: Turn, kind: ClientErrorKind, message: string): OnFeatureResponseNotification {
  return {
    conversationId: turn.conversationId,
    turnId: turn.id,
    summary: message,
    detailedResponse: [`error: ${message}`],
    final: true,
    isSuccess: false,
    error: { kind, message },
  };
}

export type { ConversationRecord };
