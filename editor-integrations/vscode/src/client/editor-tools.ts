// The editor's own tools, hosted by the client (`RegisterTool`; the model sees them as
// `editor.NAME`): `open_files` (the open documents, which are unsaved, the active editor's
// selection), `diagnostics` (a file's problems) and `buffer_text` (a file's text as the editor
// holds it, unsaved changes included). All three only read. What they read comes from an
// EditorHost: VS Code's in the extension (src/editor.ts), a stand-in in the tests. No `vscode`
// import.
import type { GenaiClient, HostedTool, ToolAnswer } from './genai-client';

/** An open text document. */
export interface EditorDocument {
  /** Absolute path (a file), or the document's URI (an untitled one). */
  path: string;
  /** It has unsaved changes. */
  dirty: boolean;
  languageId?: string;
}

/** The active editor: its document and selection (1-based lines, inclusive). */
export interface ActiveEditor {
  path: string;
  selection: { startLine: number; endLine: number; text: string } | null;
}

/** One problem the editor knows about a file (1-based lines and columns). */
export interface EditorDiagnostic {
  severity: 'error' | 'warning' | 'information' | 'hint';
  message: string;
  source?: string;
  code?: string | number;
  startLine: number;
  startColumn: number;
  endLine: number;
  endColumn: number;
}

/** What the editor tools read. A relative `path` is the workspace folder's. */
export interface EditorHost {
  openDocuments(): EditorDocument[];
  activeEditor(): ActiveEditor | undefined;
  diagnostics(path: string): EditorDiagnostic[] | Promise<EditorDiagnostic[]>;
  /** The document's text (unsaved changes included), else the file's; `null`: no such file. */
  bufferText(path: string): Promise<string | null>;
}

export interface EditorTool extends HostedTool {
  name: string;
  handler: (args: Record<string, unknown>) => Promise<ToolAnswer>;
}

const PATH_SCHEMA = {
  type: 'object',
  properties: { path: { type: 'string', description: 'The file: absolute, or relative to the workspace folder.' } },
  required: ['path'],
  additionalProperties: false,
};

function pathOf(args: Record<string, unknown>): string {
  const path = args.path;
  if (typeof path !== 'string' || path.trim() === '') throw new Error('path: give the file\'s path (a non-empty string)');
  return path.trim();
}

/** The three editor tools over `host`. */
export function editorTools(host: EditorHost): EditorTool[] {
  return [
    {
      name: 'open_files',
      description:
        'The files open in the editor (path, whether they have unsaved changes, language) and the active editor: its file and the selected text with its line range.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      readOnly: true,
      handler: async () => JSON.stringify({ documents: host.openDocuments(), activeEditor: host.activeEditor() ?? null }, null, 1),
    },
    {
      name: 'diagnostics',
      description: 'The problems (errors, warnings, hints) the editor reports for one file, with their 1-based line and column ranges.',
      inputSchema: PATH_SCHEMA,
      readOnly: true,
      handler: async (args) => {
        const path = pathOf(args);
        return JSON.stringify({ path, diagnostics: await host.diagnostics(path) }, null, 1);
      },
    },
    {
      name: 'buffer_text',
      description: 'The text of one file as the editor holds it, unsaved changes included.',
      inputSchema: PATH_SCHEMA,
      readOnly: true,
      handler: async (args) => {
        const path = pathOf(args);
        const text = await host.bufferText(path);
        if (text === null) return { content: [{ type: 'text', text: `no such file: ${path}` }], isError: true };
        return text;
      },
    },
  ];
}

/**
 * Registers the editor tools in the daemon (again after a restart, as the client does for every
 * tool it hosts). Returns their full names (`editor.open_files`, ...).
 */
export async function registerEditorTools(client: GenaiClient, host: EditorHost): Promise<string[]> {
  const names: string[] = [];
  for (const { name, handler, ...tool } of editorTools(host)) {
    names.push(await client.registerTool(name, tool, (args) => handler(args)));
  }
  return names;
}
