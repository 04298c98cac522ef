// The chat widget's logic, between the chat page and the genai client: the new-chat choices (what
// works first), the open conversation and its title, its turns (a message sent before any chat
// starts one, nothing lost), history, the workspace tools its conversations get, genai's
// commands (`/NAME` in a message, or a new chat one sets up), and the page's dialog for the
// daemon's confirmations (the web page's; VS Code shows its own). It speaks
// ToView/FromView messages and has no `vscode` import; chat-view.ts plugs it into a webview, the
// tests into a recorder.
import {
  GenaiClient,
  GenaiError,
  type CommandRun,
  type Conversation,
  type ToolCall,
  type Turn,
  type TurnListener,
  type WorkspaceRoots,
} from '../client/genai-client';
import { messageReasoning, messageText, selectionPrompt, titleOf, type Selection } from './text';
import { confirmChoices, confirmDetail, dismissedAnswer, type ConfirmChoice } from './confirm';
import { fileDiff, type FileDiff } from './diff';
import { choiceModel, commandWords, readSlash } from './commands';
import type { ComponentChoices, FromView, NewChatChoice, ShownMessage, ToView } from './view-messages';
import type {
  CommandInfo,
  CreateConversationParams,
  ListCommandsResult,
  ListComponentsResult,
  Mode,
  OnFeatureResponseNotification,
  RequestConfirmationParams,
  RequestConfirmationResult,
  UndoResult,
} from '../protocol';

/** Where the last new-chat choice is kept (VS Code's globalState in the extension). */
export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const LAST_CHOICE = 'genai.lastChoice';

/** What the conversations a controller starts get of genai's workspace (docs/WORKSPACE.md). */
export interface WorkspaceSettings {
  /** The folder the tools work in (`cwd`); none: the daemon's own. */
  cwd?: string;
  /** Give the model genai's workspace tools (`tools: ["workspace", "*"]`). */
  tools: boolean;
  /** The permission mode of the tool calls of a `tools` conversation (`mode`). */
  mode?: Mode;
  /**
   * Whether a chat on the plain `assistant` feature runs on `tools` (the assistant with tools)
   * to get them; else only a chat on `tools` does.
   */
  assistantToo?: boolean;
}

export interface ControllerOptions {
  /** Read at each new chat, so changed settings apply to the next one. */
  workspace?: () => WorkspaceSettings;
}

/**
 * The `CreateConversation` params of a new-chat choice. The workspace's tools go only to the
 * `tools` feature (the daemon refuses `tools` for others): a chat on `tools`, or on `assistant`
 * when `assistantToo`, runs on `tools` with `tools: ["workspace", "*"]` (the workspace's tools
 * and the sources the config enables); `mode` goes with every `tools` chat, `cwd` with every
 * chat (the choice's folder, chosen on the web page, before the workspace's).
 */
export function conversationParams(choice: NewChatChoice, workspace?: WorkspaceSettings): CreateConversationParams {
  const params: CreateConversationParams = {
    feature: choice.feature,
    serviceProvider: choice.serviceProvider,
    modelConfiguration: choice.modelConfiguration,
    model: choice.model,
  };
  const cwd = choice.cwd ?? workspace?.cwd;
  if (cwd) params.cwd = cwd;
  if (!workspace) return params;
  const upgrade = workspace.tools && workspace.assistantToo && choice.feature === 'assistant';
  if (upgrade) params.feature = 'tools';
  if (params.feature === 'tools') {
    if (workspace.tools) params.tools = ['workspace', '*'];
    if (workspace.mode) params.mode = workspace.mode;
  }
  return params;
}

