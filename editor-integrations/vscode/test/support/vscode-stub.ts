// A stand-in for the `vscode` module, enough to activate the extension in plain Node: it records
// registered commands and views, answers configuration reads and dialogs from the test (settings
// are read from the object given, so a test may change them), records the messages and dialogs
// shown, and gives the chat view a fake webview whose posted messages the test can read.
import Module from 'node:module';
import { join } from 'node:path';

type Listener = (value: any) => void;

export interface FakeWebview {
  posted: any[];
  html: string;
  /** Delivers a message from the page to the extension. */
  fromPage(message: any): void;
}

export function installVscodeStub(settings: Record<string, unknown>) {
  const commands = new Map<string, (...args: any[]) => any>();
  const views = new Map<string, any>();
  /** The messages shown, with their options (`{modal, detail}`) and items (buttons), in order. */
  const shown: Array<{ level: string; text: string; options?: any; items: any[] }> = [];
  const answers = {
    inputBox: undefined as string | undefined,
    quickPick: undefined as ((items: any[]) => any) | undefined,
    /** Which button a warning message gets (none: dismissed, as Escape does). */
    warning: undefined as ((text: string, options: any, items: any[]) => any) | undefined,
  };
  const uri = (fsPath: string) => ({ fsPath, scheme: 'file', toString: () => `file://${fsPath}`, path: fsPath });
  const disposable = { dispose() {} };
  /** showXMessage(text, [options], ...items), as VS Code takes it. */
  const message = (level: string) => async (text: string, ...rest: any[]) => {
    const options = rest.length && typeof rest[0] === 'object' && rest[0] !== null && !('title' in rest[0]) ? rest.shift() : undefined;
    shown.push({ level, text, options, items: rest });
    return level === 'warning' ? answers.warning?.(text, options, rest) : undefined;
  };

  const stub = {
    Uri: { file: uri, joinPath: (base: { fsPath: string }, ...parts: string[]) => uri(join(base.fsPath, ...parts)) },
    window: {
      activeTextEditor: undefined as any,
      createOutputChannel: () => ({ appendLine() {}, dispose() {} }),
      registerWebviewViewProvider: (id: string, provider: any) => {
        views.set(id, provider);
        return disposable;
      },
      showErrorMessage: message('error'),
      showWarningMessage: message('warning'),
      showInformationMessage: message('info'),
      showInputBox: async () => answers.inputBox,
      showQuickPick: async (items: any[]) => answers.quickPick?.(await items),
    },
    commands: {
      registerCommand: (id: string, fn: (...args: any[]) => any) => {
        commands.set(id, fn);
        return disposable;
      },
      executeCommand: async (id: string, ...args: any[]) => commands.get(id)?.(...args),
    },
    workspace: {
      workspaceFolders: undefined as Array<{ uri: ReturnType<typeof uri>; name: string; index: number }> | undefined,
      getConfiguration: (section: string) => ({
        get: (key: string, fallback: unknown) => settings[`${section}.${key}`] ?? fallback,
      }),
      onDidChangeConfiguration: () => disposable,
      asRelativePath: (u: { fsPath: string }) => u.fsPath.replace(/^.*\/workspace\//, ''),
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

  return { stub, commands, views, shown, answers, openView, uri };
}
