// The web chat page `genai serve --web-root dist/web` serves (the VS Code chat view's own page
// and script, with a WebSocket host) in headless Chromium against a real `genai serve` and the
// fake provider, opened at the address genai serve prints: a new chat from the registered
// components (the default first, providers without a key last and marked), a streamed Markdown
// reply, the stop button, and the history; a message sent before choosing a chat, the header's
// title, and the page without a token or with a wrong one; a `tools` chat whose scripted model
// edits the files of the folder genai serve runs in, each permission ask a dialog on the page
// with the edit's diff, and Undo on a turn that changed files; a task call whose subagent's
// read is refused, shown as a block under the call; screenshots go to
// test-artifacts/web-chat.png, web-confirm.png, web-undo.png and web-subagent.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { daemonEnv, genaiBin, startFakeProvider, startScriptedProvider, within, type FakeProvider, type ScriptedProvider } from './support/env';

const root = resolve(__dirname, '..', '..');
const webRoot = join(root, 'dist', 'web');
const artifacts = join(root, 'test-artifacts');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
let fast: FakeProvider;
let slow: FakeProvider;
/** A model the test scripts: tool calls, then replies. */
let scripted: ScriptedProvider;
/** The folder genai serve runs in: the root of the workspace tools. */
let project: string;
let configDir: string;
let serve: ChildProcess;
/** What genai serve printed to open: `http://HOST:PORT/#token=TOKEN`. */
let pageAddress: string;
let token: string;
let browser: Browser;
let page: Page;

before(async () => {
  assert.ok(existsSync(join(webRoot, 'index.html')), 'build first: npm run build');
  mkdirSync(artifacts, { recursive: true });
  fast = await startFakeProvider({ reply: 'Use **sort**:\n\n```rust\nv.sort();\n```\n', chunks: 4, delayMs: 0 });
  slow = await startFakeProvider({ reply: 'word '.repeat(200), chunks: 200, delayMs: 50 });
  scripted = await startScriptedProvider({ reply: 'Done.' });
  const env = daemonEnv({ fast: fast.url, slow: slow.url, scripted: scripted.url });
  configDir = env.GENAI_CONFIG_DIR!;
  project = mkdtempSync(join(tmpdir(), 'genai-web-project-'));
  mkdirSync(join(project, 'src'));
  writeFileSync(join(project, 'src', 'a.txt'), 'alpha\n');
  writeFileSync(join(project, 'src', 'b.txt'), 'beta\n');
  // What `genai ask` without -m uses: the page offers it first.
  appendFileSync(join(env.GENAI_CONFIG_DIR!, 'config.toml'), '\n[defaults]\nmodel = "fast"\n');
  const printed = spawnSync(genaiBin, ['serve', '--print-token'], { env, encoding: 'utf8' });
  assert.equal(printed.status, 0, printed.stderr);
  token = printed.stdout.trim();
  serve = spawn(genaiBin, ['serve', '--listen', '127.0.0.1:0', '--web-root', webRoot], { env, cwd: project, stdio: ['ignore', 'ignore', 'pipe'] });
  pageAddress = await within(
    10_000,
    'genai serve to print the page address',
    new Promise<string>((ok, fail) => {
      serve.once('exit', (code) => fail(new Error(`genai serve exited with ${code}`)));
      createInterface({ input: serve.stderr! }).on('line', (line) => {
        process.stderr.write(`${line}\n`);
        const m = /(http:\/\/\S+\/#token=\S+)/.exec(line);
        if (m) ok(m[1]);
      });
    }),
  );
  assert.ok(pageAddress.endsWith(`#token=${token}`), pageAddress);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 480, height: 760 } });
});

after(async () => {
  await browser?.close();
  serve?.kill();
  fast?.stop();
  slow?.stop();
  scripted?.stop();
});

