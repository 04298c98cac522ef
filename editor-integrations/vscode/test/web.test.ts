// The web chat page `genai serve --web-root dist/web` serves (the VS Code chat view's own page
// and script, with a WebSocket host) in headless Chromium against a real `genai serve` and the
// fake provider: a new chat from the registered components, a streamed Markdown reply, the
// stop button, and the history; a screenshot goes to test-artifacts/web-chat.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium, type Browser, type Page } from 'playwright-core';
import { daemonEnv, genaiBin, startFakeProvider, within, type FakeProvider } from './support/env';

const root = resolve(__dirname, '..', '..');
const webRoot = join(root, 'dist', 'web');
const artifacts = join(root, 'test-artifacts');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
let fast: FakeProvider;
let slow: FakeProvider;
let serve: ChildProcess;
let address: string;
let token: string;
let browser: Browser;
let page: Page;

before(async () => {
  assert.ok(existsSync(join(webRoot, 'index.html')), 'build first: npm run build');
  mkdirSync(artifacts, { recursive: true });
  fast = await startFakeProvider({ reply: 'Use **sort**:\n\n```rust\nv.sort();\n```\n', chunks: 4, delayMs: 0 });
  slow = await startFakeProvider({ reply: 'word '.repeat(200), chunks: 200, delayMs: 50 });
  const env = daemonEnv({ fast: fast.url, slow: slow.url });
  const printed = spawnSync(genaiBin, ['serve', '--print-token'], { env, encoding: 'utf8' });
  assert.equal(printed.status, 0, printed.stderr);
  token = printed.stdout.trim();
  serve = spawn(genaiBin, ['serve', '--listen', '127.0.0.1:0', '--web-root', webRoot], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  address = await within(
    10_000,
    'genai serve to listen',
    new Promise<string>((ok, fail) => {
      serve.once('exit', (code) => fail(new Error(`genai serve exited with ${code}`)));
      createInterface({ input: serve.stdout! }).on('line', (line) => {
        const m = /^listening on ws:\/\/(\S+)/.exec(line);
        if (m) ok(m[1]);
      });
    }),
  );
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
});

test('the web page chats, streams, stops and lists the history over genai serve', async () => {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(err.message));
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('response', (r) => r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`));
  await page.goto(`http://${address}/#token=${token}`);
  // The token leaves the address once read.
  await page.waitForFunction(() => location.hash === '');

  await page.click('#new-chat');
  await page.waitForSelector('#provider option[value="fast"]', { state: 'attached' });
  await page.selectOption('#provider', 'fast');
  await page.click('#start-chat');
  await page.fill('#prompt', 'How do I sort a Vec?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.message.assistant pre code', { timeout: 20_000 });
  assert.equal(await page.textContent('.message.assistant strong'), 'sort');
  assert.equal(await page.textContent('.message.assistant pre code'), 'v.sort();\n');
  await page.waitForFunction(() => !document.querySelector('.message.assistant.streaming'));

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

  // The history lists both conversations; the first reopens with its messages.
  await page.click('#show-history');
  await page.waitForFunction(() => document.querySelectorAll('#history-list li').length >= 2);
  await page.locator('#history-list li', { hasText: 'How do I sort a Vec?' }).click();
  await page.waitForFunction(() => (document.querySelector('#messages')?.textContent ?? '').includes('v.sort();'));
  assert.deepEqual(problems, []);
});