export class ChatController {
  private conversation: Conversation | undefined;
  /** The daemon's default choice, from the last `ListComponents`. */
  private defaultChoice: NewChatChoice | undefined;
  /** A message sent before any conversation was open: sent once one starts. */
  private pending: string | undefined;
  /** The chat being started (from the page's "start" to the switch to it), which a message sent meanwhile waits for. */
  private starting: Promise<Conversation> | undefined;
  /** Conversations started here whose header waits for the first reply to get a title. */
  private readonly untitled = new Set<string>();
  /** The confirmations the page shows or queues, by the id the page answers with. */
  private readonly confirms = new Map<string, { turnId: string; choices: ConfirmChoice[]; dismissed: RequestConfirmationResult; resolve: (answer: RequestConfirmationResult) => void }>();
  private confirmCount = 0;
  /** The conversation of each turn run here, for its Undo. */
  private readonly turnConversations = new Map<string, string>();
  /** The whole-file texts of edits seen (a permission ask's diff, the editor's write), by turn and call. */
  private readonly editTexts = new Map<string, { path: string; oldText: string | null; newText: string }>();
  /** The last `ListComponents` choices (a command's model, when the daemon has no default). */
  private choices: ComponentChoices | undefined;
  /** The commands `/NAME` runs: the last `ListCommands` of the workspace folder. */
  private commands: CommandInfo[] | undefined;

  constructor(
    private readonly client: GenaiClient,
    private readonly post: (message: ToView) => void,
    private readonly memory: Memory,
    private readonly options: ControllerOptions = {},
  ) {}

  get current(): Conversation | undefined {
    return this.conversation;
  }

  /** Handles one message from the page; a failure is shown in the chat, never dropped. */
  async handle(message: FromView): Promise<void> {
    try {
      switch (message.type) {
        case 'ready':
          await this.refreshComponents();
          await this.listConversations();
          break;
        case 'newChat':
          // Said on the form (a refused folder, a provider without its key): the user fixes it there.
          await this.newChat(message.choice).catch((err: unknown) => this.post({ type: 'newChatFailed', message: describe(err) }));
          break;
        case 'send':
          await this.send(message.text);
          break;
        case 'cancel':
          await this.cancel();
          break;
        case 'listConversations':
          await this.listConversations(message.cursor);
          break;
        case 'openConversation':
          await this.openConversation(message.id);
          break;
        case 'confirmAnswer':
          this.settleConfirm(message.id, message.choice);
          break;
        case 'undo':
          await this.undo(message.turnId);
          break;
      }
    } catch (err) {
      this.post({ type: 'error', message: describe(err) });
    }
  }

  async refreshComponents(): Promise<void> {
    const components = await this.client.listComponents();
    const choices = toChoices(components, this.memory.get<NewChatChoice>(LAST_CHOICE), this.client.roots);
    this.choices = choices;
    this.defaultChoice = choices.default;
    this.post({ type: 'components', choices });
  }

  async listConversations(cursor?: string): Promise<void> {
    const page = await this.client.listConversations(50, cursor);
    this.post({
      type: 'conversations',
      items: page.conversations.map((c) => ({
        id: c.id,
        title: c.title,
        feature: c.feature,
        provider: c.provider,
        model: c.model,
        updatedAt: c.updatedAt,
        messageCount: c.messageCount ?? 0,
        ...(c.cwd ? { root: c.cwd } : {}),
      })),
      nextCursor: page.nextCursor ?? undefined,
    });
  }

  /** Starts a conversation on `choice`; a message sent before it is sent in it. */
  async newChat(choice: NewChatChoice): Promise<Conversation> {
    const starting = this.start(choice);
    this.starting = starting;
    let conversation: Conversation;
    try {
      conversation = await starting;
    } finally {
      if (this.starting === starting) this.starting = undefined;
    }
    const pending = this.pending;
    this.pending = undefined;
    if (pending !== undefined) await this.sendIn(conversation, pending);
    return conversation;
  }

  /** Creates the conversation of `choice` and shows it. */
  private async start(choice: NewChatChoice): Promise<Conversation> {
    const conversation = await this.client.createConversation(conversationParams(choice, this.options.workspace?.()));
    await this.memory.update(LAST_CHOICE, choice);
    this.untitled.add(conversation.id);
    this.switchTo(conversation, 'New chat', []);
    return conversation;
  }

