// Fills the chat page template (media/chat.html) with the script and style addresses, the
// webview's CSP source and a nonce (fresh unless given). Used by the extension and by the page's browser test.
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export interface PageAddresses {
  /** The extension's folder, where media/ is. */
  extensionPath: string;
  scriptUri: string;
  styleUri: string;
  /** The webview's `cspSource` (who may serve images and styles). */
  cspSource: string;
  /** Where the page's script may connect (the web page's WebSocket); none in VS Code. */
  connectSrc?: string;
  /** The script's nonce; a fresh one when not given (genai serve's page gives `{{nonce}}`, which
   * it fills on every answer). */
  nonce?: string;
}

export function chatPageHtml(a: PageAddresses): string {
  const template = readFileSync(join(a.extensionPath, 'media', 'chat.html'), 'utf8');
  const values: Record<string, string> = {
    nonce: a.nonce ?? randomBytes(16).toString('base64url'),
    scriptUri: a.scriptUri,
    styleUri: a.styleUri,
    cspSource: a.cspSource,
    connectSrc: a.connectSrc ?? "'none'",
  };
  return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => values[name] ?? whole);
}
