// The extension's settings (package.json "contributes.configuration"), read into DaemonOptions.
import * as vscode from 'vscode';
import type { DaemonOptions } from './client/daemon';

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
