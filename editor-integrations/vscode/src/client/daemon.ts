// The `genai daemon` child process: spawning it, the JSON-RPC connection over its stdio
// (Content-Length framing, vscode-jsonrpc), its stderr, and starting it again when it dies.
// No `vscode` import: the extension and the tests use it alike.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

export interface DaemonOptions {
  /** The genai executable. */
  command: string;
  /** Arguments, `["daemon"]` by default. */
  args?: string[];
  /** The whole environment of the daemon (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Start again after an unexpected exit (default true). */
  restart?: boolean;
  /** Receives each line the daemon writes on stderr (its log). */
  log?: (line: string) => void;
}

/** What ended a daemon process. */
export interface DaemonExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when `stop()` asked for it. */
  expected: boolean;
  /** True when a new process is being started. */
  willRestart: boolean;
  /** A sentence for the user, with the end of the daemon's stderr when it said something. */
  message: string;
}

export type DaemonListener = {
  /** A process is up and its connection listens; handlers must be registered here. */
  started?: (connection: MessageConnection, generation: number) => void;
  exited?: (exit: DaemonExit) => void;
};

/** Restarts allowed within RESTART_WINDOW_MS before giving up (a daemon that cannot start). */
const MAX_RESTARTS = 3;
const RESTART_WINDOW_MS = 30_000;
/** Kept from stderr to explain an exit. */
const STDERR_TAIL = 2_000;

export class DaemonProcess {
  private child: ChildProcess | undefined;
  private conn: MessageConnection | undefined;
  private gen = 0;
  private stopping = false;
  private restarts: number[] = [];
  private stderrTail = '';
  private readonly listeners: DaemonListener[] = [];
  /** Settles when the current process exits. */
  private exitSignal: Promise<DaemonExit> = new Promise(() => {});
  private signalExit: (exit: DaemonExit) => void = () => {};

  constructor(private options: DaemonOptions) {}

  /** New options (changed settings) for the next start. */
  configure(options: DaemonOptions): void {
    this.options = options;
  }

  on(listener: DaemonListener): void {
    this.listeners.push(listener);
  }

  /** The live connection; throws when no daemon runs. */
  get connection(): MessageConnection {
    if (!this.conn) throw new Error('the genai daemon is not running');
    return this.conn;
  }

  get running(): boolean {
    return this.conn !== undefined;
  }

  /** Counts processes started: 1 for the first, 2 after the first restart, ... */
  get generation(): number {
    return this.gen;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** How the current process ended, once it has; `undefined` if it is still running after `ms`. */
  async exitWithin(ms: number): Promise<DaemonExit | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)));
    try {
      return await Promise.race([this.exitSignal, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Spawns the daemon. Rejects when the executable cannot be started. */
  start(): Promise<void> {
    this.stopping = false;
    return this.spawnProcess();
  }

  /** Asks the daemon to shut down, then waits for it (killing it after `timeoutMs`). */
  async stop(timeoutMs = 3_000): Promise<void> {
    const child = this.child;
    const conn = this.conn;
    this.stopping = true;
    if (!child || !conn) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    try {
      await Promise.race([conn.sendRequest('Shutdown'), exited]);
    } catch {
      // The daemon is gone already: the exit below settles it.
    }
    child.stdin?.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }

  private spawnProcess(): Promise<void> {
    const { command, args = ['daemon'], env, cwd } = this.options;
    return new Promise((resolve, reject) => {
      const child = spawn(command, args, { env: env ?? process.env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
      this.exitSignal = new Promise((resolve) => (this.signalExit = resolve));
      this.stderrTail = '';
      let lineBuffer = '';
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (text: string) => {
        this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL);
        lineBuffer += text;
        const lines = lineBuffer.split('\n');
        lineBuffer = lines.pop() ?? '';
        for (const line of lines) this.options.log?.(line);
      });
      child.once('error', (err) => {
        // Spawning failed (no such file, not executable): nothing ran, nothing to restart.
        this.child = undefined;
        this.conn = undefined;
        reject(new Error(`cannot start the genai daemon \`${command}\`: ${err.message} (set genai.daemon.path)`));
      });
      child.once('spawn', () => {
        this.child = child;
        const conn = createMessageConnection(
          new StreamMessageReader(child.stdout!),
          new StreamMessageWriter(child.stdin!),
        );
        this.conn = conn;
        this.gen += 1;
        for (const l of this.listeners) l.started?.(conn, this.gen);
        conn.listen();
        resolve();
      });
      child.once('exit', (code, signal) => this.onExit(child, code, signal));
    });
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return;
    const conn = this.conn;
    this.child = undefined;
    this.conn = undefined;
    conn?.dispose();
    const expected = this.stopping;
    const now = Date.now();
    this.restarts = this.restarts.filter((t) => now - t < RESTART_WINDOW_MS);
    // Exit code 3 is a config error: starting again would fail the same way.
    const canRestart = !expected && (this.options.restart ?? true) && code !== 3 && this.restarts.length < MAX_RESTARTS;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const said = this.stderrTail.trim().split('\n').slice(-3).join(' | ');
    let message = `the genai daemon ${how}`;
    if (said) message += `: ${said}`;
    if (!expected) {
      message += canRestart
        ? '; starting it again'
        : `; not starting it again (${code === 3 ? 'fix the config file' : `${MAX_RESTARTS} restarts within ${RESTART_WINDOW_MS / 1000} s`}), run "genai: Restart Daemon" when fixed`;
    }
    const exit: DaemonExit = { code, signal, expected, willRestart: canRestart, message };
    this.signalExit(exit);
    for (const l of this.listeners) l.exited?.(exit);
    if (canRestart) {
      this.restarts.push(now);
      this.spawnProcess().catch((err: Error) => {
        const failed: DaemonExit = { code: null, signal: null, expected: false, willRestart: false, message: err.message };
        for (const l of this.listeners) l.exited?.(failed);
      });
    }
  }
}
