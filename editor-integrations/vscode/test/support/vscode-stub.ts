// A stand-in for the `vscode` module, enough to activate the extension in plain Node: it records
// registered commands and views, answers configuration reads and dialogs from the test (settings
// are read from the object given, so a test may change them), records the messages, dialogs and
// input boxes shown, and gives the chat view a fake webview whose posted messages the test can read. Text
// documents are kept in memory (a test may open one and change it without saving);
// WorkspaceEdits change them, `save()` writes them to disk; diagnostics come from the test;
// executed commands that are not registered (such as `vscode.diff`) are recorded.
import Module from 'node:module';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

type Listener = (value: any) => void;

export interface FakeWebview {
  posted: any[];
  html: string;
  /** Delivers a message from the page to the extension. */
  fromPage(message: any): void;
}

class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}
type EditOp =
  | { kind: 'create'; uri: { fsPath: string } }
  | { kind: 'insert'; uri: { fsPath: string }; at: Position; text: string }
  | { kind: 'replace'; uri: { fsPath: string }; range: Range; text: string };
class WorkspaceEdit {
  readonly ops: EditOp[] = [];
  createFile(uri: { fsPath: string }) {
    this.ops.push({ kind: 'create', uri });
  }
  insert(uri: { fsPath: string }, at: Position, text: string) {
    this.ops.push({ kind: 'insert', uri, at, text });
  }
  replace(uri: { fsPath: string }, range: Range, text: string) {
    this.ops.push({ kind: 'replace', uri, range, text });
  }
}

/** An open text document of the stand-in: its text in memory, `save()` writes it. */
export class FakeDocument {
  isDirty = false;
  isClosed = false;
  languageId = 'plaintext';
  saves = 0;
  constructor(
    readonly uri: { fsPath: string; scheme: string; toString(): string },
    public text: string,
  ) {}
  getText(range?: Range): string {
    return range ? this.text.slice(this.offsetAt(range.start), this.offsetAt(range.end)) : this.text;
  }
  positionAt(offset: number): Position {
    const before = this.text.slice(0, offset).split('\n');
    return new Position(before.length - 1, before.at(-1)!.length);
  }
  offsetAt(p: Position): number {
    const lines = this.text.split('\n');
    let offset = 0;
    for (let i = 0; i < p.line && i < lines.length; i++) offset += lines[i].length + 1;
    return Math.min(offset + p.character, this.text.length);
  }
  /** Changes the text as typing would (unsaved). */
  type(text: string): void {
    this.text = text;
    this.isDirty = true;
  }
  async save(): Promise<boolean> {
    mkdirSync(dirname(this.uri.fsPath), { recursive: true });
    writeFileSync(this.uri.fsPath, this.text);
    this.isDirty = false;
    this.saves++;
    return true;
  }
}

