// Text in and out of the chat: a stored message shown as text, and the message that
// "Ask About Selection" sends.
import type { Message, StoredMessage } from '../protocol';

/** The text parts of a message joined; other parts are named in brackets, reasoning left out. */
export function messageText(message: Message | StoredMessage): string {
  const content = message.content ?? [];
  if (typeof content === 'string') return content;
  return content
    .filter((part) => typeof part === 'string' || part.type !== 'reasoning')
    .map((part) => {
      if (typeof part === 'string') return part;
      if (part.type === 'text') return part.text;
      return `[${part.type}]`;
    })
    .join('\n');
}

/** The readable reasoning of a message (empty when it has none). */
export function messageReasoning(message: Message | StoredMessage): string {
  const content = message.content ?? [];
  if (typeof content === 'string') return '';
  return content.map((part) => (typeof part !== 'string' && part.type === 'reasoning' ? part.text ?? '' : '')).join('');
}

/** A piece of an editor's document. */
export interface Selection {
  question: string;
  /** The file name as the user knows it (workspace-relative when possible). */
  fileName: string;
  /** The editor's language id, such as `typescript`. */
  language: string;
  text: string;
  /** 1-based line numbers of the selection. */
  startLine?: number;
  endLine?: number;
}

/** The user message for a question about a selection: the question, where it is from, the code. */
export function selectionPrompt(s: Selection): string {
  const where = s.startLine ? `${s.fileName}, lines ${s.startLine}-${s.endLine ?? s.startLine}` : s.fileName;
  // A fence longer than any backtick run in the text, so the code cannot close it.
  const longest = Math.max(2, ...(s.text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${s.question.trim()}\n\nFrom \`${where}\` (${s.language}):\n\n${fence}${s.language}\n${s.text}\n${fence}\n`;
}

/** A conversation's title from its first prompt, as the history stores it: one line, at most 80 characters. */
export function titleOf(prompt: string): string {
  const line = prompt.split(/\s+/).filter(Boolean).join(' ');
  const chars = [...line];
  return chars.length <= 80 ? line : `${chars.slice(0, 79).join('')}…`;
}
