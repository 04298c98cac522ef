// The chat page's script (runs in the webview, bundled with markdown-it by scripts/bundle.mjs).
// It draws what the extension posts (ToView) and posts what the user does (FromView); it holds no
// protocol logic. Replies are Markdown rendered with raw HTML disabled, re-rendered per chunk.
import MarkdownIt from 'markdown-it';
import type { ComponentChoices, ConversationSummary, FileDiff, FromView, ShownMessage, ToView } from '../chat/view-messages';
import type { PlanEntry } from '../protocol';
import { showSubagent } from './subagent';

declare function acquireVsCodeApi(): { postMessage(message: FromView): void };

const vscode = acquireVsCodeApi();
// html: false escapes any HTML in the model's text; markdown-it's validateLink refuses
// javascript:, vbscript:, file: and non-image data: links.
const markdown = new MarkdownIt({ html: false, linkify: true, breaks: false });

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const messages = $<HTMLElement>('messages');
const prompt = $<HTMLTextAreaElement>('prompt');
const stop = $<HTMLButtonElement>('stop');
const status = $<HTMLElement>('status');
const newChatForm = $<HTMLFormElement>('new-chat-form');
const historyPanel = $<HTMLElement>('history-panel');
const historyList = $<HTMLUListElement>('history-list');
const historyMore = $<HTMLButtonElement>('history-more');
const featureSelect = $<HTMLSelectElement>('feature');
const providerSelect = $<HTMLSelectElement>('provider');
const modelSelect = $<HTMLSelectElement>('model');
const rootField = $<HTMLLabelElement>('root-field');
const rootInput = $<HTMLInputElement>('root');
const rootHint = $<HTMLElement>('root-hint');
const newChatError = $<HTMLElement>('new-chat-error');
const conversationRoot = $<HTMLElement>('conversation-root');
const confirmDialog = $<HTMLDialogElement>('confirm-dialog');

let choices: ComponentChoices | undefined;
let historyCursor: string | undefined;
/** True while the next history page is asked for (it is added below the list). */
let historyAppend = false;
/** Turns that have not ended, by id: their bubble and text so far. */
const turns = new Map<string, { bubble: HTMLElement; text: string }>();
type ConfirmAsk = Extract<ToView, { type: 'confirm' }>;
/** The ask the dialog shows, and those waiting behind it. */
let shownAsk: ConfirmAsk | undefined;
const waitingAsks: ConfirmAsk[] = [];

// ---- drawing -------------------------------------------------------------------------------

function bubble(role: ShownMessage['role']): HTMLElement {
  const el = document.createElement('div');
  el.className = `message ${role === 'user' ? 'user' : 'assistant'}`;
  const body = document.createElement('div');
  body.className = 'body';
  el.append(body);
  messages.append(el);
  messages.scrollTop = messages.scrollHeight;
  return el;
}

function addUser(text: string): void {
  bubble('user').querySelector('.body')!.textContent = text;
}

function addAssistant(text: string): HTMLElement {
  const el = bubble('assistant');
  el.querySelector('.body')!.innerHTML = markdown.render(text);
  return el;
}

/** The details toggle and list under a reply. */
function addDetails(el: HTMLElement, lines: string[]): void {
  el.querySelector('.details-toggle')?.remove();
  el.querySelector('.details')?.remove();
  if (lines.length === 0) return;
  const toggle = document.createElement('button');
  toggle.type = 'button';
  toggle.className = 'link details-toggle';
  toggle.textContent = 'Show details';
  const list = document.createElement('ul');
  list.className = 'details';
  list.hidden = true;
  for (const line of lines) {
    const li = document.createElement('li');
    li.textContent = line;
    list.append(li);
  }
  toggle.addEventListener('click', () => {
    list.hidden = !list.hidden;
    toggle.textContent = list.hidden ? 'Show details' : 'Hide details';
  });
  el.append(toggle, list);
}

function turnBubble(turnId: string): { bubble: HTMLElement; text: string } {
  let turn = turns.get(turnId);
  if (!turn) {
    turn = { bubble: addAssistant(''), text: '' };
    turn.bubble.classList.add('streaming');
    turn.bubble.dataset.turnId = turnId;
    turns.set(turnId, turn);
    stop.hidden = false;
  }
  return turn;
}

/**
 * The model's reasoning, collapsed above the reply (text only, never markup): a `<details>`
 * the user opens to read it; `append` adds a streamed piece.
 */
