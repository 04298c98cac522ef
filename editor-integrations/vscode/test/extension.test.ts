// The extension itself (extension.ts, chat-view.ts, settings.ts) activated in plain Node with a
// stand-in `vscode` module and the real daemon: settings reach the daemon, the view's page gets
// the components, Ask About Selection runs a turn that the page is told about, in a workspace
// folder the chat's model gets genai's workspace tools, whose permission asks are modal dialogs
// (with View diff for an edit) and whose writes go through the editor (a diff review with Accept
// or Reject, WorkspaceEdits, saves), the editor tools read VS Code's documents, and genai's
// commands run from the palette (Run Command…, on the selection, its code block applied after a
// diff review) and as `/NAME` in the chat.
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

test('activation registers the five commands and the chat view, and starts the daemon', () => {
  const manifest = JSON.parse(readFileSync(resolve(__dirname, '..', '..', 'package.json'), 'utf8'));
  for (const id of ['genai.newChat', 'genai.askAboutSelection', 'genai.runCommand', 'genai.openHistory', 'genai.restartDaemon']) {
    assert.ok(vscode.commands.has(id), id);
    assert.ok(manifest.contributes.commands.some((c: { command: string; category: string }) => c.command === id && c.category === 'genai'), id);
  }
  assert.deepEqual(
    manifest.contributes.menus['editor/context'].map((m: { command: string; when: string }) => [m.command, m.when]),
    [['genai.askAboutSelection', 'editorHasSelection'], ['genai.runCommand', 'editorHasSelection']],
  );
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
      'View diff',
    ]);
    assert.deepEqual(dialog.items.filter((i: { isCloseAffordance?: boolean }) => i.isCloseAffordance).map((i: { title: string }) => i.title), ['Reject'], 'Escape rejects');
    // The edit went through the editor (a WorkspaceEdit, then saved), not asked again after the dialog.
    assert.equal(readFileSync(join(project, 'src', 'a.txt'), 'utf8'), 'ALPHA\n');
    assert.equal(vscode.documents.get(join(project, 'src', 'a.txt'))?.saves, 1);
    assert.equal(vscode.executed.filter((c) => c.id === 'vscode.diff').length, 0, 'no diff review after the dialog allowed it');
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

    // genai.permissionMode "edit" (read at the next new chat): no dialog, but the write is
    // reviewed as a diff (vscode.diff of two virtual documents) with Accept / Reject.
    settings['genai.permissionMode'] = 'edit';
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    await posted(webview, 'the conversation in edit mode', (m) => m.type === 'conversation' && m.id !== opened.id);
    let proposed: string[] = [];
    vscode.answers.info = (text, _options, items) => {
      if (!text.startsWith('genai wants to')) return undefined;
      // What the diff shows, read through the virtual documents' provider while it is open.
      const [left, right] = vscode.executed.filter((c) => c.id === 'vscode.diff').at(-1)!.args;
      const provider = vscode.contentProviders.get(left.scheme)!;
      proposed = [provider.provideTextDocumentContent(left), provider.provideTextDocumentContent(right)];
      return text.includes('top.txt') ? items.find((i: string) => i === 'Accept') : items.find((i: string) => i === 'Reject');
    };
    await scripted.push({ reply: '', toolCalls: [['workspace__write_file', JSON.stringify({ path: 'top.txt', content: 'edit mode\n' })]] });
    await scripted.push({ reply: 'Written.' });
    webview.fromPage({ type: 'send', text: 'Write top.txt now' });
    const third = await posted(webview, 'the end of the edit-mode turn', (m) => m.type === 'turnEnded' && m.summary === 'Written.');
    assert.equal(third.isSuccess, true);
    assert.equal(dialogs().length, 2, 'mode edit does not ask for edits');
    assert.ok(vscode.shown.some((m) => m.level === 'info' && m.text === 'genai wants to create top.txt: see the diff.'), JSON.stringify(vscode.shown));
    assert.deepEqual(proposed, ['', 'edit mode\n']);
    assert.equal(readFileSync(join(project, 'top.txt'), 'utf8'), 'edit mode\n');
    assert.deepEqual(third.changedFiles, [join(project, 'top.txt')]);
    assert.deepEqual(third.edits?.map((e: { path: string; created: boolean }) => [e.path, e.created]), [['top.txt', true]]);

    // Reject in the review: nothing is written, the model is told.
    await scripted.push({ reply: '', toolCalls: [['workspace__edit_file', JSON.stringify({ path: 'src/a.txt', old_text: 'ALPHA', new_text: 'nope' })]] });
    await scripted.push({ reply: 'Rejected.' });
    webview.fromPage({ type: 'send', text: 'Change a.txt' });
    const fourth = await posted(webview, 'the end of the rejected turn', (m) => m.type === 'turnEnded' && m.summary === 'Rejected.');
    assert.deepEqual(proposed, ['ALPHA\n', 'nope\n']);
    assert.equal(readFileSync(join(project, 'src', 'a.txt'), 'utf8'), 'ALPHA\n');
    assert.equal(fourth.changedFiles, undefined);
    const bodies = await scripted.requests();
    const tool = bodies.at(-1).messages.filter((m: { role: string }) => m.role === 'tool').at(-1);
    assert.match(String(tool.content), /the user rejected the edit/);

    // With genai.workspaceTools off, a new chat is the plain assistant again (the setting is read per chat).
    settings['genai.workspaceTools'] = false;
    webview.posted.length = 0;
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    const plain = await posted(webview, 'the plain conversation', (m) => m.type === 'conversation');
    assert.match(plain.description, /^assistant · scripted · /);
  } finally {
    vscode.stub.workspace.workspaceFolders = undefined;
    vscode.answers.warning = undefined;
    vscode.answers.info = undefined;
    delete settings['genai.workspaceTools'];
    delete settings['genai.permissionMode'];
  }
});

