// The page journey's browser half: opens the address `genai serve` printed in headless
// Chromium (Debian's, through playwright-core from GENAI_JOURNEY_NODE_MODULES), types a
// question before choosing anything, waits for the reply, looks at the provider list of "New
// chat", and prints what the user saw as one JSON line. Run by serve_page.rs.
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
  // The user types at once, without pressing "New chat" first.
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
  if (process.env.GENAI_JOURNEY_SCREENSHOT) await page.screenshot({ path: process.env.GENAI_JOURNEY_SCREENSHOT });
} catch (e) {
  seen.error = String(e);
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