  async openConversation(id: string, title?: string): Promise<void> {
    const conversation = await this.client.resumeConversation(id, title);
    const messages = await conversation.history();
    const shown: ShownMessage[] = messages.map((m) => {
      const reasoning = messageReasoning(m);
      return { role: m.role, text: messageText(m), ...(reasoning ? { reasoning } : {}) };
    });
    this.switchTo(conversation, title ?? shown.find((m) => m.role === 'user')?.text.slice(0, 80) ?? id, shown);
  }

  /**
   * Sends the user's text in the open conversation. With none open, it starts one on the last
   * choice, else the daemon's default, else asks for a choice; the text is kept until a
   * conversation starts, and sent then. `/NAME words` runs the command NAME instead (in the
   * open conversation, else in a new one it sets up); `//text` sends `/text`, and a `/word`
   * that names no command is sent as it is.
   */
  async send(message: string): Promise<void> {
    // Typed right after "start": it belongs to the chat being started, not the one it replaces.
    if (this.starting) await this.starting.catch(() => undefined);
    const read = readSlash(message);
    if ('command' in read) {
      const command = await this.findCommand(read.command.name);
      if (command) return this.slashCommand(command, read.command.rest);
    }
    const text = 'text' in read ? read.text : message;
    if (this.conversation) return this.sendIn(this.conversation, text);
    this.pending = text;
    const choice = this.memory.get<NewChatChoice>(LAST_CHOICE) ?? this.defaultChoice;
    if (!choice) {
      this.post({ type: 'status', level: 'info', text: 'Choose a feature, provider and model: your message is sent when the chat starts.' });
      this.post({ type: 'show', panel: 'newChat' });
      return;
    }
    try {
      await this.newChat(choice);
    } catch (err) {
      this.post({ type: 'show', panel: 'newChat' });
      throw err;
    }
  }

  /** The commands seen from the workspace folder, else the open conversation's (`ListCommands`), kept for `/NAME`. */
  async listCommands(): Promise<ListCommandsResult> {
    const listed = await this.client.listCommands(this.options.workspace?.().cwd ?? this.conversation?.root);
    this.commands = listed.commands;
    return listed;
  }

  /**
   * The command `name`, read again from the daemon when the list has none of that name (a file
   * added since); none when there is no such command or the daemon cannot list them.
   */
  private async findCommand(name: string): Promise<CommandInfo | undefined> {
    const known = this.commands?.find((c) => c.name === name);
    if (known) return known;
    await this.listCommands().catch(() => undefined);
    return this.commands?.find((c) => c.name === name);
  }

  /** `/NAME words` typed in the chat: the command runs in the open conversation, else in a new one. */
  private async slashCommand(command: CommandInfo, rest: string): Promise<void> {
    const words = commandWords(command, rest);
    const run: CommandRun = {
      name: command.name,
      ...(Object.keys(words.arguments).length ? { arguments: words.arguments } : {}),
      ...(words.text ? { text: words.text } : {}),
    };
    if (!this.conversation) {
      await this.runCommand(run);
      return;
    }
    const conversation = this.conversation;
    this.queuedNote(conversation);
    const cwd = this.options.workspace?.().cwd;
    await this.follow(conversation, async (listener) => {
      const started = await conversation.runCommand({ ...run, ...(cwd ? { cwd } : {}) });
      this.post({ type: 'userMessage', text: started.text });
      return { turn: conversation.follow(started.turnId, listener), text: started.text };
    });
  }

  /**
   * Runs a command in a new conversation it sets up (`RunCommand`, in the workspace folder),
   * opened here as a new chat; resolves with the turn's end, whose `summary` is the reply. When
   * the daemon has no default model and the command names none, it runs on the chat's last
   * choice.
   */
  async runCommand(params: CommandRun): Promise<OnFeatureResponseNotification> {
    const cwd = this.options.workspace?.().cwd;
    const run: CommandRun = { ...(cwd ? { cwd } : {}), ...params };
    // `config`: no model chosen (the command names none, the daemon has no default).
    const { conversation, started } = await this.client.runCommand(run).catch((err: unknown) => {
      const choice = this.memory.get<NewChatChoice>(LAST_CHOICE) ?? this.defaultChoice;
      if (!(err instanceof GenaiError && err.kind === 'config') || run.model || !choice) throw err;
      return this.client.runCommand({ ...run, model: choiceModel(choice, this.choices?.modelConfigurations) });
    });
    this.untitled.add(conversation.id);
    this.switchTo(conversation, `/${params.name}`, []);
    return this.follow(conversation, async (listener) => {
      this.post({ type: 'userMessage', text: started.text });
      return { turn: conversation.follow(started.turnId, listener), text: started.text };
    });
  }

