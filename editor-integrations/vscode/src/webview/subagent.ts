// A subagent's work in the chat page: a collapsible block under its parent's task call (the
// `OnSubagentEvent` notices the controller posts as `subagent` messages), headed by the agent's
// name, how it stands and its cost, holding one line per tool call (what the policy decided, by
// which rule; a refused or failed call marked), the files it changed and its text. Text only,
// never markup: the model writes all of it. It draws and holds nothing else.
import type { ToView } from '../chat/view-messages';

type SubagentMessage = Extract<ToView, { type: 'subagent' }>;

/** The block of the task call `callId` in the turn's bubble `el`, made the first time. */
function block(el: HTMLElement, m: SubagentMessage): HTMLDetailsElement {
  const existing = Array.from(el.querySelectorAll<HTMLDetailsElement>('details.subagent')).find((d) => d.dataset.callId === m.callId);
  if (existing) return existing;
  const details = document.createElement('details');
  details.className = 'subagent running';
  details.dataset.callId = m.callId;
  details.open = true;
  const summary = document.createElement('summary');
  summary.textContent = `${m.agent}: working…`;
  const lines = document.createElement('div');
  lines.className = 'subagent-lines';
  details.append(summary, lines);
  // Under its task call's line when the page showed one, else above the reply.
  const call = Array.from(el.querySelectorAll<HTMLElement>('.tool-call')).find((c) => c.dataset.callId === m.callId);
  if (call) call.after(details);
  else el.querySelector('.body')!.before(details);
  return details;
}

/** A short account of a call's arguments: its path, command or URL, else nothing. */
function about(args: unknown): string {
  if (!args || typeof args !== 'object') return '';
  const a = args as Record<string, unknown>;
  const subject = [a.path, a.command, a.url, a.pattern].find((v) => typeof v === 'string');
  return typeof subject === 'string' ? ` ${subject}` : '';
}

/** Adds one notice of a subagent to the bubble `el`. */
export function showSubagent(el: HTMLElement, m: SubagentMessage): void {
  const details = block(el, m);
  const lines = details.querySelector<HTMLElement>('.subagent-lines')!;
  const summary = details.querySelector('summary')!;
  const line = (className: string, text: string) => {
    const div = document.createElement('div');
    div.className = className;
    div.textContent = text;
    lines.append(div);
    return div;
  };
  const callLine = (id: string) => Array.from(lines.querySelectorAll<HTMLElement>('.subagent-call')).find((c) => c.dataset.id === id);
  const e = m.event;
  switch (e.type) {
    case 'started':
      details.title = e.prompt;
      break;
    case 'toolCall': {
      const div = line('subagent-call', `${e.name}${about(e.arguments)}`);
      div.dataset.id = e.id;
      break;
    }
    case 'permission': {
      const div = callLine(e.id) ?? line('subagent-call', e.name);
      const decision = document.createElement('span');
      decision.className = 'decision';
      decision.textContent = ` — ${e.decision === 'allow' ? 'allowed' : 'refused'} (${e.by})`;
      div.append(decision);
      if (e.decision !== 'allow') div.classList.add('refused');
      break;
    }
    case 'toolResult':
      if (e.isError) callLine(e.id)?.classList.add('failed');
      break;
    case 'fileChanged':
      line('subagent-file', `changed ${e.path}`);
      break;
    case 'plan':
      line('subagent-plan', `plan: ${e.entries.map((p) => p.content).join('; ')}`);
      break;
    case 'text': {
      const last = lines.lastElementChild as HTMLElement | null;
      if (last?.classList.contains('subagent-text')) last.textContent += e.text;
      else line('subagent-text', e.text);
      break;
    }
    case 'usage':
      details.dataset.cost = e.cost === null || e.cost === undefined ? 'cost unknown' : `$${e.cost.toFixed(4)}`;
      break;
    case 'finished': {
      details.classList.remove('running');
      details.classList.add(e.status);
      const how = e.status === 'success' ? 'done' : e.status.replace('_', ' ');
      const cost = details.dataset.cost ? `, ${details.dataset.cost}` : '';
      summary.textContent = `${m.agent}: ${how}${cost}${e.error ? ` — ${e.error}` : ''}`;
      break;
    }
  }
}