function reasoningBox(el: HTMLElement): HTMLElement {
  let box = el.querySelector<HTMLElement>('details.reasoning .reasoning-text');
  if (!box) {
    const details = document.createElement('details');
    details.className = 'reasoning';
    const summary = document.createElement('summary');
    summary.textContent = 'Reasoning';
    box = document.createElement('div');
    box.className = 'reasoning-text';
    details.append(summary, box);
    el.prepend(details);
  }
  return box;
}

/** A line above the reply text saying which tool the model calls (text only, never markup). */
function addToolCall(el: HTMLElement, name: string, id?: string): void {
  let list = el.querySelector<HTMLElement>('.tool-calls');
  if (!list) {
    list = document.createElement('div');
    list.className = 'tool-calls';
    el.querySelector('.body')!.before(list);
  }
  const line = document.createElement('div');
  line.className = 'tool-call';
  line.textContent = `calling ${name}…`;
  if (id) line.dataset.callId = id;
  list.append(line);
  messages.scrollTop = messages.scrollHeight;
}

/**
 * The turn's plan as a checklist (text only, never markup): one line a step, `☐` pending, `◐` in
 * progress, `☑` completed; a later plan of the turn replaces it.
 */
function showPlan(el: HTMLElement, entries: PlanEntry[]): void {
  let list = el.querySelector<HTMLElement>('ul.plan');
  if (!list) {
    list = document.createElement('ul');
    list.className = 'plan';
    el.querySelector('.body')!.before(list);
  }
  const marks = { pending: '☐', in_progress: '◐', completed: '☑' } as const;
  list.replaceChildren(
    ...entries.map((e) => {
      const item = document.createElement('li');
      item.className = `plan-entry ${e.status}`;
      item.textContent = `${marks[e.status]} ${e.content}${e.priority === 'high' ? ' (high)' : ''}`;
      return item;
    }),
  );
  messages.scrollTop = messages.scrollHeight;
}

/**
 * A file's diff as text lines (never markup): a header with the path and the counts, then one
 * line per diff line, `+`/`-`/` ` in front, coloured by its class.
 */
function diffView(diff: FileDiff): HTMLElement {
  const box = document.createElement('div');
  box.className = 'diff';
  const header = document.createElement('div');
  header.className = 'diff-header';
  const what = diff.created ? 'new file' : diff.partial ? 'edit' : 'changed';
  header.textContent = `${diff.path} (${what}, +${diff.added} −${diff.removed})`;
  const body = document.createElement('pre');
  body.className = 'diff-lines';
  for (const line of diff.lines) {
    const row = document.createElement('div');
    row.className = `diff-${line.kind}`;
    const mark = line.kind === 'add' ? '+' : line.kind === 'remove' ? '-' : line.kind === 'context' ? ' ' : '';
    row.textContent = `${mark}${line.text}`;
    body.append(row);
  }
  box.append(header, body);
  return box;
}

/** Under a turn that changed files: its edits' diffs (collapsed) and an "Undo (N files)" button. */
function addChanges(el: HTMLElement, turnId: string, changedFiles: string[], edits: FileDiff[]): void {
  const box = document.createElement('div');
  box.className = 'changes';
  for (const edit of edits) {
    const details = document.createElement('details');
    details.className = 'edit';
    const summary = document.createElement('summary');
    summary.textContent = `${edit.created ? 'Created' : 'Edited'} ${edit.path} (+${edit.added} −${edit.removed})`;
    details.append(summary, diffView(edit));
    box.append(details);
  }
  const row = document.createElement('div');
  row.className = 'undo-row';
  const undo = document.createElement('button');
  undo.type = 'button';
  undo.className = 'secondary undo';
  const n = changedFiles.length;
  undo.textContent = `Undo (${n} ${n === 1 ? 'file' : 'files'})`;
  undo.title = `Put back ${changedFiles.join(', ')} as before this turn`;
  const result = document.createElement('span');
  result.className = 'undo-result';
  undo.addEventListener('click', () => {
    undo.disabled = true;
    result.className = 'undo-result';
    result.textContent = 'Undoing…';
    vscode.postMessage({ type: 'undo', turnId });
  });
  row.append(undo, result);
  box.append(row);
  el.dataset.turnId = turnId;
  el.append(box);
}

