// The web page's stand-in for VS Code: the chat page script (src/webview/chat.ts, unchanged)
// calls acquireVsCodeApi() and listens for window "message" events; here those reach the same
// ChatController the extension runs, over a GenaiClient on a WebSocketTransport to the
// `genai serve` that served the page. Imported before the chat script so the API exists when
// it starts. The token comes from the address (`#token=...`, kept out of requests; then from the
// tab's session storage on reload). Without one, or when genai serve refuses it, the page says to
// open the address `genai serve` printed, and nothing reaches the controller. A chat on the
// `tools` feature gets genai's workspace tools (mode "ask") in the folder chosen on the new-chat
// form among those genai serve allows (its `Initialize` says which; by default the folder it was
// started in), and the daemon's confirmations (a permission ask, a plugin's confirmation) show
// as the page's dialog.
import { ChatController, type Memory } from '../chat/controller';
import { GenaiClient } from '../client/genai-client';
import type { FromView, ToView } from '../chat/view-messages';
import { WebSocketTransport } from './ws-transport';
import type { RequestConfirmationResult } from '../protocol';

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

const TOKEN_KEY = 'genai.token';

function token(): string | undefined {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    history.replaceState(null, '', location.pathname);
    return fromHash;
  }
  return sessionStorage.getItem(TOKEN_KEY) || undefined;
}

/** What to do without a working token, in the user's words. */
function openPrintedAddress(problem: string): string {
  return (
    `${problem} Open the address genai serve printed when it started: ` +
    `${location.origin}/#token=… (\`genai serve --print-token\` prints the token).`
  );
}

const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`;
const given = token();
let connected = false;
const client = new GenaiClient(new WebSocketTransport(url, given ?? ''), {
  daemon: (e) => {
    // A refused connection is told below; only a connection that was up can close.
    if (e.state === 'exited' && connected) post({ type: 'status', level: 'error', text: e.exit.message });
  },
  confirm: (request): Promise<RequestConfirmationResult> => controller.confirm(request),
});
const controller: ChatController = new ChatController(client, post, memory, { workspace: () => ({ tools: true, mode: 'ask' }) });
/** Messages from the page wait here for the connection; without one they go nowhere. */
let refused = openPrintedAddress('This page needs the token of genai serve.');
const ready: Promise<boolean> = given
  ? client.start().then(
      () => (connected = true),
      () => {
        sessionStorage.removeItem(TOKEN_KEY);
        refused = openPrintedAddress('genai serve refused this page: its token is wrong, or genai serve is not running any more.');
        return false;
      },
    )
  : Promise.resolve(false);
const sayRefused = () => post({ type: 'status', level: 'error', text: refused });
void ready.then((up) => {
  if (!up) sayRefused();
});

(window as unknown as { acquireVsCodeApi: () => { postMessage(m: FromView): void } }).acquireVsCodeApi = () => ({
  // Without a connection, whatever the user does is answered with what to do instead.
  postMessage: (m: FromView) =>
    void ready.then((up) => {
      if (up) return controller.handle(m);
      if (m.type !== 'ready') sayRefused();
    }),
});