  private async sendIn(conversation: Conversation, text: string): Promise<void> {
    this.queuedNote(conversation);
    this.post({ type: 'userMessage', text });
    await this.follow(conversation, async (listener) => ({ turn: await conversation.send(text, listener), text }));
  }

  private queuedNote(conversation: Conversation): void {
    if (conversation.currentTurn) {
      this.post({ type: 'status', level: 'info', text: 'Queued: the reply to the previous message comes first.' });
    }
  }

  /**
   * Shows a turn on the page as it streams, and its end: `start` starts it with the listener
   * given and says the user message's text (the conversation's title until the history has one).
   */
  private async follow(
    conversation: Conversation,
    start: (listener: TurnListener) => Promise<{ turn: Turn; text: string }>,
  ): Promise<OnFeatureResponseNotification> {
    // A turn goes on when the user switches to another conversation; its page messages stop.
    const post = (m: ToView) => {
      if (this.conversation === conversation) this.post(m);
    };
    // Each tool call is shown once, when its name arrives (its arguments are in the details).
    const shownCalls = new WeakSet<ToolCall>();
    /** Every call of the turn, in order (a later round reuses indexes with new objects). */
    const calls: ToolCall[] = [];
    const { turn, text } = await start({
      chunk: (delta, t) => post({ type: 'chunk', turnId: t.id, delta }),
      reasoning: (delta, t) => post({ type: 'reasoning', turnId: t.id, delta }),
      progress: (step, t) => post({ type: 'progress', turnId: t.id, summary: step.summary, detailedResponse: step.detailedResponse }),
      toolCall: (call, t) => {
        if (!calls.includes(call)) calls.push(call);
        if (!call.name || shownCalls.has(call)) return;
        shownCalls.add(call);
        post({ type: 'toolCall', turnId: t.id, index: call.index, name: call.name, ...(call.id ? { id: call.id } : {}) });
      },
      plan: (entries, t) => post({ type: 'plan', turnId: t.id, entries }),
      subagent: (n, t) => post({ type: 'subagent', turnId: t.id, callId: n.callId, agent: n.agent, event: n.event }),
    });
    post({ type: 'turnStarted', turnId: turn.id });
    this.turnConversations.set(turn.id, conversation.id);
    const end = await turn.done;
    const changedFiles = end.changedFiles ?? [];
    const edits = changedFiles.length ? this.editsOf(turn.id, calls, changedFiles) : [];
    // The daemon no longer waits for the turn's asks: their dialogs go.
    for (const [id, c] of this.confirms) if (c.turnId === turn.id) this.settleConfirm(id, undefined, true);
    post({
      type: 'turnEnded',
      turnId: turn.id,
      summary: end.summary,
      detailedResponse: end.detailedResponse,
      isSuccess: end.isSuccess,
      error: end.error ?? undefined,
      ...(changedFiles.length ? { changedFiles } : {}),
      ...(edits.length ? { edits } : {}),
    });
    for (const key of this.editTexts.keys()) if (key.startsWith(`${turn.id}\n`)) this.editTexts.delete(key);
    // The history titles a conversation by its first prompt: the header says so once it is stored.
    if (end.isSuccess && this.untitled.delete(conversation.id)) {
      post({ type: 'title', id: conversation.id, title: conversation.title ?? titleOf(text) });
    }
    return end;
  }