test('the editor tools read VS Code\'s open documents, selection, diagnostics and unsaved text', async () => {
  const project = mkdtempSync(join(tmpdir(), 'genai-vscode-tools-'));
  mkdirSync(join(project, 'src'));
  const a = join(project, 'src', 'a.txt');
  writeFileSync(a, 'alpha\n');
  vscode.stub.workspace.workspaceFolders = [{ uri: vscode.uri(project), name: 'project', index: 0 }];
  const doc = vscode.open(a);
  doc.type('alpha, unsaved\n');
  vscode.stub.window.activeTextEditor = {
    selection: { isEmpty: false, start: { line: 0 }, end: { line: 0 } },
    document: { uri: vscode.uri(a), languageId: 'plaintext', getText: () => 'alpha' },
  };
  vscode.diagnostics.set(a, [
    { severity: 1, message: 'unknown word', source: 'spell', code: { value: 'S1' }, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } } },
  ]);
  try {
    const webview = vscode.openView('genai.chat');
    webview.fromPage({ type: 'ready' });
    await posted(webview, 'the components', (m) => m.type === 'components');
    webview.fromPage({ type: 'newChat', choice: { feature: 'tools', serviceProvider: 'scripted' } });
    await posted(webview, 'the conversation', (m) => m.type === 'conversation' && /^tools/.test(m.description));
    await scripted.push({
      reply: '',
      toolCalls: [
        ['editor__open_files', '{}'],
        ['editor__buffer_text', JSON.stringify({ path: 'src/a.txt' })],
        ['editor__diagnostics', JSON.stringify({ path: 'src/a.txt' })],
      ],
    });
    await scripted.push({ reply: 'Read them.' });
    const before = vscode.shown.length;
    webview.fromPage({ type: 'send', text: 'What is open?' });
    const end = await posted(webview, 'the end of the turn', (m) => m.type === 'turnEnded' && m.summary === 'Read them.');
    assert.equal(end.isSuccess, true);
    assert.equal(vscode.shown.length, before, 'read-only tools ask nothing');
    const bodies = await scripted.requests();
    const results = bodies.at(-1).messages.filter((m: { role: string }) => m.role === 'tool').map((m: { content: unknown }) => String(m.content));
    const open = JSON.parse(results[0]);
    assert.ok(open.documents.some((d: { path: string; dirty: boolean }) => d.path === a && d.dirty), results[0]);
    assert.deepEqual(open.activeEditor, { path: a, selection: { startLine: 1, endLine: 1, text: 'alpha' } });
    assert.equal(results[1], 'alpha, unsaved\n');
    assert.deepEqual(JSON.parse(results[2]).diagnostics, [
      { severity: 'warning', message: 'unknown word', source: 'spell', code: 'S1', startLine: 1, startColumn: 1, endLine: 1, endColumn: 6 },
    ]);
  } finally {
    vscode.stub.workspace.workspaceFolders = undefined;
    vscode.stub.window.activeTextEditor = undefined;
    vscode.diagnostics.clear();
    vscode.documents.clear();
  }
});

