// The chat view in VS Code: a webview view that shows media/chat.html and hands its messages to
// the ChatController (and the controller's messages to it).
import * as vscode from 'vscode';
import { chatPageHtml } from './chat/page';
import type { ChatController } from './chat/controller';
import type { FromView, ToView } from './chat/view-messages';

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewId = 'genai.chat';
  private view: vscode.WebviewView | undefined;
  /** Messages posted while the view was not shown yet; sent once its page is ready. */
  private backlog: ToView[] = [];
  private ready = false;
  controller!: ChatController;

  constructor(private readonly extensionUri: vscode.Uri) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const webview = view.webview;
    webview.options = { enableScripts: true, localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')] };
    webview.html = chatPageHtml({
      extensionPath: this.extensionUri.fsPath,
      scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js')).toString(),
      styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'chat.css')).toString(),
      cspSource: webview.cspSource,
    });
    webview.onDidReceiveMessage((message: FromView) => {
      if (message.type === 'ready') {
        this.ready = true;
        const backlog = this.backlog;
        this.backlog = [];
        for (const m of backlog) void webview.postMessage(m);
      }
      void this.controller.handle(message);
    });
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
    });
  }

  /** Posts to the page, or keeps the message until the page is ready. */
  post(message: ToView): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
    else this.backlog.push(message);
  }

  /** Shows the chat view (creating it if needed). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }
}
