// The extension's settings (package.json "contributes.configuration"), read into DaemonOptions
// and the chat's WorkspaceSettings.
import * as vscode from 'vscode';
import type { DaemonOptions } from './client/daemon';
import type { WorkspaceSettings } from './chat/controller';
import type { Mode } from './protocol';

export function daemonOptions(log: (line: string) => void): DaemonOptions {
  const config = vscode.workspace.getConfiguration('genai.daemon');
  const extraEnv = config.get<Record<string, string>>('env', {});
  // A shared `genai serve`: the same stdio client, through `genai daemon --connect URL`.
  const url = config.get<string>('url', '').trim();
  const args = config.get<string[]>('args', ['daemon']);
  return {
    command: config.get<string>('path', 'genai'),
    args: url ? [...args, '--connect', url] : args,
    env: { ...process.env, ...extraEnv },
    cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    restart: config.get<boolean>('restart', true),
    log,
  };
}

/**
 * What the chat's conversations get: the first workspace folder as `cwd`; with
 * `genai.workspaceTools` (and a folder on disk to work in) genai's workspace tools there, under
 * `genai.permissionMode`.
 */
export function workspaceSettings(): WorkspaceSettings {
  const config = vscode.workspace.getConfiguration('genai');
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
  return {
    cwd: folder,
    tools: folder !== undefined && config.get<boolean>('workspaceTools', true),
    mode: config.get<Mode>('permissionMode', 'ask'),
    assistantToo: true,
  };
}