/** A workspace folder with genai commands; the first workspace folder until the test's end. */
function commandsProject(): string {
  const project = mkdtempSync(join(tmpdir(), 'genai-vscode-commands-'));
  mkdirSync(join(project, '.genai', 'commands'), { recursive: true });
  mkdirSync(join(project, 'src'));
  // No model: the daemon has no default, so it runs on the chat's last choice (fast).
  writeFileSync(
    join(project, '.genai', 'commands', 'greet.md'),
    '---\ndescription: Greet about the code\narguments: [{name: who, description: whom to greet}, {name: tone, default: warm}]\n---\nSay a {{tone}} hello to {{who}} about:\n\n{{input}}\n',
  );
  writeFileSync(join(project, '.genai', 'commands', 'shout.md'), '---\ndescription: Capitalize the code\nmodel: scripted\napply: replace\n---\nMake it loud:\n\n{{input}}\n');
  writeFileSync(join(project, '.genai', 'commands', 'translate.md'), '---\ndescription: Translate\narguments: [{name: lang, default: French}]\n---\nTranslate into {{lang}}:\n\n{{input}}\n');
  writeFileSync(join(project, 'src', 'a.ts'), 'const a = 1;\nconst b = 2;\n');
  vscode.stub.workspace.workspaceFolders = [{ uri: vscode.uri(project), name: 'project', index: 0 }];
  return project;
}

/** The text of the last user message the scripted model got. */
async function lastUserText(): Promise<string> {
  const bodies = await scripted.requests();
  const user = bodies.at(-1).messages.filter((m: { role: string }) => m.role === 'user').at(-1);
  return typeof user.content === 'string' ? user.content : user.content.map((p: { text?: string }) => p.text ?? '').join('');
}

test('Run Command… picks a command, asks its arguments, runs it on the selection in a new chat, and applies its code block after a diff review', async () => {
  const project = commandsProject();
  const file = join(project, 'src', 'a.ts');
  const doc = vscode.open(file);
  const { Position } = vscode.stub;
  vscode.stub.window.activeTextEditor = { selection: { isEmpty: false, start: new Position(0, 0), end: new Position(1, 0) }, document: doc };
  memory.set('genai.lastChoice', { feature: 'assistant', serviceProvider: 'fast' });
  try {
    const webview = vscode.openView('genai.chat');
    webview.fromPage({ type: 'ready' });
    await posted(webview, 'the components', (m) => m.type === 'components');

    // 1. greet: its argument without a default is asked, the other keeps its default; apply show.
    let picked: any[] = [];
    vscode.answers.quickPick = (items) => {
      picked = items;
      return items.find((i: { label: string }) => i.label === 'greet');
    };
    vscode.answers.inputBox = (options) => (options.title === 'greet: who' ? 'the team' : undefined);
    const boxes = vscode.inputBoxes.length;
    webview.posted.length = 0;
    await within(20_000, 'Run Command (greet)', vscode.commands.get('genai.runCommand')!());
    const greet = picked.find((i) => i.label === 'greet');
    assert.equal(greet.description, 'Greet about the code');
    assert.equal(greet.detail, 'project · .genai/commands/greet.md · arguments: who tone=warm');
    for (const name of ['explain', 'improve', 'document', 'test', 'fix']) {
      assert.ok(picked.some((i) => i.label === name && i.detail === 'builtin'), name);
    }
    assert.deepEqual(vscode.inputBoxes.slice(boxes).map((o) => [o.title, o.prompt]), [['greet: who', 'whom to greet']]);
    const opened = await posted(webview, 'the command\'s conversation', (m) => m.type === 'conversation');
    assert.equal(opened.title, '/greet');
    assert.match(opened.description, / · fast · fast-model$/, 'no default model: the chat\'s last choice');
    assert.deepEqual(webview.posted.filter((m) => m.type === 'userMessage'), [
      { type: 'userMessage', text: 'Say a warm hello to the team about:\n\nconst a = 1;' },
    ]);
    const end = await posted(webview, 'the end of the greet turn', (m) => m.type === 'turnEnded');
    assert.equal(end.isSuccess, true);
    assert.equal(end.summary, REPLY);
    assert.equal(doc.text, 'const a = 1;\nconst b = 2;\n', 'apply show leaves the editor alone');

    // 2. shout (its own model, apply replace): the reply's code block replaces the selection once accepted.
    await scripted.push({ reply: 'Louder:\n\n```ts\nCONST A = 1;\n```\n' });
    vscode.answers.quickPick = (items) => items.find((i: { label: string }) => i.label === 'shout');
    let proposed: string[] = [];
    vscode.answers.info = (text, _options, items) => {
      if (!text.startsWith('genai: replace the selection in src/a.ts')) return undefined;
      const [left, right] = vscode.executed.filter((c) => c.id === 'vscode.diff').at(-1)!.args;
      const provider = vscode.contentProviders.get(left.scheme)!;
      proposed = [provider.provideTextDocumentContent(left), provider.provideTextDocumentContent(right)];
      return items.find((i: string) => i === 'Accept');
    };
    webview.posted.length = 0;
    await within(20_000, 'Run Command (shout)', vscode.commands.get('genai.runCommand')!());
    assert.equal(await lastUserText(), 'Make it loud:\n\nconst a = 1;');
    const shouted = await posted(webview, 'the end of the shout turn', (m) => m.type === 'turnEnded');
    assert.equal(shouted.isSuccess, true);
    assert.match((await posted(webview, 'the shout conversation', (m) => m.type === 'conversation')).description, / · scripted · /);
    assert.deepEqual(proposed, ['const a = 1;\nconst b = 2;\n', 'CONST A = 1;\nconst b = 2;\n']);
    assert.equal(doc.text, 'CONST A = 1;\nconst b = 2;\n');
    assert.equal(doc.isDirty, true, 'the edit is left unsaved, as any edit');
    assert.equal(readFileSync(file, 'utf8'), 'const a = 1;\nconst b = 2;\n');

    // 3. Cancelling an argument's box runs nothing.
    vscode.answers.quickPick = (items) => items.find((i: { label: string }) => i.label === 'greet');
    vscode.answers.inputBox = () => undefined;
    webview.posted.length = 0;
    await vscode.commands.get('genai.runCommand')!();
    assert.equal(webview.posted.some((m) => m.type === 'conversation' || m.type === 'userMessage'), false, JSON.stringify(webview.posted));
    assert.deepEqual(vscode.shown.filter((m) => m.level === 'error'), []);
  } finally {
    vscode.stub.workspace.workspaceFolders = undefined;
    vscode.stub.window.activeTextEditor = undefined;
    vscode.answers.inputBox = undefined;
    vscode.answers.quickPick = undefined;
    vscode.answers.info = undefined;
    vscode.documents.clear();
  }
});

