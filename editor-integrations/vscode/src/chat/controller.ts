// The chat widget's logic, between the chat page and the genai client: the new-chat choices, the
// open conversation, its turns, history. It speaks ToView/FromView messages and has no `vscode`
// import; chat-view.ts plugs it into a webview, the tests into a recorder.
import { GenaiClient, GenaiError, type Conversation, type ToolCall } from '../client/genai-client';
import { messageReasoning, messageText, selectionPrompt, type Selection } from './text';
import type { ComponentChoices, FromView, NewChatChoice, ShownMessage, ToView } from './view-messages';
import type { ListComponentsResult } from '../protocol';

/** Where the last new-chat choice is kept (VS Code's globalState in the extension). */
export interface Memory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const LAST_CHOICE = 'genai.lastChoice';

export class ChatController {
  private conversation: Conversation | undefined;

  constructor(
    private readonly client: GenaiClient,
    private readonly post: (message: ToView) => void,
    private readonly memory: Memory,
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
          await this.newChat(message.choice);
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
      }
    } catch (err) {
      this.post({ type: 'error', message: describe(err) });
    }
  }

  async refreshComponents(): Promise<void> {
    const components = await this.client.listComponents();
    this.post({ type: 'components', choices: toChoices(components, this.memory.get<NewChatChoice>(LAST_CHOICE)) });
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
      })),
      nextCursor: page.nextCursor ?? undefined,
    });
  }

  async newChat(choice: NewChatChoice): Promise<Conversation> {
    await this.memory.update(LAST_CHOICE, choice);
    const conversation = await this.client.createConversation({
      feature: choice.feature,
      serviceProvider: choice.serviceProvider,
      modelConfiguration: choice.modelConfiguration,
    });
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

  /** Sends the user's text in the open conversation, starting one with the last choice if none is open. */
  async send(text: string): Promise<void> {
    const conversation = this.conversation ?? (await this.startWithLastChoice());
    if (!conversation) return;
    if (conversation.currentTurn) {
      this.post({ type: 'status', level: 'info', text: 'Queued: the reply to the previous message comes first.' });
    }
    this.post({ type: 'userMessage', text });
    // A turn goes on when the user switches to another conversation; its page messages stop.
    const post = (m: ToView) => {
      if (this.conversation === conversation) this.post(m);
    };
    // Each tool call is shown once, when its name arrives (its arguments are in the details).
    const shownCalls = new WeakSet<ToolCall>();
    const turn = await conversation.send(text, {
      chunk: (delta, t) => post({ type: 'chunk', turnId: t.id, delta }),
      reasoning: (delta, t) => post({ type: 'reasoning', turnId: t.id, delta }),
      progress: (step, t) => post({ type: 'progress', turnId: t.id, summary: step.summary, detailedResponse: step.detailedResponse }),
      toolCall: (call, t) => {
        if (!call.name || shownCalls.has(call)) return;
        shownCalls.add(call);
        post({ type: 'toolCall', turnId: t.id, index: call.index, name: call.name });
      },
    });
    post({ type: 'turnStarted', turnId: turn.id });
    const end = await turn.done;
    post({
      type: 'turnEnded',
      turnId: turn.id,
      summary: end.summary,
      detailedResponse: end.detailedResponse,
      isSuccess: end.isSuccess,
      error: end.error ?? undefined,
    });
  }

  /** Sends the selection with its file name and language; failures show in the chat. */
  askAboutSelection(selection: Selection): Promise<void> {
    return this.handle({ type: 'send', text: selectionPrompt(selection) });
  }

  async cancel(): Promise<void> {
    const stopped = this.conversation ? await this.conversation.cancel() : false;
    if (!stopped) this.post({ type: 'status', level: 'info', text: 'Nothing to stop.' });
  }

  private async startWithLastChoice(): Promise<Conversation | undefined> {
    const last = this.memory.get<NewChatChoice>(LAST_CHOICE);
    if (!last) {
      this.post({ type: 'status', level: 'info', text: 'Choose a feature, provider and model to start a chat.' });
      this.post({ type: 'show', panel: 'newChat' });
      return undefined;
    }
    return this.newChat(last);
  }

  private switchTo(conversation: Conversation, title: string, messages: ShownMessage[]): void {
    const previous = this.conversation;
    this.conversation = conversation;
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
    });
  }
}

/** The new-chat form's choices, from `ListComponents`. */
export function toChoices(components: ListComponentsResult, last?: NewChatChoice): ComponentChoices {
  const kinds = (components.kinds as { serviceProviders?: Array<{ name: string; formats?: string[] }> }).serviceProviders ?? [];
  const formatsOf = (kind: string) => kinds.find((k) => k.name === kind)?.formats ?? [];
  return {
    features: (components.features as Array<{ name: string; description?: string }>).map((f) => ({
      name: f.name,
      description: f.description ?? '',
    })),
    serviceProviders: components.serviceProviders.map((p) => ({
      name: p.name,
      kind: p.kind,
      defaultModel: p.defaultModel,
      formats: formatsOf(p.kind),
    })),
    modelConfigurations: components.modelConfigurations.map((m) => ({ name: m.name, format: m.format, model: m.model })),
    last,
  };
}

/** One line for the user: the daemon's message, or the error's. */
export function describe(err: unknown): string {
  if (err instanceof GenaiError) return err.kind ? `${err.message} (${err.kind})` : err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
