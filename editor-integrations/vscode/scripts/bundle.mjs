// Bundles the extension (dist/extension.js, Node, `vscode` left external), the chat page's
// script (dist/webview.js, browser, markdown-it inside), and the same page for `genai serve`
// (dist/web/: index.html, web.js with its WebSocket host, chat.css) with esbuild. Run after
// `tsc -p .` (the page template is filled by out/src/chat/page.js, as in the extension).
//
// `node scripts/bundle.mjs --page DIR` writes only the page, minified and without a source
// map, into DIR: exactly index.html, web.js and chat.css, the same bytes on every run. That is
// how the page genai's binary carries (assets/web, `npm run page`) is made; scripts/test.sh
// makes it again and compares. In both builds index.html keeps `{{nonce}}` for its script:
// genai serve puts a fresh nonce there on every answer.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const pageOnly = process.argv[2] === '--page';
if (pageOnly && !process.argv[3]) throw new Error('usage: node scripts/bundle.mjs [--page DIR]');

/** The web page into `dir`: its script, its style, and index.html naming both. */
async function webPage(dir, options) {
  await build({
    ...options,
    entryPoints: ['src/web/main.ts'],
    outfile: join(dir, 'web.js'),
    platform: 'browser',
    format: 'iife',
    target: 'es2020',
  });
  const { chatPageHtml } = createRequire(import.meta.url)('../out/src/chat/page.js');
  mkdirSync(dir, { recursive: true });
  copyFileSync('media/chat.css', join(dir, 'chat.css'));
  writeFileSync(
    join(dir, 'index.html'),
    chatPageHtml({
      extensionPath: '.',
      scriptUri: 'web.js',
      styleUri: 'chat.css',
      cspSource: "'self'",
      connectSrc: "'self' ws: wss:",
      nonce: '{{nonce}}',
    }),
  );
}

if (pageOnly) {
  await webPage(process.argv[3], { bundle: true, sourcemap: false, minify: true, legalComments: 'none', logLevel: 'warning' });
} else {
  const common = { bundle: true, sourcemap: true, minify: false, logLevel: 'info' };
  await build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    platform: 'node',
    format: 'cjs',
    target: 'node18',
    external: ['vscode'],
  });
  await build({
    ...common,
    entryPoints: ['src/webview/chat.ts'],
    outfile: 'dist/webview.js',
    platform: 'browser',
    format: 'iife',
    target: 'es2020',
  });
  await webPage('dist/web', common);
}
