// The VS Code extension's entry: starts the genai client, registers the chat view and the
// commands (New Chat, Ask About Selection, Run Command (src/run-command.ts), Open History,
// Restart Daemon), hosts the editor tools (open_files, diagnostics, buffer_text) and the
// workspace tools' file reads and writes (src/editor.ts), and turns the daemon's requests and
// events into VS Code dialogs and notifications.
import * as vscode from 'vscode';
import { GenaiClient, type ClientHooks } from './client/genai-client';
import { DaemonProcess } from './client/daemon';
import { ChatController, describe } from './chat/controller';
import { confirmChoices, confirmDetail, dismissedAnswer } from './chat/confirm';
import { ChatViewProvider } from './chat-view';
import { registerEditorTools } from './client/editor-tools';
import { VscodeEditorFiles, VscodeEditorHost } from './editor';
import { runCommand } from './run-command';
import { daemonOptions, workspaceSettings } from './settings';
import type { RequestConfirmationParams, RequestConfirmationResult } from './protocol';

let client: GenaiClient<DaemonProcess> | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('genai daemon');
  const log = (line: string) => output.appendLine(line);
  const view = new ChatViewProvider(context.extensionUri);
  // Each edit made through the editor is shown as a diff under its turn.
  const files = new VscodeEditorFiles((request, oldText) =>
    view.controller?.editSeen(request.turnId, request.callId, request.path, oldText, request.text),
  );
  const genai = new GenaiClient(new DaemonProcess(daemonOptions(log)), hooks(view, log, files));
  client = genai;
  view.controller = new ChatController(genai, (m) => view.post(m), context.globalState, { workspace: workspaceSettings });

  /** (Re)starts the daemon; a failure is shown, and the chat keeps saying why nothing works. */
  const start = async (): Promise<void> => {
    try {
      await genai.start();
      // Registered once: the client registers them again in a restarted daemon.
      if (genai.hostedTools.length === 0) {
        await registerEditorTools(genai, new VscodeEditorHost()).catch((err) =>
          log(`genai: the editor tools could not be registered (an older daemon?): ${describe(err)}`),
        );
      }
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
    files,
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, view, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand('genai.newChat', async () => {
      await view.reveal();
      view.post({ type: 'show', panel: 'newChat' });
    }),
    vscode.commands.registerCommand('genai.openHistory', () => openHistory(genai, view)),
    vscode.commands.registerCommand('genai.askAboutSelection', () => askAboutSelection(view)),
    vscode.commands.registerCommand('genai.runCommand', () => runCommand(view, files)),
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
function hooks(view: ChatViewProvider, log: (line: string) => void, files: VscodeEditorFiles): ClientHooks {
  return {
    editor: files,
    confirm: async (request) => {
      if (request.permission) {
        view.controller?.permissionAsked(request);
        return askPermission(request, files);
      }
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
 * conversation"); Escape is "Reject". An edit's ask (`permission.diff`) also offers "View diff",
 * which opens the diff and asks again; allowing it lets its write through without a second review.
 */
async function askPermission(request: RequestConfirmationParams, files: VscodeEditorFiles): Promise<RequestConfirmationResult> {
  const dismissed = dismissedAnswer(request);
  const diff = request.permission?.diff ?? undefined;
  const items: Array<{ title: string; answer?: RequestConfirmationResult; isCloseAffordance: boolean }> = confirmChoices(request).map((c) => ({
    title: c.label,
    answer: c.answer,
    isCloseAffordance: c.answer.option === dismissed.option,
  }));
  if (diff) items.push({ title: 'View diff', isCloseAffordance: false });
  for (;;) {
    const pick = await vscode.window.showWarningMessage(request.text, { modal: true, detail: confirmDetail(request) }, ...items);
    if (pick && !pick.answer && diff) {
      await files.showDiff(diff.path, diff.oldText ?? null, diff.newText);
      continue;
    }
    const answer = pick?.answer ?? dismissed;
    if (diff && answer.confirmed && request.toolCallId) files.approve(request.conversationId, request.turnId, request.toolCallId, diff);
    return answer;
  }
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