  /**
   * Asks the user on the page (the web page's `confirm` hook): a dialog with the request's
   * choices; resolves with the chosen answer, or the dismissed one when the dialog is closed
   * or the turn ends first.
   */
  confirm(request: RequestConfirmationParams): Promise<RequestConfirmationResult> {
    const id = `confirm-${++this.confirmCount}`;
    const choices = confirmChoices(request);
    this.permissionAsked(request);
    const diff = request.permission?.diff;
    return new Promise((resolve) => {
      this.confirms.set(id, { turnId: request.turnId, choices, dismissed: dismissedAnswer(request), resolve });
      this.post({
        type: 'confirm',
        id,
        turnId: request.turnId,
        text: request.text,
        detail: confirmDetail(request),
        choices: choices.map((c) => ({ label: c.label, kind: c.kind })),
        ...(diff ? { diff: fileDiff(diff.path, diff.oldText ?? null, diff.newText) } : {}),
      });
    });
  }

  /**
   * Notes the edit a permission ask shows (`permission.diff`), so the turn's end can show the
   * whole file's diff of that call. The web page's `confirm` does it; VS Code's dialog calls it.
   */
  permissionAsked(request: RequestConfirmationParams): void {
    const diff = request.permission?.diff;
    if (diff && request.toolCallId) this.editSeen(request.turnId, request.toolCallId, diff.path, diff.oldText ?? null, diff.newText);
  }

  /** Notes an edit's whole old and new text (such as the editor's `WriteTextFile`), for the turn's end. */
  editSeen(turnId: string, callId: string, path: string, oldText: string | null, newText: string): void {
    this.editTexts.set(`${turnId}\n${callId}`, { path, oldText, newText });
  }

