// The web page's stand-in for VS Code: the chat page script (src/webview/chat.ts, unchanged)
// calls acquireVsCodeApi() and listens for window "message" events; here those reach the same
// ChatController the extension runs, over a GenaiClient on a WebSocketTransport to the
// `genai serve` that served the page. Imported before the chat script so the API exists when
// it starts. The token comes from the address (`#token=...`, kept out of requests) or a prompt.
import { ChatController, type Memory } from '../chat/controller';
import { GenaiClient } from '../client/genai-client';
import type { FromView, ToView } from '../chat/view-messages';
import { WebSocketTransport } from './ws-transport';

const post = (message: ToView) => window.dispatchEvent(new MessageEvent('message', { data: message }));

const memory: Memory = {
  get<T>(key: string): T | undefined {
    const v = localStorage.getItem(key);
    return v === null ? undefined : (JSON.parse(v) as T);
  },
  async update(key: string, value: unknown): Promise<void> {
    localStorage.setItem(key, JSON.stringify(value));
  },
};

function token(): string {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem('genai.token', fromHash);
    history.replaceState(null, '', location.pathname);
    return fromHash;
  }
  return sessionStorage.getItem('genai.token') ?? window.prompt('The genai serve token (genai serve --print-token):') ?? '';
}

const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
const client = new GenaiClient(new WebSocketTransport(url, token()), {
  daemon: (e) => {
    if (e.state === 'exited') post({ type: 'status', level: 'error', text: e.exit.message });
  },
});
const controller = new ChatController(client, post, memory);
/** Messages from the page before the connection is up wait here. */
const ready = client.start().catch((err: Error) => post({ type: 'error', message: err.message }));

(window as unknown as { acquireVsCodeApi: () => { postMessage(m: FromView): void } }).acquireVsCodeApi = () => ({
  postMessage: (m: FromView) => void ready.then(() => controller.handle(m)),
});
