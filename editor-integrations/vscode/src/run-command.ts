// "Run Command…": a genai command (a prompt kept as a file, `ListCommands` from the workspace
// folder) picked in a QuickPick, its arguments without a default asked in input boxes (and its
// free text when it takes some), run with the editor's selection as its input (`RunCommand`);
// the reply streams in the chat view, as a new chat. A command whose `apply` is `replace` or
// `insert_below`, run on a selection, then offers the reply's first code block there, shown as
// a diff with Accept / Reject as the workspace tools' edits are.
import * as vscode from 'vscode';
import { describe } from './chat/controller';
import { firstCodeBlock, placeCode, type CommandWords } from './chat/commands';
import type { ChatViewProvider } from './chat-view';
import type { VscodeEditorFiles } from './editor';
import type { CommandInfo } from './protocol';

export async function runCommand(view: ChatViewProvider, files: VscodeEditorFiles): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selection = editor && !editor.selection.isEmpty ? editor.selection : undefined;
  const input = editor && selection ? editor.document.getText(selection) : undefined;
  try {
    const listed = await view.controller.listCommands();
    if (listed.errors.length) {
      void vscode.window.showWarningMessage(`genai: ${listed.errors.map((e) => e.message).join('; ')}`);
    }
    const pick = await vscode.window.showQuickPick(
      listed.commands.map((c) => ({ label: c.name, description: c.description, detail: detailOf(c), command: c })),
      { placeHolder: input === undefined ? 'Run a genai command' : 'Run a genai command on the selection', matchOnDescription: true },
    );
    if (!pick) return;
    const command = pick.command;
    const words = await askWords(command, input !== undefined);
    if (!words) return;
    await view.reveal();
    const end = await view.controller.runCommand({
      name: command.name,
      ...(Object.keys(words.arguments).length ? { arguments: words.arguments } : {}),
      ...(words.text ? { text: words.text } : {}),
      ...(input !== undefined ? { input } : {}),
    });
    if (editor && selection && input !== undefined && end.isSuccess && command.apply !== 'show') {
      await offerCode(editor, selection, input, end.summary, command.apply, files);
    }
  } catch (err) {
    void vscode.window.showErrorMessage(`genai: ${describe(err)}`);
  }
}

/** The QuickPick's second line: where the command comes from, and what it takes. */
function detailOf(c: CommandInfo): string {
  const takes = c.arguments.map((a) => (a.default == null ? a.name : `${a.name}=${a.default}`));
  return [
    c.source,
    c.path ? vscode.workspace.asRelativePath(vscode.Uri.file(c.path)) : '',
    takes.length ? `arguments: ${takes.join(' ')}` : '',
    c.argumentHint ? `arguments: ${c.argumentHint}` : '',
  ]
    .filter(Boolean)
    .join(' · ');
}

/**
 * The command's arguments without a default, one input box each, and its free text (optional)
 * when it takes some: an `argumentHint`, or no arguments and no selection to work on. None when
 * the user cancels a box.
 */
async function askWords(command: CommandInfo, onSelection: boolean): Promise<CommandWords | undefined> {
  const args: Record<string, string> = {};
  for (const a of command.arguments) {
    if (a.default != null) continue;
    const value = await vscode.window.showInputBox({
      title: `${command.name}: ${a.name}`,
      prompt: a.description ?? `The argument ${a.name} of ${command.name}`,
      ignoreFocusOut: true,
    });
    if (value === undefined) return undefined;
    args[a.name] = value;
  }
  let text = '';
  if (command.argumentHint || (command.arguments.length === 0 && !onSelection)) {
    const value = await vscode.window.showInputBox({
      title: command.name,
      prompt: command.argumentHint ? `Arguments: ${command.argumentHint}` : `Text for ${command.name} (optional)`,
      ignoreFocusOut: true,
    });
    if (value === undefined) return undefined;
    text = value.trim();
  }
  return { arguments: args, text };
}

/**
 * Offers the reply's first code block for the selection (`replace` it, or `insert_below` it):
 * the document as it would be, as a diff with Accept / Reject; Accept edits the document (left
 * unsaved, as any edit).
 */
async function offerCode(
  editor: vscode.TextEditor,
  selection: vscode.Selection,
  input: string,
  reply: string,
  apply: 'replace' | 'insert_below',
  files: VscodeEditorFiles,
): Promise<void> {
  const code = firstCodeBlock(reply);
  if (code === undefined) {
    return void vscode.window.showInformationMessage('genai: the reply has no code block to put in the editor; it is in the chat.');
  }
  const { document } = editor;
  if (document.getText(selection) !== input) {
    return void vscode.window.showWarningMessage('genai: the selection changed while the command ran; the reply is in the chat.');
  }
  const oldText = document.getText();
  const place = placeCode(oldText, document.offsetAt(selection.start), document.offsetAt(selection.end), code, apply);
  const newText = oldText.slice(0, place.from) + place.text + oldText.slice(place.to);
  const path = document.uri.scheme === 'file' ? document.uri.fsPath : document.uri.path;
  const name = vscode.workspace.asRelativePath(document.uri);
  const question =
    apply === 'replace'
      ? `genai: replace the selection in ${name} with the reply's code? See the diff.`
      : `genai: insert the reply's code below the selection in ${name}? See the diff.`;
  if (!(await files.review(path, oldText, newText, question))) return;
  const edit = new vscode.WorkspaceEdit();
  edit.replace(document.uri, new vscode.Range(document.positionAt(place.from), document.positionAt(place.to)), place.text);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code could not apply the edit to ${name}`);
}