/** What Undo did (the button goes), or why it failed (the button stays, to try again). */
function showUndone(turnId: string, ok: boolean, text: string): void {
  const el = messages.querySelector<HTMLElement>(`.message[data-turn-id="${CSS.escape(turnId)}"]`);
  const row = el?.querySelector('.undo-row');
  if (!row) return;
  const undo = row.querySelector<HTMLButtonElement>('button.undo');
  const result = row.querySelector<HTMLElement>('.undo-result')!;
  result.textContent = text;
  result.className = `undo-result ${ok ? 'ok' : 'error'}`;
  if (ok) undo?.remove();
  else if (undo) undo.disabled = false;
}

function showStatus(level: 'info' | 'warning' | 'error', text: string): void {
  status.hidden = false;
  status.className = level;
  status.textContent = text;
}

function showPanel(panel: 'chat' | 'newChat' | 'history'): void {
  newChatForm.hidden = panel !== 'newChat';
  historyPanel.hidden = panel !== 'history';
  if (panel === 'chat') prompt.focus();
}

function option(select: HTMLSelectElement, value: string, label: string, selected = false): void {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = label;
  o.selected = selected;
  select.append(o);
}

/** A provider as the picker shows it: the default and a missing key said in words. */
function providerLabel(p: ComponentChoices['serviceProviders'][number]): string {
  const notes = [p.isDefault ? 'default' : '', p.key === 'missing' ? 'needs a key' : ''].filter(Boolean);
  return `${p.name} (${p.kind})${notes.length ? ` — ${notes.join(', ')}` : ''}`;
}

/** Fills the new-chat form (the last choice preselected, else the default); the model list follows the chosen provider. */
function fillChoices(c: ComponentChoices): void {
  choices = c;
  const chosen = preselected();
  featureSelect.replaceChildren();
  for (const f of c.features) option(featureSelect, f.name, f.name, f.name === chosen?.feature);
  providerSelect.replaceChildren();
  for (const p of c.serviceProviders) option(providerSelect, p.name, providerLabel(p), p.name === chosen?.serviceProvider);
  fillModels();
  describeFeature();
  fillRoots(chosen?.cwd);
}

/** Whether `folder` is one of `allowed` or below one (as text: the daemon checks it for real). */
function within(folder: string, allowed: string[]): boolean {
  return allowed.some((a) => folder === a || folder.startsWith(a.endsWith('/') ? a : `${a}/`));
}

/**
 * The folder field (the web page's: genai serve says which folders it allows): the last folder
 * chosen when still allowed, else the serve's default; the allowed ones offered as suggestions.
 */
function fillRoots(last: string | undefined): void {
  const roots = choices?.roots;
  rootField.hidden = !roots;
  rootHint.hidden = !roots;
  if (!roots) return;
  rootInput.value = last && within(last, roots.allowed) ? last : roots.default;
  $('roots').replaceChildren(
    ...roots.allowed.map((folder) => {
      const o = document.createElement('option');
      o.value = folder;
      return o;
    }),
  );
  rootHint.textContent = `Any folder inside ${roots.allowed.join(', ')} (genai serve's [serve] roots).`;
}

/** The choice preselected in the form: the last one, else the daemon's default. */
function preselected(): ComponentChoices['last'] {
  if (!choices) return undefined;
  const last = choices.last;
  return last && choices.serviceProviders.some((p) => p.name === last.serviceProvider) ? last : choices.default;
}

function fillModels(): void {
  if (!choices) return;
  const provider = choices.serviceProviders.find((p) => p.name === providerSelect.value);
  const chosen = preselected()?.serviceProvider === providerSelect.value ? preselected() : undefined;
  modelSelect.replaceChildren();
  option(modelSelect, '', `default${provider?.defaultModel ? ` (${provider.defaultModel})` : ''}`);
  // A model id the default names (not a named configuration): its own entry, chosen.
  if (chosen?.model && !chosen.modelConfiguration && chosen.model !== provider?.defaultModel) {
    option(modelSelect, `model:${chosen.model}`, chosen.model, true);
  }
  for (const m of choices.modelConfigurations) {
    if (provider && provider.formats.length > 0 && !provider.formats.includes(m.format)) continue;
    option(modelSelect, m.name, `${m.name} (${m.model})`, m.name === chosen?.modelConfiguration);
  }
}

function describeFeature(): void {
  const f = choices?.features.find((x) => x.name === featureSelect.value);
  $<HTMLElement>('feature-description').textContent = f?.description ?? '';
}

