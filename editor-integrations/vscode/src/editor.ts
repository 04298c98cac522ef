// VS Code's side of the editor integration: what the editor tools read (the open documents, the
// selection, diagnostics, unsaved text: an EditorHost for src/client/editor-tools.ts), and the
// workspace tools' files read and written through the editor (`ReadTextFile`, `WriteTextFile`):
// a write shows the proposed text as a diff (vscode.diff against a virtual document) with Accept
// and Reject, unless the permission dialog already showed that call's diff and it was allowed;
// Accept applies it as a WorkspaceEdit and saves the document.
import * as vscode from 'vscode';
import { isAbsolute, join, normalize } from 'node:path';
import type { ActiveEditor, EditorDiagnostic, EditorDocument, EditorHost } from './client/editor-tools';
import type { EditorFiles } from './client/genai-client';
import type { DaemonRequests } from './protocol';

type WriteRequest = DaemonRequests['WriteTextFile']['params'];
type ReadRequest = DaemonRequests['ReadTextFile']['params'];

/** The scheme of the diff view's virtual documents (the current and the proposed text). */
export const PROPOSED_SCHEME = 'genai-proposed';

/** What Reject answers `WriteTextFile` with (the model is told it). */
export const REJECTED = 'the user rejected the edit';

/** An absolute path: as given, or under the first workspace folder. */
export function resolvePath(path: string): string {
  if (isAbsolute(path)) return normalize(path);
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
  return folder ? join(folder, path) : normalize(path);
}

/** The open text document of `path` (a file on disk), if any. */
function openDocument(path: string): vscode.TextDocument | undefined {
  const wanted = normalize(path);
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === 'file' && !d.isClosed && normalize(d.uri.fsPath) === wanted);
}

/** The text of the open document of `path`, else the file's on disk; `null` when there is no such file. */
export async function currentText(path: string): Promise<string | null> {
  const doc = openDocument(path);
  if (doc) return doc.getText();
  try {
    return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'FileNotFound' || code === 'ENOENT' || code === 'EntryNotFound') return null;
    throw err;
  }
}

const SEVERITY: EditorDiagnostic['severity'][] = ['error', 'warning', 'information', 'hint'];

/** What the editor tools read, from VS Code. */
export class VscodeEditorHost implements EditorHost {
  openDocuments(): EditorDocument[] {
    return vscode.workspace.textDocuments
      .filter((d) => !d.isClosed && (d.uri.scheme === 'file' || d.uri.scheme === 'untitled'))
      .map((d) => ({ path: d.uri.scheme === 'file' ? d.uri.fsPath : d.uri.toString(), dirty: d.isDirty, languageId: d.languageId }));
  }

  activeEditor(): ActiveEditor | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const { document, selection } = editor;
    return {
      path: document.uri.scheme === 'file' ? document.uri.fsPath : document.uri.toString(),
      selection: selection.isEmpty
        ? null
        : { startLine: selection.start.line + 1, endLine: selection.end.line + 1, text: document.getText(selection) },
    };
  }

  diagnostics(path: string): EditorDiagnostic[] {
    return vscode.languages.getDiagnostics(vscode.Uri.file(resolvePath(path))).map((d) => {
      const code = typeof d.code === 'object' && d.code !== null ? d.code.value : d.code;
      return {
        severity: SEVERITY[d.severity] ?? 'information',
        message: d.message,
        ...(d.source ? { source: d.source } : {}),
        ...(code !== undefined ? { code } : {}),
        startLine: d.range.start.line + 1,
        startColumn: d.range.start.character + 1,
        endLine: d.range.end.line + 1,
        endColumn: d.range.end.character + 1,
      };
    });
  }

  bufferText(path: string): Promise<string | null> {
    return currentText(resolvePath(path));
  }
}

/** An edit the permission dialog showed and the user allowed, waiting for its `WriteTextFile`. */
interface Approved {
  path: string;
  newText: string;
}

const callKey = (conversationId: string, turnId: string, callId: string) => `${conversationId}\n${turnId}\n${callId}`;

/**
 * The workspace tools' files through the editor (`capabilities.editor`): reads give the open
 * documents' text, writes are reviewed as a diff and applied as WorkspaceEdits.
 */