test('the web page chats, streams, stops and lists the history over genai serve', async () => {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('response', (r) => r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`));
  await page.goto(pageAddress);
  // The token leaves the address once read.
  await page.waitForFunction(() => location.hash === '');

  await page.click('#new-chat');
  await page.waitForSelector('#provider option[value="fast"]', { state: 'attached' });
  // The default first, then what needs no key (the other configured server, Ollama), the
  // vendors without a key last, each saying so.
  const providers = await page.$$eval('#provider option', (os) => os.map((o) => ({ value: (o as HTMLOptionElement).value, label: o.textContent ?? '' })));
  assert.equal(providers[0].value, 'fast', JSON.stringify(providers));
  assert.match(providers[0].label, /default/);
  assert.equal(await page.inputValue('#provider'), 'fast');
  const at = (name: string) => providers.findIndex((p) => p.value === name);
  for (const ready of ['slow', 'ollama']) {
    for (const keyless of ['openai', 'anthropic', 'gemini']) {
      assert.ok(at(ready) > 0 && at(ready) < at(keyless), `${ready} before ${keyless}: ${JSON.stringify(providers)}`);
    }
  }
  for (const keyless of ['openai', 'anthropic', 'gemini']) assert.match(providers[at(keyless)].label, /needs a key/);
  assert.doesNotMatch(providers[at('slow')].label, /needs a key/);
  await page.selectOption('#provider', 'fast');
  await page.click('#start-chat');
  await page.fill('#prompt', 'How do I sort a Vec?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.message.assistant pre code', { timeout: 20_000 });
  assert.equal(await page.textContent('.message.assistant strong'), 'sort');
  assert.equal(await page.textContent('.message.assistant pre code'), 'v.sort();\n');
  await page.waitForFunction(() => !document.querySelector('.message.assistant.streaming'));
  // The header takes the conversation's title once the reply came.
  await page.waitForFunction(() => document.querySelector('#conversation-title')?.textContent === 'How do I sort a Vec?');

  // A slow reply on another chat: it streams, then Stop ends it.
  await page.click('#new-chat');
  await page.selectOption('#provider', 'slow');
  await page.click('#start-chat');
  await page.fill('#prompt', 'Talk for a while');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => (document.querySelector('.message.assistant .body')?.textContent ?? '').includes('word word'), undefined, { timeout: 20_000 });
  assert.equal(await page.isVisible('#stop'), true, 'stop shows while a turn runs');
  await page.click('#stop');
  await page.waitForSelector('.message.assistant.error', { timeout: 20_000 });
  assert.match((await page.textContent('.message.assistant.error')) ?? '', /cancel/i);
  assert.equal(await page.isVisible('#stop'), false, 'stop hides when the turn ends');
  await page.screenshot({ path: join(artifacts, 'web-chat.png'), fullPage: true });

  // The history lists the conversation that has a turn (the stopped one kept nothing, so it is
  // not listed); it reopens with its messages.
  await page.click('#show-history');
  await page.waitForFunction(() => document.querySelectorAll('#history-list li').length >= 1);
  assert.equal(await page.locator('#history-list li', { hasText: 'Talk for a while' }).count(), 0);
  await page.locator('#history-list li', { hasText: 'How do I sort a Vec?' }).click();
  await page.waitForFunction(() => (document.querySelector('#messages')?.textContent ?? '').includes('v.sort();'));
  assert.deepEqual(problems, []);
});

/** A page of its own (no remembered choice or token), with what goes wrong on it. */
async function freshPage(): Promise<{ page: Page; problems: string[]; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 480, height: 760 } });
  const fresh = await context.newPage();
  const problems: string[] = [];
  fresh.on('pageerror', (err) => problems.push(err.message));
  return { page: fresh, problems, close: () => context.close() };
}

test('a message sent before choosing a chat starts one on the default and is answered', async () => {
  const { page: fresh, problems, close } = await freshPage();
  try {
    await fresh.goto(pageAddress);
    await fresh.waitForSelector('#provider option[value="fast"]', { state: 'attached' });
    assert.equal(await fresh.textContent('#conversation-title'), 'No conversation');
    await fresh.fill('#prompt', 'Sort   it\nplease');
    await fresh.press('#prompt', 'Enter');
    await fresh.waitForSelector('.message.assistant pre code', { timeout: 20_000 });
    assert.equal(await fresh.textContent('.message.user .body'), 'Sort   it\nplease');
    assert.equal(await fresh.textContent('.message.assistant pre code'), 'v.sort();\n');
    assert.match((await fresh.textContent('#conversation-description')) ?? '', /fast/);
    await fresh.waitForFunction(() => document.querySelector('#conversation-title')?.textContent === 'Sort it please');
    assert.equal(await fresh.isVisible('#new-chat-form'), false);
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test('without the token, or with a wrong one, the page says to open the address genai serve printed', async () => {
  const origin = new URL(pageAddress).origin;
  for (const [address, says] of [
    [`${origin}/`, /needs the token/],
    [`${origin}/#token=wrong-${token}`, /token is wrong/],
  ] as const) {
    const { page: fresh, problems, close } = await freshPage();
    try {
      await fresh.goto(address);
      await fresh.waitForSelector('#status:not([hidden])', { timeout: 10_000 });
      const status = (await fresh.textContent('#status')) ?? '';
      assert.match(status, says);
      assert.ok(status.includes(`${origin}/#token=`), status);
      assert.match(status, /genai serve printed/);
      assert.match(status, /genai serve --print-token/);
      // Trying anyway changes nothing, and no internal error name shows.
      await fresh.fill('#prompt', 'hello?');
      await fresh.press('#prompt', 'Enter');
      const text = (await fresh.textContent('body')) ?? '';
      assert.doesNotMatch(text, /daemonExited|\(\w+[A-Z]\w*\)/, text);
      assert.deepEqual(problems, []);
    } finally {
      await close();
    }
  }
});

