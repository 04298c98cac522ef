// The extension itself (extension.ts, chat-view.ts, settings.ts) activated in plain Node with a
// stand-in `vscode` module and the real daemon: settings reach the daemon, the view's page gets
// the components, and Ask About Selection runs a turn that the page is told about.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { installVscodeStub, type FakeWebview } from './support/vscode-stub';
import { daemonEnv, genaiBin, startFakeProvider, within, type FakeProvider } from './support/env';

const REPLY = 'A *selection* explained.';
let fast: FakeProvider;
let vscode: ReturnType<typeof installVscodeStub>;
let extension: { activate(ctx: unknown): Promise<void>; deactivate(): Promise<void> };
const memory = new Map<string, unknown>();

before(async () => {
  fast = await startFakeProvider({ reply: REPLY, chunks: 3, delayMs: 5 });
  const env = daemonEnv({ fast: fast.url });
  vscode = installVscodeStub({
    'genai.daemon.path': genaiBin,
    'genai.daemon.args': ['daemon'],
    'genai.daemon.env': { GENAI_CONFIG_DIR: env.GENAI_CONFIG_DIR, GENAI_DATA_DIR: env.GENAI_DATA_DIR, OPENAI_API_KEY: '', NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' },
  });
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
