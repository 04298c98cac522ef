// The page journey's browser half: opens the address `genai serve` printed in headless
// Chromium (Debian's, through playwright-core from GENAI_JOURNEY_NODE_MODULES), types a
// question before choosing anything, waits for the reply, looks at the provider list of "New
// chat", and prints what the user saw as one JSON line. Run by serve_page.rs.
//
// With GENAI_JOURNEY_ROOT (a folder to choose) and GENAI_JOURNEY_OUTSIDE (one genai serve does
// not allow), it starts a `tools` chat from "New chat" instead: reads the folder field and what
// it offers, tries the outside folder first (the form says the serve's error), then the chosen
// one, reads the header, asks, allows the edit in the page's dialog, and reads the history.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [url, question] = process.argv.slice(2);
const modules = process.env.GENAI_JOURNEY_NODE_MODULES;
const require = createRequire(join(modules, 'noop.js'));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const seen = { problems: [] };
try {
  const page = await browser.newPage({ viewport: { width: 480, height: 760 } });
  page.on('pageerror', (e) => seen.problems.push(e.message));
  await page.goto(url);
  await page.waitForFunction(() => location.hash === '', null, { timeout: 10_000 });
  if (process.env.GENAI_JOURNEY_ROOT) {
    await chooseRoot(page, process.env.GENAI_JOURNEY_ROOT, process.env.GENAI_JOURNEY_OUTSIDE);
  } else {
    await askFirst(page);
  }
  if (process.env.GENAI_JOURNEY_SCREENSHOT) await page.screenshot({ path: process.env.GENAI_JOURNEY_SCREENSHOT });
} catch (e) {
  seen.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));

/** The text of `selector`, trimmed. */
async function text(page, selector) {
  return (await page.textContent(selector))?.trim();
}

/** A `tools` chat in a chosen folder: the outside one refused on the form, the chosen one shown. */
async function chooseRoot(page, root, outside) {
  await page.click('#new-chat');
  await page.waitForSelector('#root', { state: 'visible', timeout: 10_000 });
  await page.waitForFunction(() => document.querySelector('#root').value !== '', null, { timeout: 10_000 });
  seen.rootPrefilled = await page.inputValue('#root');
  seen.rootsOffered = await page.$$eval('#roots option', (os) => os.map((o) => o.value));
  seen.rootHint = await text(page, '#root-hint');
  await page.selectOption('#feature', 'tools');
  await page.fill('#root', outside);
  await page.click('#start-chat');
  await page.waitForSelector('#new-chat-error', { state: 'visible', timeout: 10_000 });
  seen.refused = await text(page, '#new-chat-error');
  seen.formOpenAfterRefusal = await page.isVisible('#new-chat-form');
  await page.fill('#root', root);
  await page.click('#start-chat');
  await page.waitForSelector('#conversation-root', { state: 'visible', timeout: 10_000 });
  seen.rootShown = await text(page, '#conversation-root');
  seen.description = await text(page, '#conversation-description');
  await page.fill('#prompt', question);
  await page.press('#prompt', 'Enter');
  // The model writes a file: the page asks first; the user allows it.
  await page.waitForSelector('#confirm-dialog[open]', { timeout: 60_000 });
  seen.asked = await text(page, '#confirm-text');
  await page.click('#confirm-choices button.allow');
  await page.waitForSelector('.message.assistant:not(.streaming)', { timeout: 60_000 });
  seen.reply = (await page.textContent('.message.assistant .body'))?.trim();
  await page.click('#show-history');
  await page.waitForSelector('#history-list li .root', { timeout: 10_000 });
  seen.historyRoots = await page.$$eval('#history-list li .root', (rs) => rs.map((r) => r.textContent));
}

/** The user types at once, without pressing "New chat" first; then looks at the providers. */
async function askFirst(page) {
  await page.fill('#prompt', question);
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.message.assistant', { timeout: 120_000 });
  await page.waitForFunction(
    () => !document.querySelector('.message.assistant.streaming'),
    null,
    { timeout: 120_000 },
  );
  seen.question = await page.textContent('.message.user');
  seen.reply = (await page.textContent('.message.assistant'))?.trim();
  seen.title = (await page.textContent('#conversation-title'))?.trim();
  seen.status = (await page.textContent('#status'))?.trim();
  await page.click('#new-chat');
  await page.waitForSelector('#provider option', { state: 'attached', timeout: 10_000 });
  seen.providers = await page.$$eval('#provider option', (os) => os.map((o) => o.value));
}