export class VscodeEditorFiles implements EditorFiles, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly approved = new Map<string, Approved>();
  private readonly registration: vscode.Disposable;
  private count = 0;

  /** `applied` hears of each edit made (the chat shows its diff at the turn's end). */
  constructor(private readonly applied?: (request: WriteRequest, oldText: string | null) => void) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, {
      provideTextDocumentContent: (uri) => this.texts.get(uri.toString()) ?? '',
    });
  }

  dispose(): void {
    this.registration.dispose();
  }

  readonly readTextFile = async (request: ReadRequest): Promise<string | null> => currentText(request.path);

  readonly writeTextFile = async (request: WriteRequest): Promise<void> => {
    const key = callKey(request.conversationId, request.turnId, request.callId);
    const approved = this.approved.get(key);
    this.approved.delete(key);
    const oldText = await currentText(request.path);
    if (oldText === request.text) return;
    const asked = approved !== undefined && normalize(approved.path) === normalize(request.path) && approved.newText === request.text;
    if (!asked && !(await this.review(request.path, oldText, request.text))) throw new Error(REJECTED);
    await applyText(request.path, oldText, request.text);
    this.applied?.(request, oldText);
  };

  /** The permission dialog showed this call's diff and the user allowed it: its write is not asked again. */
  approve(conversationId: string, turnId: string, callId: string, diff: { path: string; newText: string }): void {
    this.approved.set(callKey(conversationId, turnId, callId), { path: diff.path, newText: diff.newText });
  }

  /** Opens the diff of `oldText` (`null`: a new file) and `newText`; returns the diff's two URIs. */
  async showDiff(path: string, oldText: string | null, newText: string): Promise<[vscode.Uri, vscode.Uri]> {
    const n = ++this.count;
    const left = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path, query: `${n}-current` });
    const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path, query: `${n}-proposed` });
    this.texts.set(left.toString(), oldText ?? '');
    this.texts.set(right.toString(), newText);
    const name = vscode.workspace.asRelativePath(vscode.Uri.file(path));
    const title = `${name} (${oldText === null ? 'new file' : 'current'} ↔ proposed by genai)`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
    return [left, right];
  }

  /**
   * Shows the edit as a diff and asks Accept or Reject (closing the notification rejects);
   * `question` is the notification's text (default: `genai wants to edit NAME: see the diff.`).
   */
  async review(path: string, oldText: string | null, newText: string, question?: string): Promise<boolean> {
    const [left, right] = await this.showDiff(path, oldText, newText);
    try {
      const name = vscode.workspace.asRelativePath(vscode.Uri.file(path));
      const pick = await vscode.window.showInformationMessage(
        question ?? `genai wants to ${oldText === null ? 'create' : 'edit'} ${name}: see the diff.`,
        'Accept',
        'Reject',
      );
      return pick === 'Accept';
    } finally {
      await closeDiff(right);
      this.texts.delete(left.toString());
      this.texts.delete(right.toString());
    }
  }
}

/** Closes the diff tabs showing `right`. */
async function closeDiff(right: vscode.Uri): Promise<void> {
  const tabs = (vscode.window.tabGroups?.all ?? []).flatMap((g) => g.tabs).filter((t) => {
    const modified = (t.input as { modified?: vscode.Uri } | undefined)?.modified;
    return modified?.toString() === right.toString();
  });
  if (tabs.length) await vscode.window.tabGroups.close(tabs);
}

/** Makes `text` the whole text of `path` through the editor (a WorkspaceEdit), and saves it. */
export async function applyText(path: string, oldText: string | null, text: string): Promise<void> {
  const uri = vscode.Uri.file(path);
  const edit = new vscode.WorkspaceEdit();
  if (oldText === null) {
    edit.createFile(uri, { ignoreIfExists: true });
    edit.insert(uri, new vscode.Position(0, 0), text);
  } else {
    const doc = await vscode.workspace.openTextDocument(uri);
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text);
  }
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code could not apply the edit to ${path}`);
  const doc = await vscode.workspace.openTextDocument(uri);
  if (!(await doc.save())) throw new Error(`VS Code could not save ${path}`);
}
