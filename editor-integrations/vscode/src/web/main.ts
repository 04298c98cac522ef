// The web chat page's script: the host (WebSocket client + chat controller) first, then the
// very chat page script the VS Code webview runs.
import './host';
import '../webview/chat';
