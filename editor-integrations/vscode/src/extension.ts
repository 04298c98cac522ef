// The VS Code extension's entry: starts the genai client, registers the chat view and the
// commands (New Chat, Ask About Selection, Open History, Restart Daemon), and turns the daemon's
// requests and events into VS Code dialogs and notifications.
import * as vscode from 'vscode';
import { GenaiClient, type ClientHooks } from './client/genai-client';
import { DaemonProcess } from './client/daemon';
import { ChatController, describe } from './chat/controller';
import { confirmChoices, confirmDetail, dismissedAnswer } from './chat/confirm';
import { ChatViewProvider } from './chat-view';
import { daemonOptions, workspaceSettings } from './settings';
import type { RequestConfirmationParams, RequestConfirmationResult } from './protocol';

let client: GenaiClient<DaemonProcess> | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('genai daemon');
  const log = (line: string) => output.appendLine(line);
  const view = new ChatViewProvider(context.extensionUri);
  const genai = new GenaiClient(new DaemonProcess(daemonOptions(log)), hooks(view, log));
  client = genai;
  view.controller = new ChatController(genai, (m) => view.post(m), context.globalState, { workspace: workspaceSettings });

  /** (Re)starts the daemon; a failure is shown, and the chat keeps saying why nothing works. */
  const start = async (): Promise<void> => {
    try {
      await genai.start();
      await view.controller.refreshComponents();
    } catch (err) {
      const message = `genai: ${describe(err)}`;
      log(message);
      view.post({ type: 'status', level: 'error', text: message });
      void vscode.window.showErrorMessage(message);
    }
  };

  context.subscriptions.push(
    output,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, view, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('genai.newChat', async () => {
      await view.reveal();
      view.post({ type: 'show', panel: 'newChat' });
    }),
    vscode.commands.registerCommand('genai.openHistory', () => openHistory(genai, view)),
    vscode.commands.registerCommand('genai.askAboutSelection', () => askAboutSelection(view)),
    vscode.commands.registerCommand('genai.restartDaemon', async () => {
      await genai.dispose();
      genai.daemon.configure(daemonOptions(log));
      await start();
      if (genai.daemon.running) view.post({ type: 'status', level: 'info', text: 'The genai daemon was started again.' });
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('genai.daemon')) {
        void vscode.window
          .showInformationMessage('genai: the daemon settings changed.', 'Restart Daemon')
          .then((pick) => pick && vscode.commands.executeCommand('genai.restartDaemon'));
      }
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
}

/** The daemon's requests and events, as VS Code dialogs, notifications and chat status. */
function hooks(view: ChatViewProvider, log: (line: string) => void): ClientHooks {
  return {
    confirm: async (request) => {
      if (request.permission) return askPermission(request);
      const { text, link, tool } = request;
      const detail = `Asked by the tool ${tool}. Confirming lets the daemon call ${link}.`;
      const answer = await vscode.window.showWarningMessage(text, { modal: true, detail }, 'Confirm');
      return answer === 'Confirm';
    },
    action: (action) => {
      const text = typeof action.action === 'string' ? action.action : JSON.stringify(action.action);
      void vscode.window.showInformationMessage(`genai action: ${text}`);
    },
    daemon: (event) => {
      if (event.state === 'exited' && !event.exit.expected) {
        log(event.exit.message);
        view.post({ type: 'status', level: event.exit.willRestart ? 'warning' : 'error', text: event.exit.message });
        if (event.exit.willRestart) void vscode.window.showWarningMessage(event.exit.message);
        else void vscode.window.showErrorMessage(event.exit.message, 'Restart Daemon').then((pick) => pick && vscode.commands.executeCommand('genai.restartDaemon'));
      } else if (event.state === 'started') {
        view.post({ type: 'status', level: 'info', text: 'The genai daemon is running again; open conversations continue.' });
      }
    },
  };
}

/**
 * A permission ask as a modal dialog: the call (`text`), why it asks (`reason`), and one button
 * per option ("Allow once", "Always allow (RULE)", "Reject", "Always reject in this
 * conversation"); Escape is "Reject".
 */
async function askPermission(request: RequestConfirmationParams): Promise<RequestConfirmationResult> {
  const dismissed = dismissedAnswer(request);
  const items = confirmChoices(request).map((c) => ({
    title: c.label,
    answer: c.answer,
    isCloseAffordance: c.answer.option === dismissed.option,
  }));
  const pick = await vscode.window.showWarningMessage(request.text, { modal: true, detail: confirmDetail(request) }, ...items);
  return pick?.answer ?? dismissed;
}

async function openHistory(genai: GenaiClient, view: ChatViewProvider): Promise<void> {
  try {
    const page = await genai.listConversations(100);
    const pick = await vscode.window.showQuickPick(
      page.conversations.map((c) => ({
        label: c.title || '(untitled)',
        description: `${c.feature} · ${c.provider} · ${c.model}`,
        detail: `${new Date(c.updatedAt).toLocaleString()} · ${c.messageCount ?? 0} messages`,
        id: c.id,
      })),
      { placeHolder: page.conversations.length ? 'Reopen a conversation' : 'No conversations yet', matchOnDescription: true },
    );
    if (!pick) return;
    await view.reveal();
    await view.controller.handle({ type: 'openConversation', id: pick.id });
  } catch (err) {
    void vscode.window.showErrorMessage(`genai: ${describe(err)}`);
  }
}

async function askAboutSelection(view: ChatViewProvider): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.selection.isEmpty) {
    return void vscode.window.showInformationMessage('genai: select some text first.');
  }
  const question = await vscode.window.showInputBox({ prompt: 'Ask about the selection', value: 'Explain this code.' });
  if (question === undefined) return;
  const { selection, document } = editor;
  await view.reveal();
  await view.controller.askAboutSelection({
    question,
    fileName: vscode.workspace.asRelativePath(document.uri),
    language: document.languageId,
    text: document.getText(selection),
    startLine: selection.start.line + 1,
    endLine: selection.end.line + 1,
  });
}