test('a tools chat edits the folder genai serve runs in; each permission ask is the page\'s four-choice dialog', async () => {
  const { page: fresh, problems, close } = await freshPage();
  const read = (rel: string) => (existsSync(join(project, rel)) ? readFileSync(join(project, rel), 'utf8') : undefined);
  /** Sends `text`; the model calls `tool` with `args`, then replies `reply`. */
  const ask = async (text: string, tool: string, args: object, reply: string) => {
    await scripted.push({ reply: '', toolCalls: [[`workspace__${tool}`, JSON.stringify(args)]] });
    await scripted.push({ reply });
    await fresh.fill('#prompt', text);
    await fresh.press('#prompt', 'Enter');
  };
  /** Waits for the reply `reply` to end, and gives its bubble's details lines. */
  const ended = async (reply: string): Promise<string[]> => {
    const bubble = fresh.locator('.message.assistant:not(.streaming)', { hasText: reply });
    await bubble.waitFor({ timeout: 20_000 });
    return bubble.locator('.details li').allTextContents();
  };
  const dialog = fresh.locator('#confirm-dialog');
  try {
    await fresh.goto(pageAddress);
    await fresh.waitForFunction(() => location.hash === '');
    await fresh.click('#new-chat');
    await fresh.waitForSelector('#feature option[value="tools"]', { state: 'attached' });
    await fresh.waitForSelector('#provider option[value="scripted"]', { state: 'attached' });
    await fresh.selectOption('#feature', 'tools');
    await fresh.selectOption('#provider', 'scripted');
    await fresh.click('#start-chat');
    await fresh.waitForFunction(() => (document.querySelector('#conversation-description')?.textContent ?? '').startsWith('tools · scripted'));

    // 1. The model edits src/a.txt: the dialog asks with the four choices.
    await ask('Capitalize a.txt', 'edit_file', { path: 'src/a.txt', old_text: 'alpha', new_text: 'ALPHA' }, 'Edited a.');
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    assert.equal(await fresh.$eval('#confirm-dialog', (d) => d.matches(':modal')), true);
    assert.equal(await fresh.textContent('#confirm-text'), 'Edit src/a.txt');
    assert.equal(await fresh.textContent('#confirm-detail'), 'mode ask (workspace.edit_file)');
    assert.deepEqual(await fresh.$$eval('#confirm-choices button', (bs) => bs.map((b) => b.textContent)), [
      'Allow once',
      'Always allow (workspace.edit_file(src/**))',
      'Reject',
      'Always reject in this conversation',
    ]);
    assert.equal(read('src/a.txt'), 'alpha\n', 'nothing is edited before the answer');
    // The ask shows the edit's diff (permission.diff), as lines.
    assert.equal(await fresh.textContent('#confirm-diff .diff-header'), `${join(project, 'src', 'a.txt')} (changed, +1 −1)`);
    assert.deepEqual(await fresh.$$eval('#confirm-diff .diff-lines > div', (rows) => rows.map((r) => [r.className, r.textContent])), [
      ['diff-hunk', '@@ -1,1 +1,1 @@'],
      ['diff-remove', '-alpha'],
      ['diff-add', '+ALPHA'],
    ]);
    await fresh.screenshot({ path: join(artifacts, 'web-confirm.png') });
    await fresh.click('#confirm-choices button:has-text("Always allow")');
    const first = await ended('Edited a.');
    assert.equal(await dialog.isVisible(), false);
    assert.equal(read('src/a.txt'), 'ALPHA\n');
    assert.ok(first.some((l) => l.includes('allow_always')), first.join('\n'));
    assert.match(readFileSync(join(configDir, 'projects.toml'), 'utf8'), /"workspace\.edit_file\(src\/\*\*\)"/);
    // The turn changed a file: its diff and "Undo (1 file)" under the reply.
    const firstBubble = fresh.locator('.message.assistant', { hasText: 'Edited a.' });
    assert.deepEqual(await firstBubble.locator('details.edit summary').allTextContents(), ['Edited src/a.txt (+1 −1)']);
    assert.equal(await firstBubble.locator('button.undo').textContent(), 'Undo (1 file)');

    // 2. Another file of that folder: the saved rule allows it, no dialog (the turn could not end otherwise).
    await ask('Capitalize b.txt', 'edit_file', { path: 'src/b.txt', old_text: 'beta', new_text: 'BETA' }, 'Edited b.');
    await ended('Edited b.');
    assert.equal(read('src/b.txt'), 'BETA\n');

    // 3. A write at the root asks; "Reject" leaves the disk alone and the model is told.
    await ask('Write top.txt', 'write_file', { path: 'top.txt', content: 'top\n' }, 'Not written.');
    await dialog.waitFor({ state: 'visible', timeout: 20_000 });
    assert.equal(await fresh.textContent('#confirm-text'), 'Write top.txt');
    await fresh.click('#confirm-choices button:text-is("Reject")');
    const third = await ended('Not written.');
    assert.equal(read('top.txt'), undefined);
    assert.ok(third.some((l) => l.includes('reject_once')), third.join('\n'));
    const bodies = await scripted.requests();
    const toolMessages = bodies.at(-1).messages.filter((m: { role: string }) => m.role === 'tool');
    assert.match(String(toolMessages.at(-1)?.content), /^Refused: workspace\.write_file\(top\.txt\) was not allowed \(the user \(reject_once\)\)/);
    assert.equal(await fresh.locator('.message.assistant', { hasText: 'Not written.' }).locator('button.undo').count(), 0, 'a turn that changed nothing has no Undo');

    // 4. Undo on the turn that edited b.txt puts it back and says so.
    const second = fresh.locator('.message.assistant', { hasText: 'Edited b.' });
    await second.locator('button.undo').click();
    await second.locator('.undo-result.ok').waitFor({ timeout: 20_000 });
    assert.equal(await second.locator('.undo-result').textContent(), 'Undone: src/b.txt restored');
    assert.equal(read('src/b.txt'), 'beta\n');
    assert.equal(await second.locator('button.undo').count(), 0);
    await fresh.screenshot({ path: join(artifacts, 'web-undo.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});

test('a task call\'s subagent shows on the page as a block under the call, its refused read marked', async () => {
  const { page: fresh, problems, close } = await freshPage();
  mkdirSync(join(project, '.genai', 'agents'), { recursive: true });
  writeFileSync(join(project, '.genai', 'agents', 'finder.md'), '---\ndescription: Finds configuration\ntools: [read_file]\n---\nYou are the finder.\n');
  writeFileSync(join(project, '.env'), 'TOKEN=do-not-read\n');
  try {
    await fresh.goto(pageAddress);
    await fresh.waitForFunction(() => location.hash === '');
    await fresh.click('#new-chat');
    await fresh.waitForSelector('#provider option[value="scripted"]', { state: 'attached' });
    await fresh.selectOption('#feature', 'tools');
    await fresh.selectOption('#provider', 'scripted');
    await fresh.click('#start-chat');
    await fresh.waitForFunction(() => (document.querySelector('#conversation-description')?.textContent ?? '').startsWith('tools · scripted'));
    await scripted.push({ reply: '', toolCalls: [['workspace__task', JSON.stringify({ agent: 'finder', prompt: 'Read .env' })]] });
    await scripted.push({ reply: '', toolCalls: [['workspace__read_file', JSON.stringify({ path: '.env' })]] });
    await scripted.push({ reply: 'It is a secret file.' });
    await scripted.push({ reply: 'The finder could not read it.' });
    await fresh.fill('#prompt', 'Find the token');
    await fresh.press('#prompt', 'Enter');
    const bubble = fresh.locator('.message.assistant:not(.streaming)', { hasText: 'The finder could not read it.' });
    await bubble.waitFor({ timeout: 20_000 });
    const block = bubble.locator('details.subagent[data-call-id="call_1"]');
    assert.match((await block.locator('summary').textContent()) ?? '', /^finder: done/);
    assert.deepEqual(await block.locator('.subagent-call.refused').allTextContents(), ['workspace.read_file .env — refused (secret file: named by no rule)']);
    assert.equal(await block.locator('.subagent-text').textContent(), 'It is a secret file.');
    assert.equal(await fresh.locator('body').evaluate((b) => b.textContent?.includes('do-not-read')), false);
    await fresh.screenshot({ path: join(artifacts, 'web-subagent.png') });
    assert.deepEqual(problems, []);
  } finally {
    await close();
  }
});