  /**
   * The diffs of the turn's edits: each `edit_file`/`write_file` call on a file the turn changed,
   * as the whole file's diff when an ask or the editor showed it, else the call's own texts.
   */
  private editsOf(turnId: string, calls: ToolCall[], changedFiles: string[]): FileDiff[] {
    // The call names its file as the model gave it (relative or absolute), changedFiles as the daemon does.
    const changed = (path: string) => {
      const p = path.replace(/^\.\//, '');
      return changedFiles.some((c) => c === p || c.endsWith(`/${p}`) || p.endsWith(`/${c}`));
    };
    const edits: FileDiff[] = [];
    for (const call of calls) {
      const tool = call.name?.replace('__', '.');
      if (tool !== 'workspace.edit_file' && tool !== 'workspace.write_file') continue;
      let args: Record<string, unknown>;
      try {
        args = JSON.parse(call.arguments || '{}');
      } catch {
        continue;
      }
      const path = typeof args.path === 'string' ? args.path : undefined;
      if (!path || !changed(path)) continue;
      const whole = call.id ? this.editTexts.get(`${turnId}\n${call.id}`) : undefined;
      if (whole) edits.push(fileDiff(path, whole.oldText, whole.newText));
      else if (tool === 'workspace.edit_file' && typeof args.old_text === 'string' && typeof args.new_text === 'string') {
        edits.push(fileDiff(path, args.old_text, args.new_text, { partial: true }));
      } else if (tool === 'workspace.write_file' && typeof args.content === 'string') {
        edits.push({ ...fileDiff(path, null, args.content, { partial: true }), created: false });
      }
    }
    return edits;
  }

  /** Puts back what the turn changed (`Undo`) and tells the page what it did. */
  async undo(turnId: string): Promise<void> {
    const conversationId = this.turnConversations.get(turnId) ?? this.conversation?.id;
    try {
      const undone = await this.client.request('Undo', { conversationId, turnId });
      this.post({ type: 'undone', turnId, ok: true, text: undoText(undone) });
    } catch (err) {
      this.post({ type: 'undone', turnId, ok: false, text: `Undo failed: ${describe(err)}` });
    }
  }

  private settleConfirm(id: string, choice: number | undefined, closePage = false): void {
    const c = this.confirms.get(id);
    if (!c) return;
    this.confirms.delete(id);
    c.resolve(choice !== undefined && c.choices[choice] ? c.choices[choice].answer : c.dismissed);
    if (closePage) this.post({ type: 'confirmClosed', id });
  }

  /** Sends the selection with its file name and language; failures show in the chat. */
  askAboutSelection(selection: Selection): Promise<void> {
    return this.handle({ type: 'send', text: selectionPrompt(selection) });
  }

  async cancel(): Promise<void> {
    const stopped = this.conversation ? await this.conversation.cancel() : false;
    if (!stopped) this.post({ type: 'status', level: 'info', text: 'Nothing to stop.' });
  }

  private switchTo(conversation: Conversation, title: string, messages: ShownMessage[]): void {
    const previous = this.conversation;
    this.conversation = conversation;
    // `/NAME` looks commands up from the conversation's folder: another folder, another list.
    if (previous?.root !== conversation.root) this.commands = undefined;
    if (previous && previous.id !== conversation.id && !previous.currentTurn) {
      previous.close().catch((err) =>
        this.post({ type: 'status', level: 'warning', text: `closing the previous conversation: ${describe(err)}` }),
      );
    }
    this.post({
      type: 'conversation',
      id: conversation.id,
      title,
      description: `${conversation.feature} · ${conversation.serviceProvider} · ${conversation.model}`,
      messages,
      ...(conversation.root ? { root: conversation.root } : {}),
    });
  }
}

/**
 * The new-chat form's choices, from `ListComponents`: providers in the order a user can use
 * them (the default, then those needing no key or having theirs, then those without their key),
 * each group in the daemon's order.
 */
export function toChoices(components: ListComponentsResult, last?: NewChatChoice, roots?: WorkspaceRoots): ComponentChoices {
  const kinds = (components.kinds as { serviceProviders?: Array<{ name: string; formats?: string[] }> }).serviceProviders ?? [];
  const formatsOf = (kind: string) => kinds.find((k) => k.name === kind)?.formats ?? [];
  const features = (components.features as Array<{ name: string; description?: string }>).map((f) => ({
    name: f.name,
    description: f.description ?? '',
  }));
  const d = components.default;
  const listed = d ? components.serviceProviders.some((p) => p.name === d.serviceProvider) : false;
  const feature = features.some((f) => f.name === 'assistant') ? 'assistant' : (features[0]?.name ?? 'assistant');
  const rank = (p: { isDefault: boolean; key: string }) => (p.isDefault ? 0 : p.key === 'missing' ? 2 : 1);
  const serviceProviders = components.serviceProviders
    .map((p) => ({
      name: p.name,
      kind: p.kind,
      defaultModel: p.defaultModel,
      formats: formatsOf(p.kind),
      // A daemon older than the `key` field: nothing is known to be missing.
      key: p.key ?? 'notNeeded',
      isDefault: listed && p.name === d?.serviceProvider,
    }))
    .map((p, i) => ({ p, i }))
    .sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i)
    .map(({ p }) => p);
  return {
    features,
    serviceProviders,
    modelConfigurations: components.modelConfigurations.map((m) => ({ name: m.name, format: m.format, model: m.model })),
    last,
    default:
      d && listed
        ? {
            feature,
            serviceProvider: d.serviceProvider,
            ...(d.modelConfiguration ? { modelConfiguration: d.modelConfiguration } : {}),
            ...(d.model ? { model: d.model } : {}),
          }
        : undefined,
    ...(roots ? { roots: { default: roots.default, allowed: roots.allowed } } : {}),
  };
}

/** What an undo did, in one line: `Undone: src/a.txt restored, top.txt removed`. */
export function undoText(undone: UndoResult): string {
  const files = undone.files.map((f) => `${f.path} ${f.action}`);
  const folders = undone.removedFolders.length ? `; empty folders removed: ${undone.removedFolders.join(', ')}` : '';
  return files.length ? `Undone: ${files.join(', ')}${folders}` : `Nothing to undo${folders}`;
}

/** One line for the user: the daemon's message, or the error's. */
export function describe(err: unknown): string {
  // A lost connection's message says so itself; its kind is no news to a user.
  if (err instanceof GenaiError) return err.kind && err.kind !== 'daemonExited' ? `${err.message} (${err.kind})` : err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
