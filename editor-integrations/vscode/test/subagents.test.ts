// A subagent seen by the extension: the real `genai daemon` on a scripted model whose reply hands
// a task to the project's `finder` subagent, which reads two files at once, one of them `.env`
// (refused by the policy). The chat controller posts each `OnSubagentEvent` to the page as a
// `subagent` message under the task call, live and in order; the chat page (headless Chromium)
// draws them as a collapsible block under the call's line, the refused call marked with its rule;
// a screenshot goes to test-artifacts/subagent.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import { GenaiClient } from '../src/client/genai-client';
import { DaemonProcess } from '../src/client/daemon';
import { ChatController } from '../src/chat/controller';
import { chatPageHtml } from '../src/chat/page';
import type { ToView } from '../src/chat/view-messages';
import { daemonEnv, genaiBin, startScriptedProvider, within, type ScriptedProvider } from './support/env';

const FINDER = '---\ndescription: Finds configuration\ntools: [read_file, list]\n---\nYou are the finder.\n';
let scripted: ScriptedProvider;
let client: GenaiClient<DaemonProcess>;
let project: string;

before(async () => {
  scripted = await startScriptedProvider({ reply: 'Done.' });
  project = mkdtempSync(join(tmpdir(), 'genai-vscode-subagent-'));
  mkdirSync(join(project, '.genai', 'agents'), { recursive: true });
  writeFileSync(join(project, '.genai', 'agents', 'finder.md'), FINDER);
  writeFileSync(join(project, 'config.txt'), 'port = 8080\n');
  writeFileSync(join(project, '.env'), 'TOKEN=do-not-read\n');
  client = new GenaiClient(new DaemonProcess({ command: genaiBin, env: daemonEnv({ scripted: scripted.url }), restart: false }), {});
  await within(10_000, 'the daemon to start', client.start());
});
after(async () => {
  await client?.dispose();
  scripted?.stop();
});

type Shown = Extract<ToView, { type: 'subagent' }>;

test('a subagent\'s calls reach the page nested under its task call, in order, and show as a block under the call', async () => {
  const posted: ToView[] = [];
  const memory = new Map<string, unknown>();
  const controller = new ChatController(
    client,
    (m) => posted.push(m),
    { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) },
    { workspace: () => ({ cwd: project, tools: true, mode: 'ask', assistantToo: true }) },
  );
  await controller.newChat({ feature: 'tools', serviceProvider: 'scripted' });
  await scripted.push({ reply: '', toolCalls: [['workspace__task', JSON.stringify({ agent: 'finder', prompt: 'Find the port' })]] });
  await scripted.push({
    reply: '',
    toolCalls: [
      ['workspace__read_file', JSON.stringify({ path: 'config.txt' })],
      ['workspace__read_file', JSON.stringify({ path: '.env' })],
    ],
  });
  await scripted.push({ reply: 'The port is 8080.' });
  await scripted.push({ reply: 'The finder says 8080.' });
  await within(30_000, 'the turn with a task call', controller.send('Which port?'));

  const end = posted.find((m) => m.type === 'turnEnded');
  assert.ok(end?.type === 'turnEnded' && end.isSuccess, JSON.stringify(posted));
  assert.equal(end.summary, 'The finder says 8080.');
  const shown = posted.filter((m): m is Shown => m.type === 'subagent');
  assert.ok(shown.length > 0, JSON.stringify(posted));
  // Every notice is the turn's, under the parent's task call (the scripted ids start at call_1).
  assert.ok(shown.every((m) => m.turnId === end.turnId && m.callId === 'call_1' && m.agent === 'finder'), JSON.stringify(shown));
  const types = shown.map((m) => m.event.type);
  assert.equal(types[0], 'started');
  assert.deepEqual(types.slice(-2), ['usage', 'finished'], JSON.stringify(types));
  assert.ok(posted.indexOf(shown.at(-1)!) < posted.indexOf(end), 'every notice before the turn ends');
  const first = shown[0].event;
  assert.ok(first.type === 'started' && first.prompt === 'Find the port');
  const decisions = new Map(
    shown.flatMap((m) => (m.event.type === 'permission' ? [[m.event.subject, m.event]] : [])),
  );
  assert.equal(decisions.get('config.txt')?.decision, 'allow');
  assert.equal(decisions.get('.env')?.decision, 'deny');
  assert.match(decisions.get('.env')!.by, /secret/);
  // A call's line comes before its decision and its result.
  for (const id of ['call_1', 'call_2']) {
    const at = (type: string) => shown.findIndex((m) => m.event.type === type && 'id' in m.event && m.event.id === id);
    assert.ok(at('toolCall') >= 0 && at('toolCall') < at('permission') && at('permission') < at('toolResult'), `${id}: ${types}`);
  }
  const text = shown.filter((m) => m.event.type === 'text').map((m) => (m.event.type === 'text' ? m.event.text : '')).join('');
  assert.equal(text, 'The port is 8080.');
  const finished = shown.at(-1)!.event;
  assert.ok(finished.type === 'finished' && finished.status === 'success');
  assert.ok(!JSON.stringify(posted).includes('do-not-read'), 'the secret reached nothing');

  // The same messages, drawn by the chat page.
  const root = resolve(__dirname, '..', '..');
  const artifacts = join(root, 'test-artifacts');
  assert.ok(existsSync(join(root, 'dist', 'webview.js')), 'build first: npm run build');
  mkdirSync(artifacts, { recursive: true });
  const file = join(artifacts, 'subagent.html');
  writeFileSync(
    file,
    chatPageHtml({
      extensionPath: root,
      scriptUri: pathToFileURL(join(root, 'dist', 'webview.js')).href,
      styleUri: pathToFileURL(join(root, 'media', 'chat.css')).href,
      cspSource: 'file:',
    }),
  );
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage({ viewport: { width: 420, height: 600 } });
    await page.addInitScript(() => {
      (window as unknown as { acquireVsCodeApi: () => unknown }).acquireVsCodeApi = () => ({ postMessage: () => {}, getState: () => undefined, setState: () => {} });
    });
    await page.goto(pathToFileURL(file).href);
    const turnMessages = posted.filter((m) => 'turnId' in m && m.turnId === end.turnId);
    await page.evaluate((ms) => ms.forEach((m) => window.postMessage(m, '*')), turnMessages);
    const bubble = page.locator(`.message.assistant[data-turn-id="${end.turnId}"]`);
    const block = bubble.locator('details.subagent[data-call-id="call_1"]');
    await block.locator('summary').filter({ hasText: 'finder: done' }).waitFor({ timeout: 10_000 });
    const callLine = bubble.locator('.tool-call[data-call-id="call_1"]');
    if (await callLine.count()) {
      assert.equal(await callLine.evaluate((el) => (el.nextElementSibling as HTMLElement | null)?.dataset.callId), 'call_1', 'the block sits under its call');
    }
    // The two calls ran at once: their lines are in the order they started.
    assert.deepEqual((await block.locator('.subagent-call').allTextContents()).sort(), [
      `workspace.read_file .env — refused (${decisions.get('.env')!.by})`,
      `workspace.read_file config.txt — allowed (${decisions.get('config.txt')!.by})`,
    ]);
    assert.equal(await block.locator('.subagent-call.refused').count(), 1);
    assert.equal(await block.locator('.subagent-text').textContent(), 'The port is 8080.');
    await block.locator('summary').click();
    assert.equal(await block.getAttribute('open'), null, 'a click collapses it');
    await block.locator('summary').click();
    await page.screenshot({ path: join(artifacts, 'subagent.png') });
  } finally {
    await browser.close();
  }
});
