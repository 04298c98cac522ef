// Test support: the genai binary and the fake provider (examples/fake-provider.rs) as child
// processes, a throwaway config + data folder per daemon, and deadline waits.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** The repository root (test files run from out/test/support). */
export const repoRoot = resolve(__dirname, '..', '..', '..', '..', '..');
export const genaiBin = process.env.GENAI_BIN ?? join(repoRoot, 'target', 'debug', 'genai');
export const fakeProviderBin = process.env.FAKE_PROVIDER_BIN ?? join(repoRoot, 'target', 'debug', 'examples', 'fake-provider');

/** Resolves with `promise`, or rejects naming `what` after `ms`. */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface FakeProvider {
  url: string;
  stop(): void;
}

/**
 * Starts examples/fake-provider on a free loopback port. `toolCalls` (`WIRE_NAME:ARGS_JSON`
 * each) make its first answer those tool calls; later requests get the reply. `reasoning` is
 * streamed before every answer.
 */
export async function startFakeProvider(opts: {
  reply: string;
  chunks: number;
  delayMs: number;
  toolCalls?: string[];
  /** What the model thinks before each answer (streamed as `reasoning_content`). */
  reasoning?: string;
}): Promise<FakeProvider> {
  const child: ChildProcess = spawn(
    fakeProviderBin,
    [
      '--port', '0', '--reply', opts.reply, '--chunks', String(opts.chunks), '--delay-ms', String(opts.delayMs),
      ...(opts.toolCalls ?? []).flatMap((call) => ['--tool-call', call]),
      ...(opts.reasoning ? ['--reasoning', opts.reasoning] : []),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! });
  const url = await within(
    10_000,
    'the fake provider to listen',
    new Promise<string>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`fake-provider exited with ${code} before listening`)));
      lines.on('line', (line) => {
        const m = /^listening on (\S+)/.exec(line);
        if (m) resolve(m[1]);
      });
    }),
  );
  return { url, stop: () => child.kill() };
}

/** How the scripted provider answers one chat request (fake-provider's `push`). */
export interface ScriptedAnswer {
  reply?: string;
  chunks?: number;
  delayMs?: number;
  /** Tool calls instead of a reply: `[WIRE_NAME, ARGS_JSON]` each (ids `call_1`, ...). */
  toolCalls?: Array<[string, string]>;
}

export interface ScriptedProvider extends FakeProvider {
  /** Queues how the next chat request is answered (later ones: the default reply). */
  push(answer: ScriptedAnswer): Promise<void>;
  /** The bodies of the chat requests so far. */
  requests(): Promise<any[]>;
}

/**
 * Starts examples/fake-provider with `--control`: a test queues each answer (a reply or tool
 * calls) and reads the requests the model got, one JSON line each way on its stdin/stdout.
 */
export async function startScriptedProvider(opts: { reply: string }): Promise<ScriptedProvider> {
  const child: ChildProcess = spawn(fakeProviderBin, ['--port', '0', '--reply', opts.reply, '--chunks', '2', '--control'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let waiting: ((line: string) => void) | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const w = waiting;
    waiting = undefined;
    if (w) w(line);
    else lines.push(line);
  });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`fake-provider exited with ${code}`))));
  exited.catch(() => undefined);
  const nextLine = (what: string) =>
    within(10_000, what, Promise.race([lines.length ? Promise.resolve(lines.shift()!) : new Promise<string>((r) => (waiting = r)), exited]));
  // One command at a time: each is answered by one line, in order.
  let queue: Promise<unknown> = Promise.resolve();
  const command = (c: unknown): Promise<any> => {
    const run = queue.then(async () => {
      child.stdin!.write(`${JSON.stringify(c)}\n`);
      const answer = JSON.parse(await nextLine(`fake-provider's answer to ${JSON.stringify(c)}`));
      if (answer.error) throw new Error(`fake-provider: ${answer.error}`);
      return answer;
    });
    queue = run.catch(() => undefined);
    return run;
  };
  const first = await nextLine('the fake provider to listen');
  const url = /^listening on (\S+)/.exec(first)?.[1];
  if (!url) throw new Error(`fake-provider said ${first}`);
  return {
    url,
    stop: () => child.kill(),
    push: async (answer) => void (await command({ push: answer })),
    requests: async () => (await command({ requests: true })).requests,
  };
}

/**
 * A config folder naming each provider instance after its key (kind openai, that base_url),
 * an empty data folder, and the daemon environment for both: no proxies, no OpenAI variables,
 * so the daemon reaches only loopback.
 */
export function daemonEnv(providers: Record<string, string>): NodeJS.ProcessEnv {
  const root = mkdtempSync(join(tmpdir(), 'genai-vscode-test-'));
  const config = join(root, 'config');
  const data = join(root, 'data');
  mkdirSync(config);
  mkdirSync(data);
  const toml = Object.entries(providers)
    .map(([name, url]) => `[service_providers.${name}]\nkind = "openai"\nbase_url = "${url}"\ndefault_model = "${name}-model"\n`)
    .join('\n');
  writeFileSync(join(config, 'config.toml'), toml);
  const env: NodeJS.ProcessEnv = { ...process.env, GENAI_CONFIG_DIR: config, GENAI_DATA_DIR: data, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
  for (const v of ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy', 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'GENAI_LOG']) {
    delete env[v];
  }
  return env;
}

/** A port where nothing listens (the discard port), for provider errors. */
export const DOWN_URL = 'http://127.0.0.1:9/v1';
