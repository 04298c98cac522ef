// The extension itself (extension.ts, chat-view.ts, settings.ts) activated in plain Node with a
// stand-in `vscode` module and the real daemon: settings reach the daemon, the view's page gets
// the components, Ask About Selection runs a turn that the page is told about, and in a workspace
// folder the chat's model gets genai's workspace tools, whose permission asks are modal dialogs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installVscodeStub, type FakeWebview } from './support/vscode-stub';
import { daemonEnv, genaiBin, startFakeProvider, startScriptedProvider, within, type FakeProvider, type ScriptedProvider } from './support/env';

const REPLY = 'A *selection* explained.';
let fast: FakeProvider;
let scripted: ScriptedProvider;
let vscode: ReturnType<typeof installVscodeStub>;
let extension: { activate(ctx: unknown): Promise<void>; deactivate(): Promise<void> };
const memory = new Map<string, unknown>();
/** The settings the stub answers with; a test may change them. */
let settings: Record<string, unknown>;

before(async () => {
  fast = await startFakeProvider({ reply: REPLY, chunks: 3, delayMs: 5 });
  scripted = await startScriptedProvider({ reply: 'Done.' });
  const env = daemonEnv({ fast: fast.url, scripted: scripted.url });
  settings = {
    'genai.daemon.path': genaiBin,
    'genai.daemon.args': ['daemon'],
    'genai.daemon.env': { GENAI_CONFIG_DIR: env.GENAI_CONFIG_DIR, GENAI_DATA_DIR: env.GENAI_DATA_DIR, OPENAI_API_KEY: '', NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
  };
  vscode = installVscodeStub(settings);
  memory.set('genai.lastChoice', { feature: 'assistant', serviceProvider: 'fast' });
  extension = require('../src/extension');
  await within(15_000, 'activation', extension.activate({
    subscriptions: [],
    extensionUri: { fsPath: resolve(__dirname, '..', '..'), toString: () => '' },
    globalState: { get: (k: string) => memory.get(k), update: async (k: string, v: unknown) => void memory.set(k, v) },
  }));
});
after(async () => {
  await extension?.deactivate();
  fast?.stop();
  scripted?.stop();
});

/** Waits until the page has been posted a message matching `pred`. */
async function posted(webview: FakeWebview, what: string, pred: (m: any) => boolean): Promise<any> {
  return within(15_000, what, new Promise((resolve) => {
    const look = () => {
      const found = webview.posted.find(pred);
      if (found) resolve(found);
      else setTimeout(look, 20);
    };
    look();
  }));
}

test('activation registers the four commands and the chat view, and starts the daemon', () => {
  for (const id of ['genai.newChat', 'genai.askAboutSelection', 'genai.openHistory', 'genai.restartDaemon']) {
    assert.ok(vscode.commands.has(id), id);
  }
  assert.ok(vscode.views.has('genai.chat'));
  assert.deepEqual(vscode.shown.filter((s) => s.level === 'error'), []);
});

test('the chat view gets its page, the components with the remembered choice, and a turn from Ask About Selection', async () => {
  const webview = vscode.openView('genai.chat');
  assert.match(webview.html, /<script nonce="[\w-]+" src="vscode-resource:.*dist\/webview\.js">/);
  assert.doesNotMatch(webview.html, /\{\{\w+\}\}/, 'every placeholder is filled');
  webview.fromPage({ type: 'ready' });
  const components = await posted(webview, 'the components', (m) => m.type === 'components');
  assert.deepEqual(components.choices.last, { feature: 'assistant', serviceProvider: 'fast' });
  assert.ok(components.choices.serviceProviders.some((p: { name: string }) => p.name === 'fast'));

  vscode.stub.window.activeTextEditor = {
    selection: { isEmpty: false, start: { line: 9 }, end: { line: 11 } },
    document: { uri: { fsPath: '/home/me/workspace/src/main.rs' }, languageId: 'rust', getText: () => 'fn main() {}' },
  };
  vscode.answers.inputBox = 'Why is this empty?';
  await vscode.commands.get('genai.askAboutSelection')!();
  const user = await posted(webview, 'the user message', (m) => m.type === 'userMessage');
  assert.equal(user.text, 'Why is this empty?\n\nFrom `src/main.rs, lines 10-12` (rust):\n\n```rust\nfn main() {}\n```\n');
  const end = await posted(webview, 'the end of the turn', (m) => m.type === 'turnEnded');
  assert.equal(end.isSuccess, true);
  assert.equal(end.summary, REPLY);
  assert.equal(webview.posted.filter((m) => m.type === 'chunk').map((m) => m.delta).join(''), REPLY);
});

test('Open History reopens a stored conversation in the view', async () => {
  const webview = vscode.openView('genai.chat');
  webview.fromPage({ type: 'ready' });
  vscode.answers.quickPick = (items) => items.find((i: { label: string }) => i.label.startsWith('Why is this empty?'));
  await vscode.commands.get('genai.openHistory')!();
  const opened = await posted(webview, 'the reopened conversation', (m) => m.type === 'conversation');
  assert.deepEqual(opened.messages.map((m: { role: string }) => m.role), ['user', 'assistant']);
  assert.equal(opened.messages[1].text, REPLY);
});

test('in a workspace folder the chat edits files under the permission mode; each ask is a modal dialog', async () => {
  const project = mkdtempSync(join(tmpdir(), 'genai-vscode-folder-'));
  mkdirSync(join(project, 'src'));
  writeFileSync(join(project, 'src', 'a.txt'), 'alpha\n');
  vscode.stub.workspace.workspaceFolders = [{ uri: vscode.uri(project), name: 'project', index: 0 }];
  const dialogs = () => vscode.shown.filter((m) => m.options?.modal);
  try {
    // genai.workspaceTools and genai.permissionMode at their defaults (on, "ask").
    const webview = vscode.openView('genai.chat');
    webview.fromPage({ type: 'ready' });
    await posted(webview, 'the components', (m) => m.type === 'components');
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    const opened = await posted(webview, 'the new conversation', (m) => m.type === 'conversation');
    assert.match(opened.description, /^tools · scripted · /, 'the assistant runs on tools, with the workspace');

    // The model edits a file: the dialog asks, "Always allow (RULE)" lets it.
    await scripted.push({ reply: '', toolCalls: [['workspace__edit_file', JSON.stringify({ path: 'src/a.txt', old_text: 'alpha', new_text: 'ALPHA' })]] });
    await scripted.push({ reply: 'Edited.' });
    vscode.answers.warning = (_text, _options, items) => items.find((i: { title: string }) => i.title.startsWith('Always allow'));
    webview.fromPage({ type: 'send', text: 'Capitalize a.txt' });
    const first = await posted(webview, 'the end of the edit turn', (m) => m.type === 'turnEnded' && m.summary === 'Edited.');
    assert.equal(first.isSuccess, true);
    assert.equal(dialogs().length, 1, JSON.stringify(vscode.shown));
    const dialog = dialogs()[0];
    assert.equal(dialog.level, 'warning');
    assert.equal(dialog.text, 'Edit src/a.txt');
    assert.equal(dialog.options.detail, 'mode ask (workspace.edit_file)');
    assert.deepEqual(dialog.items.map((i: { title: string }) => i.title), [
      'Allow once',
      'Always allow (workspace.edit_file(src/**))',
      'Reject',
      'Always reject in this conversation',
    ]);
    assert.deepEqual(dialog.items.filter((i: { isCloseAffordance?: boolean }) => i.isCloseAffordance).map((i: { title: string }) => i.title), ['Reject'], 'Escape rejects');
    assert.equal(readFileSync(join(project, 'src', 'a.txt'), 'utf8'), 'ALPHA\n');
    assert.ok(first.detailedResponse.some((l: string) => l.includes('allow_always')), first.detailedResponse.join('\n'));

    // A write at the root asks again; dismissing the dialog (Escape) rejects it.
    await scripted.push({ reply: '', toolCalls: [['workspace__write_file', JSON.stringify({ path: 'top.txt', content: 'top\n' })]] });
    await scripted.push({ reply: 'Not written.' });
    vscode.answers.warning = () => undefined;
    webview.fromPage({ type: 'send', text: 'Write top.txt' });
    const second = await posted(webview, 'the end of the write turn', (m) => m.type === 'turnEnded' && m.summary === 'Not written.');
    assert.equal(dialogs().length, 2);
    assert.equal(dialogs()[1].text, 'Write top.txt');
    assert.equal(existsSync(join(project, 'top.txt')), false, 'a dismissed ask writes nothing');
    assert.ok(second.detailedResponse.some((l: string) => l.includes('reject_once')), second.detailedResponse.join('\n'));

    // genai.permissionMode "edit" (read at the next new chat): a write goes ahead without a dialog.
    settings['genai.permissionMode'] = 'edit';
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    await posted(webview, 'the conversation in edit mode', (m) => m.type === 'conversation' && m.id !== opened.id);
    await scripted.push({ reply: '', toolCalls: [['workspace__write_file', JSON.stringify({ path: 'top.txt', content: 'edit mode\n' })]] });
    await scripted.push({ reply: 'Written.' });
    webview.fromPage({ type: 'send', text: 'Write top.txt now' });
    const third = await posted(webview, 'the end of the edit-mode turn', (m) => m.type === 'turnEnded' && m.summary === 'Written.');
    assert.equal(third.isSuccess, true);
    assert.equal(dialogs().length, 2, 'mode edit does not ask for edits');
    assert.equal(readFileSync(join(project, 'top.txt'), 'utf8'), 'edit mode\n');

    // With genai.workspaceTools off, a new chat is the plain assistant again (the setting is read per chat).
    settings['genai.workspaceTools'] = false;
    webview.posted.length = 0;
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    const plain = await posted(webview, 'the plain conversation', (m) => m.type === 'conversation');
    assert.match(plain.description, /^assistant · scripted · /);
  } finally {
    vscode.stub.workspace.workspaceFolders = undefined;
    vscode.answers.warning = undefined;
    delete settings['genai.workspaceTools'];
    delete settings['genai.permissionMode'];
  }
});
