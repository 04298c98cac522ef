// genai's commands (prompts kept as files: `ListCommands`, `RunCommand`) as the chat and the
// editor run them: a chat message `/NAME words` read into the command's arguments and text, the
// model a command's new conversation runs on when the daemon has no default, and the first code
// block of a reply with where it goes in a document (`apply: replace` or `insert_below`). No
// `vscode` import.
import type { CommandInfo } from '../protocol';
import type { ComponentChoices, NewChatChoice } from './view-messages';

/** What the arguments of a command run take: named arguments and the free text. */
export interface CommandWords {
  arguments: Record<string, string>;
  text: string;
}

/**
 * A chat message read for a command: `/NAME rest` names a command (when one has that name);
 * `//text` is the plain text `/text`; anything else is plain text.
 */
export function readSlash(message: string): { command: { name: string; rest: string } } | { text: string } {
  if (message.startsWith('//')) return { text: message.slice(1) };
  const m = /^\/([^\s/]\S*)(?:\s+([\s\S]*))?$/.exec(message);
  return m ? { command: { name: m[1], rest: m[2] ?? '' } } : { text: message };
}

/**
 * The words after `/NAME`: leading `key=value` words whose key the command declares are its
 * arguments; the rest, as typed, is its text.
 */
export function commandWords(command: CommandInfo, rest: string): CommandWords {
  const args: Record<string, string> = {};
  let text = rest.trim();
  for (;;) {
    const m = /^([^\s=]+)=(\S*)(?:\s+|$)/.exec(text);
    if (!m || !command.arguments.some((a) => a.name === m[1])) break;
    args[m[1]] = m[2];
    text = text.slice(m[0].length);
  }
  return { arguments: args, text };
}

/**
 * What `RunCommand`'s `model` names for a chat choice: `PROVIDER:MODEL` for a model id or a model
 * configuration's model, else the provider alone (its default model).
 */
export function choiceModel(choice: NewChatChoice, configurations: ComponentChoices['modelConfigurations'] = []): string {
  const model = choice.model ?? configurations.find((m) => m.name === choice.modelConfiguration)?.model;
  return model ? `${choice.serviceProvider}:${model}` : choice.serviceProvider;
}

/** The text of the first fenced code block of a Markdown reply (an unclosed one runs to the end). */
export function firstCodeBlock(markdown: string): string | undefined {
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(lines[i]);
    if (!open) continue;
    const close = new RegExp(`^ {0,3}${open[1][0]}{${open[1].length},}\\s*$`);
    const end = lines.findIndex((line, j) => j > i && close.test(line));
    return lines.slice(i + 1, end < 0 ? undefined : end).join('\n');
  }
  return undefined;
}

/**
 * Where `code` goes in `text` for a selection [start, end) (offsets): `replace` takes the
 * selection's place (ending with a newline when it did), `insert_below` goes on the line after
 * it. The range to replace (empty for an insertion) and what to put there.
 */
export function placeCode(text: string, start: number, end: number, code: string, apply: 'replace' | 'insert_below'): { from: number; to: number; text: string } {
  const body = code.replace(/\n$/, '');
  const wholeLines = end > start && text[end - 1] === '\n';
  if (apply === 'replace') return { from: start, to: end, text: wholeLines ? `${body}\n` : body };
  if (wholeLines) return { from: end, to: end, text: `${body}\n` };
  const lineEnd = text.indexOf('\n', end);
  return lineEnd < 0 ? { from: text.length, to: text.length, text: `\n${body}` } : { from: lineEnd + 1, to: lineEnd + 1, text: `${body}\n` };
}