function fillHistory(items: ConversationSummary[], more: boolean, append: boolean): void {
  if (!append) historyList.replaceChildren();
  if (!append && items.length === 0) {
    const li = document.createElement('li');
    li.textContent = 'No conversations yet.';
    historyList.append(li);
  }
  for (const c of items) {
    const li = document.createElement('li');
    li.dataset.id = c.id;
    const title = document.createElement('div');
    title.textContent = c.title || '(untitled)';
    const meta = document.createElement('div');
    meta.className = 'meta';
    meta.textContent = `${new Date(c.updatedAt).toLocaleString()} · ${c.feature} · ${c.provider} · ${c.model} · ${c.messageCount} messages`;
    li.append(title, meta);
    if (c.root) {
      const root = document.createElement('div');
      root.className = 'root';
      root.textContent = c.root;
      li.append(root);
    }
    li.addEventListener('click', () => {
      vscode.postMessage({ type: 'openConversation', id: c.id });
      showPanel('chat');
    });
    historyList.append(li);
  }
  historyMore.hidden = !more;
}

/** Shows the next waiting ask in the dialog, or closes it when none is left. */
function showNextAsk(): void {
  shownAsk = waitingAsks.shift();
  if (!shownAsk) {
    if (confirmDialog.open) confirmDialog.close();
    return;
  }
  const ask = shownAsk;
  $('confirm-text').textContent = ask.text;
  $('confirm-detail').textContent = ask.detail;
  const diffBox = $('confirm-diff');
  diffBox.hidden = !ask.diff;
  diffBox.replaceChildren(...(ask.diff ? [diffView(ask.diff)] : []));
  const buttons = ask.choices.map((c, i) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = c.kind === 'allow' ? 'allow' : 'secondary reject';
    b.textContent = c.label;
    b.addEventListener('click', () => answerAsk(ask, i));
    return b;
  });
  $('confirm-choices').replaceChildren(...buttons);
  if (!confirmDialog.open) confirmDialog.showModal();
  // Nothing is allowed by a stray Enter: the first rejecting choice has the focus.
  (buttons[ask.choices.findIndex((c) => c.kind === 'reject')] ?? buttons[0])?.focus();
}

/** Sends the answer (a choice's index; none: dismissed) and moves on to the next ask. */
function answerAsk(ask: ConfirmAsk, choice: number | undefined): void {
  if (shownAsk !== ask) return;
  vscode.postMessage({ type: 'confirmAnswer', id: ask.id, ...(choice !== undefined ? { choice } : {}) });
  showNextAsk();
}

// ---- what the extension says ---------------------------------------------------------------

