// What GenaiClient needs from the way it reaches a daemon: a JSON-RPC connection, started and
// stopped, with word when it ends. DaemonProcess (a spawned `genai daemon`, Node) and
// WebSocketTransport (a shared `genai serve`, browser) both are one. Types only: no Node import.
import type { MessageConnection } from 'vscode-jsonrpc';
import type { DaemonExit, DaemonListener } from './daemon';

export interface Transport {
  on(listener: DaemonListener): void;
  /** The live connection; throws when there is none. */
  readonly connection: MessageConnection;
  /** Counts connections made: 1 for the first, 2 after the first restart or reconnect, ... */
  readonly generation: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** How the connection ended, once it has; `undefined` if it is still up after `ms`. */
  exitWithin(ms: number): Promise<DaemonExit | undefined>;
}
