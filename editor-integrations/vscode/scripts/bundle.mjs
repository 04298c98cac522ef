// Bundles the extension (dist/extension.js, Node, `vscode` left external), the chat page's
// script (dist/webview.js, browser, markdown-it inside), and the same page for `genai serve`
// (dist/web/: index.html, web.js with its WebSocket host, chat.css) with esbuild. Run after
// `tsc -p .` (the page template is filled by out/src/chat/page.js, as in the extension).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

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
await build({
  ...common,
  entryPoints: ['src/web/main.ts'],
  outfile: 'dist/web/web.js',
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
});
const { chatPageHtml } = createRequire(import.meta.url)('../out/src/chat/page.js');
mkdirSync('dist/web', { recursive: true });
copyFileSync('media/chat.css', 'dist/web/chat.css');
writeFileSync(
  'dist/web/index.html',
  chatPageHtml({ extensionPath: '.', scriptUri: 'web.js', styleUri: 'chat.css', cspSource: "'self'", connectSrc: "'self' ws: wss:" }),
);
