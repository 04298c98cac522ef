// The chat page (media/chat.html + dist/webview.js) in headless Chromium, with a stand-in for
// acquireVsCodeApi that records what the page posts. Checks the new-chat form, Markdown chunks,
// escaped HTML, tool-call lines, collapsed reasoning, the details toggle, errors, the stop button,
// the confirmation dialog (the web page's) with an edit's diff, a turn's edits with Undo, and a
// subagent's block under its task call;
// saves screenshots under test-artifacts/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { chatPageHtml } from '../src/chat/page';
import { fileDiff } from '../src/chat/diff';
import type { FromView, ToView } from '../src/chat/view-messages';

const root = resolve(__dirname, '..', '..');
const artifacts = join(root, 'test-artifacts');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
let browser: Browser;
let page: Page;

before(async () => {
  assert.ok(existsSync(join(root, 'dist', 'webview.js')), 'build first: npm run build');
  mkdirSync(artifacts, { recursive: true });
  const html = chatPageHtml({
    extensionPath: root,
    scriptUri: pathToFileURL(join(root, 'dist', 'webview.js')).href,
    styleUri: pathToFileURL(join(root, 'media', 'chat.css')).href,
    cspSource: 'file:',
  });
  const file = join(artifacts, 'chat.html');
  writeFileSync(file, html);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  page = await browser.newPage({ viewport: { width: 420, height: 760 } });
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  await page.addInitScript(() => {
    const w = window as unknown as { posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.posted = [];
    w.acquireVsCodeApi = () => ({ postMessage: (m: unknown) => w.posted.push(m), getState: () => undefined, setState: () => {} });
  });
  await page.goto(pathToFileURL(file).href);
  await waitPosted((m) => m.type === 'ready');
  assert.deepEqual(problems, [], 'no script errors or CSP violations');
});
after(() => browser?.close());

/**
 * What the extension would post to the page; resolves once the page has handled it. A window
 * "message" event is dispatched in a later task than `postMessage`, so without this a check
 * right after `send` could read the page as it was before (after a click, Chromium often runs
 * the next DevTools command first). Listeners run in the order they were added, so the one added
 * here runs after the page's own handler for the same message.
 */
async function send(message: ToView): Promise<void> {
  await page.evaluate(
    ([m, deadlineMs]) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the page did not handle ${JSON.stringify(m)} within ${deadlineMs} ms`)), deadlineMs);
        const handled = () => {
          window.removeEventListener('message', handled);
          clearTimeout(timer);
          resolve();
        };
        window.addEventListener('message', handled);
        window.postMessage(m, '*');
      }),
    [message, 10_000] as const,
  );
}

/** Waits until the page has posted a message matching `pred` (deadline: the test timeout). */
async function waitPosted(pred: (m: FromView) => boolean): Promise<FromView> {
  const source = pred.toString();
  const handle = await page.waitForFunction(
    (src) => {
      const p = eval(`(${src})`) as (m: unknown) => boolean;
      return (window as unknown as { posted: unknown[] }).posted.find(p);
    },
    source,
    { timeout: 10_000 },
  );
  return (await handle.jsonValue()) as FromView;
}

test('the new-chat form offers the components and preselects the last choice', async () => {
  await send({
    type: 'components',
    choices: {
      features: [{ name: 'assistant', description: 'Chat with the model.' }, { name: 'reviewer', description: 'Reviews code.' }],
      serviceProviders: [
        { name: 'openai', kind: 'openai', defaultModel: 'gpt-4o-mini', formats: ['openai-chat'], key: 'found', isDefault: false },
        { name: 'fast', kind: 'openai', defaultModel: 'fast-model', formats: ['openai-chat'], key: 'notNeeded', isDefault: false },
      ],
      modelConfigurations: [{ name: 'cool', format: 'openai-chat', model: 'gpt-4o-mini' }],
      last: { feature: 'reviewer', serviceProvider: 'fast' },
    },
  });
  await page.click('#new-chat');
  assert.equal(await page.inputValue('#feature'), 'reviewer');
  assert.equal(await page.inputValue('#provider'), 'fast');
  assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => o.textContent)), ['default (fast-model)', 'cool (gpt-4o-mini)']);
  await page.selectOption('#model', 'cool');
  await page.click('#start-chat');
  const posted = await waitPosted((m) => m.type === 'newChat');
  assert.deepEqual(posted, { type: 'newChat', choice: { feature: 'reviewer', serviceProvider: 'fast', modelConfiguration: 'cool' } });
});

test('without a last choice the default is chosen, with its model; providers without a key say so', async () => {
  await send({
    type: 'components',
    choices: {
      features: [{ name: 'assistant', description: 'Chat with the model.' }],
      serviceProviders: [
        { name: 'local', kind: 'local', defaultModel: 'smollm2', formats: ['openai-chat'], key: 'notNeeded', isDefault: true },
        { name: 'ollama', kind: 'ollama', defaultModel: null, formats: ['ollama-chat'], key: 'notNeeded', isDefault: false },
        { name: 'anthropic', kind: 'anthropic', defaultModel: 'claude', formats: ['claude-messages'], key: 'missing', isDefault: false },
      ],
      modelConfigurations: [],
      default: { feature: 'assistant', serviceProvider: 'local', model: 'tiny' },
    },
  });
  // The form may still be open from the choice before (nothing answered it here).
  if (await page.isHidden('#new-chat-form')) await page.click('#new-chat');
  assert.deepEqual(await page.$$eval('#provider option', (os) => os.map((o) => o.textContent)), [
    'local (local) — default',
    'ollama (ollama)',
    'anthropic (anthropic) — needs a key',
  ]);
  assert.equal(await page.inputValue('#provider'), 'local');
  assert.deepEqual(await page.$$eval('#model option', (os) => os.map((o) => o.textContent)), ['default (smollm2)', 'tiny']);
  await page.click('#start-chat');
  const posted = await waitPosted((m) => m.type === 'newChat' && m.choice.serviceProvider === 'local');
  assert.deepEqual(posted, { type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'local', model: 'tiny' } });
});

test('the header takes the title the first reply gives the conversation', async () => {
  await send({ type: 'conversation', id: 'c0', title: 'New chat', description: 'assistant · local · tiny', messages: [] });
  assert.equal(await page.textContent('#conversation-title'), 'New chat');
  await send({ type: 'title', id: 'c0', title: 'What is a Vec?' });
  assert.equal(await page.textContent('#conversation-title'), 'What is a Vec?');
});

test('streamed chunks render as Markdown, HTML stays text, details toggle, stop sends Cancel', async () => {
  await send({ type: 'conversation', id: 'c1', title: 'Sorting in Rust', description: 'assistant · fast · fast-model', messages: [] });
  await page.fill('#prompt', 'How do I sort a Vec?');
  await page.press('#prompt', 'Enter');
  assert.deepEqual(await waitPosted((m) => m.type === 'send'), { type: 'send', text: 'How do I sort a Vec?' });
  await send({ type: 'userMessage', text: 'How do I sort a Vec?' });
  await send({ type: 'turnStarted', turnId: 't1' });
  assert.equal(await page.isVisible('#stop'), true, 'stop shows while a turn runs');
  const reply = ['Use **`sort`**', ' on a mutable vector:\n\n', '```rust\nv.sort();\n```\n\n', 'Not <script>alert(1)</script> HTML.'];
  for (const delta of reply) await send({ type: 'chunk', turnId: 't1', delta });
  await page.waitForSelector('.message.assistant pre code');
  assert.equal(await page.textContent('.message.assistant strong'), 'sort');
  assert.equal(await page.textContent('.message.assistant pre code'), 'v.sort();\n');
  assert.equal(await page.$$eval('#messages script', (s) => s.length), 0, 'no script element from the reply');
  assert.match((await page.textContent('.message.assistant .body')) ?? '', /Not <script>alert\(1\)<\/script> HTML\./);

  await page.click('#stop');
  await waitPosted((m) => m.type === 'cancel');

  await send({
    type: 'turnEnded',
    turnId: 't1',
    summary: reply.join(''),
    detailedResponse: ['provider: fast (openai)', 'model: fast-model', 'usage: 3 input + 5 output = 8 tokens'],
    isSuccess: true,
  });
  assert.equal(await page.isVisible('#stop'), false, 'stop hides when the turn ends');
  assert.equal(await page.isVisible('.message.assistant .details'), false);
  await page.click('.message.assistant .details-toggle');
  assert.equal(await page.isVisible('.message.assistant .details'), true);
  assert.deepEqual(await page.$$eval('.message.assistant .details li', (li) => li.map((x) => x.textContent)), [
    'provider: fast (openai)',
    'model: fast-model',
    'usage: 3 input + 5 output = 8 tokens',
  ]);
  assert.equal(await page.textContent('.message.assistant .details-toggle'), 'Hide details');
});

test('a tool call shows as a line in its turn, its name as text, and stays when the reply comes', async () => {
  await send({ type: 'userMessage', text: 'What is on today?' });
  await send({ type: 'turnStarted', turnId: 't3' });
  await send({ type: 'toolCall', turnId: 't3', index: 0, name: 'events.getEvents' });
  await send({ type: 'toolCall', turnId: 't3', index: 1, name: '<b>bold</b>_tool' });
  const bubble = page.locator('.message.assistant[data-turn-id="t3"]');
  await bubble.locator('.tool-call').nth(1).waitFor({ timeout: 10_000 });
  assert.deepEqual(await bubble.locator('.tool-call').allTextContents(), ['calling events.getEvents…', 'calling <b>bold</b>_tool…']);
  assert.equal(await bubble.locator('.tool-calls b').count(), 0, 'no element from the tool name');
  await send({ type: 'chunk', turnId: 't3', delta: 'Two events today.' });
  await send({ type: 'turnEnded', turnId: 't3', summary: 'Two events today.', detailedResponse: ['tool events.getEvents({}) → result: []'], isSuccess: true });
  assert.equal(await bubble.locator('.body').textContent(), 'Two events today.\n');
  assert.equal(await bubble.locator('.tool-call').count(), 2, 'the lines stay after the reply');
  assert.deepEqual(await bubble.evaluate((el) => Array.from(el.children, (c) => c.className)), ['tool-calls', 'body', 'link details-toggle', 'details']);
});

test('a plan shows as a checklist in its turn, as text, and the next plan replaces it', async () => {
  await send({ type: 'turnStarted', turnId: 'tp' });
  const step = (status: 'pending' | 'in_progress' | 'completed') => ({ content: 'Edit <b>src</b>', status, priority: 'high' as const });
  await send({ type: 'plan', turnId: 'tp', entries: [{ content: 'Read', status: 'completed' }, step('in_progress')] });
  const bubble = page.locator('.message.assistant[data-turn-id="tp"]');
  assert.deepEqual(await bubble.locator('ul.plan li').allTextContents(), ['☑ Read', '◐ Edit <b>src</b> (high)']);
  assert.equal(await bubble.locator('ul.plan b').count(), 0, 'no element from a step\'s text');
  await send({ type: 'plan', turnId: 'tp', entries: [{ content: 'Read', status: 'completed' }, step('completed')] });
  assert.deepEqual(await bubble.locator('ul.plan li').allTextContents(), ['☑ Read', '☑ Edit <b>src</b> (high)']);
  assert.equal(await bubble.locator('ul.plan').count(), 1);
  await send({ type: 'turnEnded', turnId: 'tp', summary: 'Done.', detailedResponse: [], isSuccess: true });
  assert.equal(await bubble.locator('ul.plan li.completed').count(), 2, 'the plan stays after the reply');
});

test('a subagent shows as a collapsible block under its task call: calls, decisions, a failed call, text and cost, as text', async () => {
  await send({ type: 'turnStarted', turnId: 'ts' });
  await send({ type: 'toolCall', turnId: 'ts', index: 0, name: 'workspace.task', id: 'task_1' });
  await send({ type: 'toolCall', turnId: 'ts', index: 1, name: 'workspace.list', id: 'other' });
  const sub = (event: Extract<ToView, { type: 'subagent' }>['event']) => send({ type: 'subagent', turnId: 'ts', callId: 'task_1', agent: 'tester', event });
  await sub({ type: 'started', prompt: 'Write the tests' });
  await sub({ type: 'toolCall', id: 's1', name: 'workspace.run_command', arguments: { command: 'cargo test' } });
  await sub({ type: 'permission', id: 's1', name: 'workspace.run_command', subject: 'cargo test', decision: 'allow', by: 'rule run_command(cargo test*)' });
  await sub({ type: 'toolResult', id: 's1', name: 'workspace.run_command', output: 'exit 101', isError: true });
  await sub({ type: 'fileChanged', path: '/p/src/a_tests.rs' });
  await sub({ type: 'text', text: 'Wrote <b>one</b> test\n' });
  const bubble = page.locator('.message.assistant[data-turn-id="ts"]');
  const block = bubble.locator('details.subagent');
  assert.equal(await block.locator('summary').textContent(), 'tester: working…');
  assert.equal(await block.getAttribute('open'), '', 'open while it works');
  assert.deepEqual(
    await bubble.locator('.tool-calls').evaluate((el) => Array.from(el.children, (c) => (c as HTMLElement).dataset.callId)),
    ['task_1', 'task_1', 'other'],
    'the block sits right under its call',
  );
  assert.deepEqual(await block.locator('.subagent-lines > div').allTextContents(), [
    'workspace.run_command cargo test — allowed (rule run_command(cargo test*))',
    'changed /p/src/a_tests.rs',
    'Wrote <b>one</b> test\n',
  ]);
  assert.equal(await block.locator('.subagent-call.failed').count(), 1, 'the failed call is marked');
  assert.equal(await block.locator('b').count(), 0, 'no element from the model\'s text');
  await sub({ type: 'usage', usage: { inputTokens: 10, outputTokens: 5 }, cost: 0.0012 });
  await sub({ type: 'finished', status: 'error', error: 'the model is down' });
  assert.equal(await block.locator('summary').textContent(), 'tester: error, $0.0012 — the model is down');
  assert.equal(await block.evaluate((el) => el.classList.contains('error')), true);
  await block.locator('summary').click();
  assert.equal(await block.locator('.subagent-lines').isVisible(), false, 'a click collapses it');
  await send({ type: 'turnEnded', turnId: 'ts', summary: 'Tests written.', detailedResponse: [], isSuccess: true });
  assert.equal(await bubble.locator('details.subagent').count(), 1, 'the block stays after the reply');
});

test('reasoning streams into a collapsed box above the reply, as text, and history shows it too', async () => {
  await send({ type: 'userMessage', text: '9.11 or 9.8?' });
  await send({ type: 'turnStarted', turnId: 't4' });
  await send({ type: 'reasoning', turnId: 't4', delta: 'Compare the tenths: ' });
  await send({ type: 'reasoning', turnId: 't4', delta: '<b>8</b> > 1.' });
  await send({ type: 'chunk', turnId: 't4', delta: '9.8 is larger.' });
  await send({ type: 'turnEnded', turnId: 't4', summary: '9.8 is larger.', detailedResponse: [], isSuccess: true });
  const bubble = page.locator('.message.assistant[data-turn-id="t4"]');
  assert.deepEqual(await bubble.evaluate((el) => Array.from(el.children, (c) => c.className)), ['reasoning', 'body']);
  assert.equal(await bubble.locator('details.reasoning').getAttribute('open'), null, 'collapsed');
  assert.equal(await bubble.locator('.reasoning-text').isVisible(), false);
  assert.equal(await bubble.locator('.reasoning-text').textContent(), 'Compare the tenths: <b>8</b> > 1.');
  assert.equal(await bubble.locator('.reasoning-text b').count(), 0, 'no element from the reasoning');
  assert.equal(await bubble.locator('.body').textContent(), '9.8 is larger.\n');
  await bubble.locator('details.reasoning summary').click();
  assert.equal(await bubble.locator('.reasoning-text').isVisible(), true);
});

test('a failed turn and a failed request show as errors in the chat', async () => {
  await send({ type: 'userMessage', text: 'Count to ten' });
  await send({ type: 'chunk', turnId: 't2', delta: 'One, two' });
  await send({
    type: 'turnEnded',
    turnId: 't2',
    summary: 'down: cannot connect to http://127.0.0.1:9/v1/chat/completions',
    detailedResponse: ['provider: down (openai)', 'error: down: cannot connect'],
    isSuccess: false,
    error: { kind: 'providerError', message: 'down: cannot connect to http://127.0.0.1:9/v1/chat/completions' },
  });
  const failed = page.locator('.message.assistant.error').last();
  assert.match((await failed.textContent()) ?? '', /One, two.*Error \(providerError\): down: cannot connect/s);
  await send({ type: 'error', message: 'ResumeConversation: no conversation id starts with `zz` (unknownConversation)' });
  assert.match((await page.locator('.message.error').last().textContent()) ?? '', /unknownConversation/);
  await send({ type: 'status', level: 'warning', text: 'the genai daemon was killed by SIGKILL; starting it again' });
  assert.equal(await page.isVisible('#status.warning'), true);
  await page.screenshot({ path: join(artifacts, 'chat.png'), fullPage: true });
});

test('history lists conversations and opening one posts its id', async () => {
  await page.click('#show-history');
  await waitPosted((m) => m.type === 'listConversations');
  await send({
    type: 'conversations',
    items: [{ id: '01ABC', title: 'Sorting in Rust', feature: 'assistant', provider: 'fast', model: 'fast-model', updatedAt: 1795428553582, messageCount: 4 }],
  });
  await page.click('#history-list li[data-id="01ABC"]');
  assert.deepEqual(await waitPosted((m) => m.type === 'openConversation'), { type: 'openConversation', id: '01ABC' });
  await send({
    type: 'conversation',
    id: '01ABC',
    title: 'Sorting in Rust',
    description: 'assistant · fast · fast-model',
    messages: [
      { role: 'user', text: 'How do I sort?' },
      { role: 'assistant', text: 'Use `sort`.', reasoning: 'A Vec has sort.' },
    ],
  });
  assert.equal(await page.isVisible('#history-panel'), false);
  assert.deepEqual(await page.$$eval('.message .body', (els) => els.map((e) => e.textContent?.trim())), ['How do I sort?', 'Use sort.']);
  assert.equal(await page.textContent('.message.assistant details.reasoning .reasoning-text'), 'A Vec has sort.');
});

test('a confirmation is a modal dialog: its choices as buttons, asks wait their turn, Escape rejects, a closed ask goes', async () => {
  const permission = [
    { label: 'Allow once', kind: 'allow' },
    { label: 'Always allow (workspace.edit_file(src/**))', kind: 'allow' },
    { label: 'Reject', kind: 'reject' },
    { label: 'Always reject in this conversation', kind: 'reject' },
  ] as const;
  const ask = (id: string, text: string, detail: string, choices: ReadonlyArray<{ label: string; kind: 'allow' | 'reject' }> = permission): ToView => ({
    type: 'confirm', id, turnId: 't5', text, detail, choices: [...choices],
  });
  const dialogText = () => page.textContent('#confirm-text');
  const buttons = () => page.$$eval('#confirm-choices button', (bs) => bs.map((b) => b.textContent));
  const answers = () => page.evaluate(() => (window as unknown as { posted: FromView[] }).posted.filter((m) => m.type === 'confirmAnswer'));
  assert.equal(await page.isVisible('#confirm-dialog'), false);

  await send(ask('k1', 'Edit src/<b>a</b>.rs', 'mode ask (workspace.edit_file)'));
  await send(ask('k2', 'Run `cargo test`', 'mode ask (workspace.run_command)'));
  await send(ask('k3', 'Write notes.md', 'mode ask (workspace.write_file)'));
  await send(ask('k4', 'Confirm the registration to E1?', 'Asked by the tool events.eventParticipation.', [
    { label: 'Confirm', kind: 'allow' },
    { label: 'Cancel', kind: 'reject' },
  ]));
  assert.equal(await page.isVisible('#confirm-dialog'), true);
  assert.equal(await page.$eval('#confirm-dialog', (d) => (d as HTMLDialogElement).open && d.matches(':modal')), true, 'shown modal');
  assert.equal(await dialogText(), 'Edit src/<b>a</b>.rs');
  assert.equal(await page.$$eval('#confirm-dialog b', (b) => b.length), 0, 'the text stays text');
  assert.equal(await page.textContent('#confirm-detail'), 'mode ask (workspace.edit_file)');
  assert.deepEqual(await buttons(), permission.map((c) => c.label));
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Reject', 'a stray Enter rejects');
  await page.screenshot({ path: join(artifacts, 'chat-confirm.png') });

  // "Always allow" answers with its index; the next ask takes the dialog.
  await page.click('#confirm-choices button:has-text("Always allow")');
  assert.deepEqual(await waitPosted((m) => m.type === 'confirmAnswer'), { type: 'confirmAnswer', id: 'k1', choice: 1 });
  await page.waitForFunction(() => document.querySelector('#confirm-text')?.textContent === 'Run `cargo test`');
  assert.equal(await page.textContent('#confirm-detail'), 'mode ask (workspace.run_command)');

  // An ask whose turn ended while it waited is dropped; Escape answers the shown one with no choice.
  await send({ type: 'confirmClosed', id: 'k3' });
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => document.querySelector('#confirm-text')?.textContent === 'Confirm the registration to E1?');
  assert.deepEqual(await buttons(), ['Confirm', 'Cancel']);
  assert.equal(await page.isVisible('#confirm-dialog'), true, 'Escape moved on, it did not close the dialog with asks left');

  // The shown ask's turn ends: the dialog closes, unanswered.
  await send({ type: 'confirmClosed', id: 'k4' });
  assert.equal(await page.isVisible('#confirm-dialog'), false);
  assert.deepEqual(await answers(), [
    { type: 'confirmAnswer', id: 'k1', choice: 1 },
    { type: 'confirmAnswer', id: 'k2' },
  ]);
});

test('an edit\'s ask shows its diff in the dialog, as text lines marked added and removed', async () => {
  const diff = fileDiff('/p/src/a.rs', 'fn a() {}\nfn b() {}\nfn c() {}\n', 'fn a() {}\nfn b() { <b>1</b> }\nfn c() {}\nfn d() {}\n');
  await send({
    type: 'confirm',
    id: 'd1',
    turnId: 't6',
    text: 'Edit src/a.rs',
    detail: 'mode ask (workspace.edit_file)',
    choices: [
      { label: 'Allow once', kind: 'allow' },
      { label: 'Always allow (workspace.edit_file(src/**))', kind: 'allow' },
      { label: 'Reject', kind: 'reject' },
      { label: 'Always reject in this conversation', kind: 'reject' },
    ],
    diff,
  });
  assert.equal(await page.isVisible('#confirm-dialog'), true);
  assert.equal(await page.isVisible('#confirm-diff'), true);
  assert.equal(await page.textContent('#confirm-diff .diff-header'), '/p/src/a.rs (changed, +2 −1)');
  assert.deepEqual(await page.$$eval('#confirm-diff .diff-lines > div', (rows) => rows.map((r) => [r.className, r.textContent])), [
    ['diff-hunk', '@@ -1,3 +1,4 @@'],
    ['diff-context', ' fn a() {}'],
    ['diff-remove', '-fn b() {}'],
    ['diff-add', '+fn b() { <b>1</b> }'],
    ['diff-context', ' fn c() {}'],
    ['diff-add', '+fn d() {}'],
  ]);
  assert.equal(await page.$$eval('#confirm-diff b', (b) => b.length), 0, 'the diff stays text');
  assert.equal(await page.$$eval('#confirm-choices button', (bs) => bs.length), 4, 'the four choices stay');
  await page.screenshot({ path: join(artifacts, 'chat-diff.png') });
  await page.click('#confirm-choices button:text-is("Allow once")');
  assert.deepEqual(await waitPosted((m) => m.type === 'confirmAnswer' && m.id === 'd1'), { type: 'confirmAnswer', id: 'd1', choice: 0 });
  assert.equal(await page.isVisible('#confirm-dialog'), false);

  // An ask without a diff shows none.
  await send({ type: 'confirm', id: 'd2', turnId: 't6', text: 'Run `ls`', detail: 'mode ask (workspace.run_command)', choices: [{ label: 'Allow once', kind: 'allow' }, { label: 'Reject', kind: 'reject' }] });
  assert.equal(await page.isVisible('#confirm-diff'), false);
  await send({ type: 'confirmClosed', id: 'd2' });
});

test('a turn that changed files shows its edits\' diffs and "Undo (N files)", which sends Undo and shows the result', async () => {
  await send({ type: 'userMessage', text: 'Fix both files' });
  await send({ type: 'turnStarted', turnId: 't7' });
  await send({
    type: 'turnEnded',
    turnId: 't7',
    summary: 'Fixed.',
    detailedResponse: [],
    isSuccess: true,
    changedFiles: ['src/a.rs', 'notes.md'],
    edits: [fileDiff('src/a.rs', 'x\n', 'y\n'), fileDiff('notes.md', null, 'new\n')],
  });
  const bubble = page.locator('.message.assistant[data-turn-id="t7"]');
  assert.deepEqual(await bubble.locator('details.edit summary').allTextContents(), ['Edited src/a.rs (+1 −1)', 'Created notes.md (+1 −0)']);
  assert.equal(await bubble.locator('details.edit .diff').first().isVisible(), false, 'collapsed');
  await bubble.locator('details.edit summary').first().click();
  assert.deepEqual(await bubble.locator('details.edit').first().locator('.diff-lines > div').allTextContents(), ['@@ -1,1 +1,1 @@', '-x', '+y']);
  const undo = bubble.locator('button.undo');
  assert.equal(await undo.textContent(), 'Undo (2 files)');
  await undo.click();
  assert.deepEqual(await waitPosted((m) => m.type === 'undo'), { type: 'undo', turnId: 't7' });
  assert.equal(await undo.isDisabled(), true, 'one click, one Undo');
  assert.equal(await bubble.locator('.undo-result').textContent(), 'Undoing…');

  // A failure: said in red, the button back to try again.
  await send({ type: 'undone', turnId: 't7', ok: false, text: 'Undo failed: src/a.rs changed since the turn (use force)' });
  assert.equal(await bubble.locator('.undo-result.error').textContent(), 'Undo failed: src/a.rs changed since the turn (use force)');
  assert.equal(await undo.isDisabled(), false);
  await undo.click();
  await send({ type: 'undone', turnId: 't7', ok: true, text: 'Undone: src/a.rs restored, notes.md removed' });
  assert.equal(await bubble.locator('.undo-result.ok').textContent(), 'Undone: src/a.rs restored, notes.md removed');
  assert.equal(await bubble.locator('button.undo').count(), 0, 'nothing left to undo');
  await page.screenshot({ path: join(artifacts, 'chat-undo.png'), fullPage: true });

  // A turn that changed nothing offers no Undo.
  await send({ type: 'turnStarted', turnId: 't8' });
  await send({ type: 'turnEnded', turnId: 't8', summary: 'Nothing to change.', detailedResponse: [], isSuccess: true });
  assert.equal(await page.locator('.message.assistant[data-turn-id="t8"] .changes').count(), 0);
});
