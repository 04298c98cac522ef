// The messages between the chat controller (extension side) and the chat page (webview side),
// posted with `webview.postMessage` one way and `acquireVsCodeApi().postMessage` the other.
import type { FileDiff } from './diff';
import type { OnSubagentEventNotification, PlanEntry } from '../protocol';

export type { DiffLine, FileDiff } from './diff';

/** What the new-chat form chose: a feature, a provider and its model. */
export interface NewChatChoice {
  feature: string;
  serviceProvider: string;
  /** A named model configuration, or none for the provider's default model. */
  modelConfiguration?: string;
  /** A model id of the provider (the daemon's default choice can name one). */
  model?: string;
  /** The folder the conversation works in, chosen on the web page within `roots` (none: the host's). */
  cwd?: string;
}

/** Whether a provider has the key it needs (`ListComponents`' `key`). */
export type KeyStatus = 'notNeeded' | 'found' | 'missing';

export interface ComponentChoices {
  features: Array<{ name: string; description: string }>;
  /** The default first, then those that need no key or have one, then those without their key. */
  serviceProviders: Array<{ name: string; kind: string; defaultModel?: string | null; formats: string[]; key: KeyStatus; isDefault: boolean }>;
  modelConfigurations: Array<{ name: string; format: string; model: string }>;
  /** The last choice made, to preselect. */
  last?: NewChatChoice;
  /** What a conversation naming no model runs on (`genai ask` without `-m`), if anything. */
  default?: NewChatChoice;
  /**
   * The folders `genai serve` lets a conversation work in, and the one it works in by default:
   * the web page offers them on the form; none in VS Code (the workspace folder is the root).
   */
  roots?: { default: string; allowed: string[] };
}

export interface ConversationSummary {
  id: string;
  title: string;
  feature: string;
  provider: string;
  model: string;
  updatedAt: number;
  messageCount: number;
  /** The folder it works in, when known. */
  root?: string;
}

export interface ShownMessage {
  role: 'user' | 'assistant' | 'system' | 'tool';
  text: string;
  /** The model's reasoning before this reply, shown collapsed above it. */
  reasoning?: string;
}

export type ToView =
  | { type: 'components'; choices: ComponentChoices }
  | { type: 'conversations'; items: ConversationSummary[]; nextCursor?: string }
  | { type: 'conversation'; id: string; title: string; description: string; messages: ShownMessage[]; root?: string }
  /** A new chat could not start (such as a folder genai serve refuses): said on the form, which stays open. */
  | { type: 'newChatFailed'; message: string }
  /** The open conversation's title, once its first reply came. */
  | { type: 'title'; id: string; title: string }
  | { type: 'userMessage'; text: string }
  | { type: 'turnStarted'; turnId: string }
  | { type: 'chunk'; turnId: string; delta: string }
  /** A piece of the model's reasoning: collapsed above the turn's reply. */
  | { type: 'reasoning'; turnId: string; delta: string }
  | { type: 'progress'; turnId: string; summary: string; detailedResponse: string[] }
  /** The model calls a tool (its name came in `OnToolCallChunk`): a line in the turn's bubble. */
  | { type: 'toolCall'; turnId: string; index: number; name: string; id?: string }
  /** What a subagent did (`OnSubagentEvent`): a collapsible block under its task call `callId`. */
  | { type: 'subagent'; turnId: string; callId: string; agent: string; event: OnSubagentEventNotification['event'] }
  /** The model's plan (`OnPlan`), whole each time: a checklist in the turn's bubble, replaced by the next. */
  | { type: 'plan'; turnId: string; entries: PlanEntry[] }
  | {
      type: 'turnEnded';
      turnId: string;
      summary: string;
      detailedResponse: string[];
      isSuccess: boolean;
      error?: { kind: string; message: string };
      /** The root-relative files the turn's tools changed: the page offers "Undo (N files)". */
      changedFiles?: string[];
      /** What the turn's edits changed, as far as the chat saw it (the asks' diffs, the edits' arguments). */
      edits?: FileDiff[];
    }
  /** What `Undo` of the turn did (`ok`), or why it failed. */
  | { type: 'undone'; turnId: string; ok: boolean; text: string }
  | { type: 'error'; message: string }
  /**
   * A tool call asks to go ahead (`RequestConfirmation`): the page shows a dialog with `text`,
   * `detail` and one button per choice, and answers `confirmAnswer` with the same `id`. Asks
   * that come while one is shown wait their turn.
   */
  | {
      type: 'confirm';
      id: string;
      turnId: string;
      text: string;
      detail: string;
      choices: Array<{ label: string; kind: 'allow' | 'reject' }>;
      /** The edit the ask is about (`permission.diff`), shown in the dialog. */
      diff?: FileDiff;
    }
  /** The ask `id` needs no answer any more (its turn ended): its dialog goes away. */
  | { type: 'confirmClosed'; id: string }
  | { type: 'status'; level: 'info' | 'warning' | 'error'; text: string }
  | { type: 'show'; panel: 'chat' | 'newChat' | 'history' };

export type FromView =
  | { type: 'ready' }
  | { type: 'newChat'; choice: NewChatChoice }
  | { type: 'send'; text: string }
  | { type: 'cancel' }
  | { type: 'listConversations'; cursor?: string }
  | { type: 'openConversation'; id: string }
  /** The user's answer to the ask `id`: the index of the chosen button, none when the dialog was dismissed. */
  | { type: 'confirmAnswer'; id: string; choice?: number }
  /** Put back the files the turn changed (`Undo`). */
  | { type: 'undo'; turnId: string };