test('in the chat, /NAME runs a command in the open conversation; //text and an unknown /word are sent as text', async () => {
  commandsProject();
  try {
    const webview = vscode.openView('genai.chat');
    webview.fromPage({ type: 'ready' });
    await posted(webview, 'the components', (m) => m.type === 'components');
    webview.fromPage({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'scripted' } });
    const opened = await posted(webview, 'the new conversation', (m) => m.type === 'conversation');

    /** Sends `text` from the page; what the page was shown as the user message, and the turn's end. */
    const send = async (text: string) => {
      webview.posted.length = 0;
      webview.fromPage({ type: 'send', text });
      const end = await posted(webview, `the end of the turn of ${text}`, (m) => m.type === 'turnEnded');
      assert.equal(end.isSuccess, true, end.summary);
      assert.equal(webview.posted.some((m) => m.type === 'conversation' || m.type === 'error'), false, JSON.stringify(webview.posted));
      return webview.posted.filter((m) => m.type === 'userMessage').map((m) => m.text);
    };

    assert.deepEqual(await send('/translate lang=German Good night'), ['Translate into German:\n\nGood night']);
    assert.equal(await lastUserText(), 'Translate into German:\n\nGood night');
    // A word that is not a declared argument is text; the default applies.
    assert.deepEqual(await send('/translate x=1 Bonne nuit'), ['Translate into French:\n\nx=1 Bonne nuit']);
    assert.deepEqual(await send('//translate this'), ['/translate this']);
    assert.equal(await lastUserText(), '/translate this');
    assert.deepEqual(await send('/nope, not a command'), ['/nope, not a command']);
    assert.equal(await lastUserText(), '/nope, not a command');

    // All in the conversation opened first.
    const bodies = await scripted.requests();
    assert.deepEqual(
      bodies.at(-1).messages.filter((m: { role: string }) => m.role === 'user').map((m: { content: unknown }) => (typeof m.content === 'string' ? m.content : '')),
      ['Translate into German:\n\nGood night', 'Translate into French:\n\nx=1 Bonne nuit', '/translate this', '/nope, not a command'],
    );
    assert.ok(opened.id);
  } finally {
    vscode.stub.workspace.workspaceFolders = undefined;
  }
});