function receive(m: ToView): void {
  switch (m.type) {
    case 'components':
      fillChoices(m.choices);
      break;
    case 'conversations':
      fillHistory(m.items, m.nextCursor !== undefined, historyAppend);
      historyCursor = m.nextCursor;
      historyAppend = false;
      break;
    case 'conversation':
      messages.replaceChildren();
      turns.clear();
      stop.hidden = true;
      status.hidden = true;
      $('conversation-title').textContent = m.title;
      $('conversation-description').textContent = m.description;
      conversationRoot.hidden = !m.root;
      conversationRoot.textContent = m.root ? `in ${m.root}` : '';
      conversationRoot.title = m.root ? 'The folder its tools work in' : '';
      newChatError.hidden = true;
      for (const msg of m.messages) {
        if (msg.role === 'user') addUser(msg.text);
        else if (msg.role === 'assistant') {
          const el = addAssistant(msg.text);
          if (msg.reasoning) reasoningBox(el).textContent = msg.reasoning;
        }
      }
      showPanel('chat');
      break;
    case 'title':
      $('conversation-title').textContent = m.title;
      break;
    case 'userMessage':
      addUser(m.text);
      break;
    case 'turnStarted':
      turnBubble(m.turnId);
      break;
    case 'chunk': {
      const turn = turnBubble(m.turnId);
      turn.text += m.delta;
      turn.bubble.querySelector('.body')!.innerHTML = markdown.render(turn.text);
      messages.scrollTop = messages.scrollHeight;
      break;
    }
    case 'progress': {
      const turn = turnBubble(m.turnId);
      if (!turn.text) turn.bubble.querySelector('.body')!.innerHTML = markdown.render(m.summary);
      addDetails(turn.bubble, m.detailedResponse);
      break;
    }
    case 'reasoning': {
      const box = reasoningBox(turnBubble(m.turnId).bubble);
      box.textContent = (box.textContent ?? '') + m.delta;
      break;
    }
    case 'toolCall':
      addToolCall(turnBubble(m.turnId).bubble, m.name, m.id);
      break;
    case 'subagent':
      showSubagent(turnBubble(m.turnId).bubble, m);
      messages.scrollTop = messages.scrollHeight;
      break;
    case 'plan':
      showPlan(turnBubble(m.turnId).bubble, m.entries);
      break;
    case 'turnEnded': {
      const turn = turnBubble(m.turnId);
      turns.delete(m.turnId);
      turn.bubble.classList.remove('streaming');
      const body = turn.bubble.querySelector('.body')!;
      if (m.isSuccess) {
        body.innerHTML = markdown.render(m.summary);
      } else {
        turn.bubble.classList.add('error');
        const kind = m.error?.kind ? ` (${m.error.kind})` : '';
        // Keep what streamed before the failure, then say what went wrong.
        body.innerHTML = (turn.text ? markdown.render(turn.text) : '') + markdown.render(`**Error${kind}:** ${m.error?.message ?? m.summary}`);
      }
      addDetails(turn.bubble, m.detailedResponse);
      if (m.changedFiles?.length) addChanges(turn.bubble, m.turnId, m.changedFiles, m.edits ?? []);
      stop.hidden = turns.size === 0;
      break;
    }
    case 'undone':
      showUndone(m.turnId, m.ok, m.text);
      break;
    case 'error': {
      const el = bubble('assistant');
      el.classList.add('error');
      el.querySelector('.body')!.textContent = m.message;
      break;
    }
    case 'confirm':
      waitingAsks.push(m);
      if (!shownAsk) showNextAsk();
      break;
    case 'confirmClosed': {
      const waiting = waitingAsks.findIndex((a) => a.id === m.id);
      if (waiting >= 0) waitingAsks.splice(waiting, 1);
      if (shownAsk?.id === m.id) showNextAsk();
      break;
    }
    case 'newChatFailed':
      newChatError.textContent = m.message;
      newChatError.hidden = false;
      showPanel('newChat');
      break;
    case 'status':
      showStatus(m.level, m.text);
      break;
    case 'show':
      if (m.panel === 'history') requestHistory();
      showPanel(m.panel);
      break;
  }
}

// ---- what the user does --------------------------------------------------------------------

function requestHistory(): void {
  historyAppend = false;
  vscode.postMessage({ type: 'listConversations' });
}

function sendPrompt(): void {
  const text = prompt.value.trim();
  if (!text) return;
  prompt.value = '';
  status.hidden = true;
  vscode.postMessage({ type: 'send', text });
}

$('new-chat').addEventListener('click', () => showPanel(newChatForm.hidden ? 'newChat' : 'chat'));
$('close-new-chat').addEventListener('click', () => showPanel('chat'));
$('show-history').addEventListener('click', () => {
  if (historyPanel.hidden) requestHistory();
  showPanel(historyPanel.hidden ? 'history' : 'chat');
});
$('close-history').addEventListener('click', () => showPanel('chat'));
historyMore.addEventListener('click', () => {
  historyAppend = true;
  vscode.postMessage({ type: 'listConversations', cursor: historyCursor });
});
providerSelect.addEventListener('change', fillModels);
featureSelect.addEventListener('change', describeFeature);
newChatForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const model = modelSelect.value.startsWith('model:') ? modelSelect.value.slice('model:'.length) : undefined;
  const cwd = rootField.hidden ? '' : rootInput.value.trim();
  newChatError.hidden = true;
  vscode.postMessage({
    type: 'newChat',
    choice: {
      feature: featureSelect.value,
      serviceProvider: providerSelect.value,
      ...(model !== undefined ? { model } : modelSelect.value ? { modelConfiguration: modelSelect.value } : {}),
      ...(cwd ? { cwd } : {}),
    },
  });
});
$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  sendPrompt();
});
prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    sendPrompt();
  }
});
stop.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
// Escape closes the dialog without a choice: the ask is answered as dismissed (rejected).
confirmDialog.addEventListener('cancel', (e) => {
  e.preventDefault();
  if (shownAsk) answerAsk(shownAsk, undefined);
});
window.addEventListener('message', (event: MessageEvent<ToView>) => receive(event.data));

vscode.postMessage({ type: 'ready' });