export function installVscodeStub(settings: Record<string, unknown>) {
  const commands = new Map<string, (...args: any[]) => any>();
  const views = new Map<string, any>();
  /** The messages shown, with their options (`{modal, detail}`) and items (buttons), in order. */
  const shown: Array<{ level: string; text: string; options?: any; items: any[] }> = [];
  const answers = {
    /** What every input box answers, or what the box with these options answers. */
    inputBox: undefined as string | ((options: any) => string | undefined) | undefined,
    quickPick: undefined as ((items: any[], options: any) => any) | undefined,
    /** Which button a warning message gets (none: dismissed, as Escape does). */
    warning: undefined as ((text: string, options: any, items: any[]) => any) | undefined,
    /** Which button an information message gets (none: dismissed). */
    info: undefined as ((text: string, options: any, items: any[]) => any) | undefined,
  };
  const uri = (fsPath: string) => ({ fsPath, scheme: 'file', toString: () => `file://${fsPath}`, path: fsPath });
  /** The input boxes shown, by their options (`title`, `prompt`), in order. */
  const inputBoxes: any[] = [];
  /** The open documents, by path. */
  const documents = new Map<string, FakeDocument>();
  /** Diagnostics by path, as a language server would report them. */
  const diagnostics = new Map<string, any[]>();
  /** Commands executed that no one registered (`vscode.diff`), with their arguments. */
  const executed: Array<{ id: string; args: any[] }> = [];
  /** The virtual documents' providers, by scheme. */
  const contentProviders = new Map<string, { provideTextDocumentContent(u: any): string }>();
  const openDocument = (fsPath: string): FakeDocument => {
    let doc = documents.get(fsPath);
    if (!doc) {
      doc = new FakeDocument(uri(fsPath), readFileSync(fsPath, 'utf8'));
      documents.set(fsPath, doc);
    }
    return doc;
  };
  const disposable = { dispose() {} };
  /** showXMessage(text, [options], ...items), as VS Code takes it. */
  const message = (level: string) => async (text: string, ...rest: any[]) => {
    const options = rest.length && typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? rest.shift() : undefined;
    shown.push({ level, text, options, items: rest });
    if (level === 'warning') return answers.warning?.(text, options, rest);
    if (level === 'info') return answers.info?.(text, options, rest);
    return undefined;
  };

  const stub = {
    Uri: {
      file: uri,
      joinPath: (base: { fsPath: string }, ...parts: string[]) => uri(join(base.fsPath, ...parts)),
      from: (c: { scheme: string; path: string; query?: string }) => ({
        ...c,
        fsPath: c.path,
        toString: () => `${c.scheme}:${c.path}${c.query ? `?${c.query}` : ''}`,
      }),
    },
    Position,
    Range,
    WorkspaceEdit,
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    languages: { getDiagnostics: (u: { fsPath: string }) => diagnostics.get(u.fsPath) ?? [] },
    window: {
      tabGroups: { all: [] as any[], close: async () => true },
      activeTextEditor: undefined as any,
      createOutputChannel: () => ({ appendLine() {}, dispose() {} }),
      registerWebviewViewProvider: (id: string, provider: any) => {
        views.set(id, provider);
        return disposable;
      },
      showErrorMessage: message('error'),
      showWarningMessage: message('warning'),
      showInformationMessage: message('info'),
      showInputBox: async (options: any) => {
        inputBoxes.push(options);
        return typeof answers.inputBox === 'function' ? answers.inputBox(options) : answers.inputBox;
      },
      showQuickPick: async (items: any[], options: any) => answers.quickPick?.(await items, options),
    },
    commands: {
      registerCommand: (id: string, fn: (...args: any[]) => any) => {
        commands.set(id, fn);
        return disposable;
      },
      executeCommand: async (id: string, ...args: any[]) => {
        const fn = commands.get(id);
        if (fn) return fn(...args);
        executed.push({ id, args });
        return undefined;
      },
    },
    workspace: {
      get textDocuments() {
        return [...documents.values()];
      },
      fs: {
        readFile: async (u: { fsPath: string }) => {
          if (!existsSync(u.fsPath)) throw Object.assign(new Error(`no file ${u.fsPath}`), { code: 'FileNotFound' });
          return readFileSync(u.fsPath);
        },
      },
      openTextDocument: async (u: { fsPath: string }) => openDocument(u.fsPath),
      applyEdit: async (edit: WorkspaceEdit) => {
        for (const op of edit.ops) {
          if (op.kind === 'create') {
            if (!existsSync(op.uri.fsPath)) {
              mkdirSync(dirname(op.uri.fsPath), { recursive: true });
              writeFileSync(op.uri.fsPath, '');
            }
            continue;
          }
          const doc = openDocument(op.uri.fsPath);
          const [from, to] = op.kind === 'insert' ? [doc.offsetAt(op.at), doc.offsetAt(op.at)] : [doc.offsetAt(op.range.start), doc.offsetAt(op.range.end)];
          doc.type(doc.text.slice(0, from) + op.text + doc.text.slice(to));
        }
        return true;
      },
      registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(u: any): string }) => {
        contentProviders.set(scheme, provider);
        return disposable;
      },
      workspaceFolders: undefined as Array<{ uri: ReturnType<typeof uri>; name: string; index: number }> | undefined,
      getConfiguration: (section: string) => ({
        get: (key: string, fallback: unknown) => settings[`${section}.${key}`] ?? fallback,
      }),
      onDidChangeConfiguration: () => disposable,
      // Relative to the workspace folder holding it, as VS Code says it.
      asRelativePath: (u: { fsPath: string }) => {
        const folder = stub.workspace.workspaceFolders?.find((f) => u.fsPath.startsWith(`${f.uri.fsPath}/`));
        return folder ? u.fsPath.slice(folder.uri.fsPath.length + 1) : u.fsPath.replace(/^.*\/workspace\//, '');
      },
    },
  };

  const path = join(__dirname, 'vscode-stub-module.js');
  const mod = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = mod._resolveFilename;
  mod._resolveFilename = function (request: string, ...rest: unknown[]) {
    return request === 'vscode' ? path : resolve.call(this, request, ...rest);
  };
  require.cache[path] = { id: path, filename: path, loaded: true, exports: stub } as unknown as NodeJS.Module;

  /** Shows the registered webview view, as VS Code does when the user opens it. */
  function openView(id: string): FakeWebview {
    const receivers: Listener[] = [];
    const webview: FakeWebview & Record<string, unknown> = {
      posted: [],
      html: '',
      options: {},
      cspSource: 'vscode-resource:',
      asWebviewUri: (u: { fsPath: string }) => ({ toString: () => `vscode-resource:${u.fsPath}` }),
      postMessage: async (m: unknown) => {
        webview.posted.push(m);
        return true;
      },
      onDidReceiveMessage: (fn: Listener) => {
        receivers.push(fn);
        return disposable;
      },
      fromPage: (m: unknown) => receivers.forEach((fn) => fn(m)),
    };
    views.get(id).resolveWebviewView({ webview, onDidDispose: () => disposable });
    return webview;
  }

  /** Opens `fsPath` as a document (from disk), as the user opening it in an editor. */
  const open = (fsPath: string): FakeDocument => openDocument(fsPath);
  return { stub, commands, views, shown, answers, inputBoxes, openView, uri, documents, diagnostics, executed, contentProviders, open };
}
