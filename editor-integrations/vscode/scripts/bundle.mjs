// Bundles the extension (dist/extension.js, Node, `vscode` left external) and the chat page's
// script (dist/webview.js, browser, markdown-it inside) with esbuild.
import { build } from 'esbuild';

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
