// The extension's client module (daemon process, JSON-RPC, conversations, the chat controller)
// against the real `genai daemon` and examples/fake-provider: create, stream, details, history,
// cancel, errors, daemon restart, the tool messages through a stand-in daemon, the permission
// asks of genai's workspace tools (a scripted model edits files in a temporary folder), the
// editor tools the client hosts (RegisterTool, OnToolCall, time-outs, denials, a client leaving
// mid-call), the workspace files read and written through the client (ReadTextFile,
// WriteTextFile), and Undo of a turn's changes.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { GenaiClient, GenaiError, type Conversation } from '../src/client/genai-client';
import { registerEditorTools, type EditorHost } from '../src/client/editor-tools';
import { DaemonProcess } from '../src/client/daemon';
import { ChatController, conversationParams, type WorkspaceSettings } from '../src/chat/controller';
import type { PermissionOption } from '../src/chat/confirm';
import type { ToView } from '../src/chat/view-messages';
import type { DoActionNotification, RequestConfirmationParams, RequestConfirmationResult } from '../src/protocol';
import {
  daemonEnv,
  DOWN_URL,
  genaiBin,
  startFakeProvider,
  startScriptedProvider,
  within,
  type FakeProvider,
  type ScriptedProvider,
} from './support/env';

const REPLY = 'Hello from the **fake** provider.';
const TOOL_ARGS = '{"day":"today","limit":3}';
let fast: FakeProvider;
let slow: FakeProvider;
/** Answers its first request with a tool call, later ones with REPLY. */
let caller: FakeProvider;
/** Reasons before each answer. */
let thinker: FakeProvider;
let env: NodeJS.ProcessEnv;

before(async () => {
  fast = await startFakeProvider({ reply: REPLY, chunks: 4, delayMs: 5 });
  slow = await startFakeProvider({ reply: 'One two three four five six seven eight nine ten.', chunks: 20, delayMs: 100 });
  caller = await startFakeProvider({ reply: REPLY, chunks: 2, delayMs: 5, toolCalls: [`events__getEvents:${TOOL_ARGS}`] });
  thinker = await startFakeProvider({ reply: '9.8 is larger.', chunks: 2, delayMs: 5, reasoning: 'Compare the tenths: 8 > 1.' });
  env = daemonEnv({ fast: fast.url, slow: slow.url, caller: caller.url, thinker: thinker.url, down: DOWN_URL });
  // An agent whose requests go through a middleware the client hosts.
  appendFileSync(join(env.GENAI_CONFIG_DIR!, 'config.toml'), '\n[agents.loud]\nprovider = "fast"\nmodel = "fast-model"\nmiddleware = ["shout"]\n');
});
after(() => {
  fast?.stop();
  slow?.stop();
  caller?.stop();
  thinker?.stop();
});

function newClient(events: Array<{ state: string }> = []): GenaiClient<DaemonProcess> {
  return new GenaiClient(new DaemonProcess({ command: genaiBin, env, restart: true }), { daemon: (e) => events.push(e) });
}

describe('genai client against the daemon', () => {
  let client: GenaiClient<DaemonProcess>;
  before(async () => {
    client = newClient();
    await within(10_000, 'the daemon to start', client.start());
  });
  after(() => client.dispose());

  test('ListComponents names the configured providers and the assistant feature', async () => {
    const c = await client.listComponents();
    const configured = c.serviceProviders.filter((p) => p.origin === 'config').map((p) => p.name);
    assert.deepEqual(configured.sort(), ['caller', 'down', 'fast', 'slow', 'thinker']);
    assert.ok(c.serviceProviders.some((p) => p.name === 'openai' && p.origin === 'builtin'));
    assert.ok((c.features as Array<{ name: string }>).some((f) => f.name === 'assistant'));
  });

  test('a turn streams chunks that add up to the summary, with details', async () => {
    const conversation = await client.createConversation({ feature: 'assistant', serviceProvider: 'fast' });
    assert.equal(conversation.model, 'fast-model');
    const chunks: string[] = [];
    const turn = await conversation.send('Hello', { chunk: (delta) => chunks.push(delta) });
    const end = await within(10_000, 'the final OnFeatureResponse', turn.done);
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(end.summary, REPLY);
    assert.equal(chunks.length, 4, `chunks: ${JSON.stringify(chunks)}`);
    assert.equal(chunks.join(''), REPLY);
    assert.equal(turn.text, REPLY);
    assert.ok(end.detailedResponse.some((line) => line.startsWith('provider: fast')), end.detailedResponse.join('\n'));
    assert.ok(end.detailedResponse.some((line) => line.startsWith('usage:')), end.detailedResponse.join('\n'));
  });

  test('reasoning streams apart from the reply, the chat page gets it collapsed, history keeps it', async () => {
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>();
    const controller = new ChatController(client, (m) => posted.push(m), {
      get: <T>(k: string) => memory.get(k) as T | undefined,
      update: async (k: string, v: unknown) => void memory.set(k, v),
    });
    await controller.newChat({ feature: 'assistant', serviceProvider: 'thinker' });
    await within(10_000, 'the turn', controller.send('9.11 or 9.8?'));
    const reasoning = posted.flatMap((m) => (m.type === 'reasoning' ? [m.delta] : []));
    const chunks = posted.flatMap((m) => (m.type === 'chunk' ? [m.delta] : []));
    assert.equal(reasoning.join(''), 'Compare the tenths: 8 > 1.');
    assert.equal(chunks.join(''), '9.8 is larger.');
    const ended = posted.find((m) => m.type === 'turnEnded');
    assert.ok(ended && ended.type === 'turnEnded' && ended.summary === '9.8 is larger.', JSON.stringify(ended));
    const firstChunk = posted.findIndex((m) => m.type === 'chunk' && m.delta !== '');
    const lastReasoning = posted.map((m) => m.type).lastIndexOf('reasoning');
    assert.ok(lastReasoning < firstChunk, 'the reasoning comes before the answer');

    const id = controller.current!.id;
    posted.length = 0;
    await controller.openConversation(id, 'again');
    const shown = posted.find((m) => m.type === 'conversation');
    assert.ok(shown && shown.type === 'conversation');
    assert.deepEqual(shown.messages[1], { role: 'assistant', text: '9.8 is larger.', reasoning: 'Compare the tenths: 8 > 1.' });
  });

  test('a hosted middleware sees each request and sends what it returns; its failure fails the turn', async () => {
    const seen: Array<{ texts: string[]; model: string }> = [];
    await client.registerMiddleware(
      'shout',
      (messages, call) => {
        const texts = messages.map((m) => (Array.isArray(m.content) ? m.content.map((p) => (typeof p === 'string' ? p : p.type === 'text' ? p.text : '')).join('') : String(m.content)));
        seen.push({ texts, model: call.model });
        if (texts.some((t) => t.includes('fail'))) throw new Error('no shouting today');
        return messages.map((m, i) => ({ role: m.role, content: texts[i].toUpperCase() }));
      },
      { timeoutMs: 5_000 },
    );
    const conversation = await client.createConversation({ agent: 'loud' });
    const ok = await within(10_000, 'the turn', (await conversation.send('hello there')).done);
    assert.equal(ok.isSuccess, true, ok.summary);
    assert.equal(ok.summary, REPLY);
    assert.ok(ok.detailedResponse.includes('middleware shout (client): 1 messages in, 1 out'), ok.detailedResponse.join('\n'));
    assert.deepEqual(seen[0], { texts: ['hello there'], model: 'fast-model' });
    const failed = await within(10_000, 'the failing turn', (await conversation.send('please fail')).done);
    assert.equal(failed.isSuccess, false);
    assert.match(failed.summary, /middleware shout \(client\).*no shouting today/);
    const history = await conversation.history();
    assert.equal(history.length, 2, 'the failed turn stored nothing');
  });

  test('history: listed with its title, reopened with its messages', async () => {
    const conversation = await client.createConversation({ feature: 'assistant', serviceProvider: 'fast' });
    const turn = await conversation.send('What is in the history?');
    assert.equal((await within(10_000, 'the turn', turn.done)).isSuccess, true);
    const list = await client.listConversations(100);
    const record = list.conversations.find((c) => c.id === conversation.id);
    assert.ok(record, 'the conversation is listed');
    assert.equal(record.title, 'What is in the history?');
    assert.equal(record.messageCount, 2);
    await conversation.close();
    const resumed = await client.resumeConversation(conversation.id.slice(0, 20));
    assert.equal(resumed.id, conversation.id);
    const messages = await resumed.history();
    assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant']);
  });

  test('cancel stops a streaming turn, which ends as cancelled and stores nothing', async () => {
    const conversation = await client.createConversation({ feature: 'assistant', serviceProvider: 'slow' });
    let firstChunk!: () => void;
    const gotChunk = new Promise<void>((resolve) => (firstChunk = resolve));
    const turn = await conversation.send('Count to ten', { chunk: () => firstChunk() });
    await within(10_000, 'the first chunk', gotChunk);
    assert.equal(await conversation.cancel(), true);
    const end = await within(10_000, 'the cancelled turn to end', turn.done);
    assert.equal(end.isSuccess, false);
    assert.equal(end.error?.kind, 'cancelled');
    assert.equal(await conversation.cancel(), false, 'nothing runs any more');
    assert.deepEqual(await conversation.history(), []);
  });

  test('tools: the turn sees the streamed tool call, whose error goes to the model, which then answers', async () => {
    const conversation = await client.createConversation({ feature: 'tools', serviceProvider: 'caller' });
    assert.equal(conversation.feature, 'tools');
    const seen: Array<{ name?: string; arguments: string }> = [];
    const turn = await conversation.send('What is on today?', { toolCall: (call) => seen.push({ name: call.name, arguments: call.arguments }) });
    const end = await within(10_000, 'the final OnFeatureResponse', turn.done);
    // No plugin is configured: the daemon does not know the tool and names it by its wire name.
    assert.deepEqual([...turn.toolCalls.values()], [{ index: 0, id: 'call_1', name: 'events__getEvents', arguments: TOOL_ARGS }]);
    assert.ok(seen.length >= 2, `pieces: ${JSON.stringify(seen)}`);
    assert.equal(seen[0].name, 'events__getEvents', 'the name comes with the first piece');
    assert.equal(seen.at(-1)!.arguments, TOOL_ARGS);
    // The failed call goes back to the model, whose next answer is the reply.
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(end.summary, REPLY);
    assert.equal(turn.text, REPLY);
    assert.ok(
      end.detailedResponse.some((line) => line.startsWith(`tool events__getEvents(${TOOL_ARGS}) → error:`)),
      end.detailedResponse.join('\n'),
    );
  });

  test('errors: a provider that is down fails the turn; bad requests reject with their kind', async () => {
    const conversation = await client.createConversation({ feature: 'assistant', serviceProvider: 'down' });
    const end = await within(10_000, 'the failed turn', (await conversation.send('Anyone there?')).done);
    assert.equal(end.isSuccess, false);
    assert.equal(end.error?.kind, 'providerError');
    assert.match(end.summary, /cannot connect/);

    await assert.rejects(client.createConversation({ feature: 'assistant', serviceProvider: 'nope' }), (err: unknown) => {
      assert.ok(err instanceof GenaiError);
      assert.equal(err.kind, 'unknownComponent');
      assert.match(err.message, /nope/);
      return true;
    });
    await assert.rejects(conversation.send('   '), (err: unknown) => err instanceof GenaiError && err.kind === 'invalidParams');
  });
});

describe('daemon restart', () => {
  test('a killed daemon ends the running turn with the reason, starts again, and the conversation goes on', async () => {
    const events: Array<{ state: string; exit?: { message: string; willRestart: boolean } }> = [];
    const client = newClient(events);
    await within(10_000, 'the daemon to start', client.start());
    try {
      const conversation = await client.createConversation({ feature: 'assistant', serviceProvider: 'slow' });
      let firstChunk!: () => void;
      const gotChunk = new Promise<void>((resolve) => (firstChunk = resolve));
      const turn = await conversation.send('Count slowly', { chunk: () => firstChunk() });
      await within(10_000, 'the first chunk', gotChunk);
      const restarted = new Promise<void>((resolve) => {
        client.daemon.on({ started: () => resolve() });
      });
      const firstPid = client.daemon.pid!;
      process.kill(firstPid, 'SIGKILL');

      const end = await within(10_000, 'the interrupted turn to end', turn.done);
      assert.equal(end.isSuccess, false);
      assert.equal(end.error?.kind, 'daemonExited');
      assert.match(end.summary, /killed by SIGKILL; starting it again/);
      await within(10_000, 'the daemon to start again', restarted);
      assert.notEqual(client.daemon.pid, firstPid);
      assert.equal(client.daemon.generation, 2);
      assert.ok(events.some((e) => e.state === 'exited' && e.exit?.willRestart));

      // The same Conversation object is resumed in the new daemon on its next message.
      const again = await conversation.send('Are you back?');
      const second = await within(15_000, 'the turn after the restart', again.done);
      assert.equal(second.isSuccess, true, second.summary);
      assert.ok(events.some((e) => e.state === 'started'));
    } finally {
      await client.dispose();
    }
  });

  test('a daemon that cannot be started says which setting to fix', async () => {
    const client = new GenaiClient(new DaemonProcess({ command: '/nonexistent/genai', restart: true }));
    await assert.rejects(client.start(), /cannot start the genai daemon `\/nonexistent\/genai`.*genai\.daemon\.path/);
  });

  test('a daemon that keeps failing at start is not restarted forever', async () => {
    const events: Array<{ state: string; exit?: { message: string; willRestart: boolean } }> = [];
    // Exit code 3 is genai's config error: starting again would fail the same way.
    const client = new GenaiClient(
      new DaemonProcess({ command: process.execPath, args: ['-e', 'console.error("config: bad file"); process.exit(3)'], restart: true }),
      { daemon: (e) => events.push(e) },
    );
    await assert.rejects(client.start(), (err: unknown) => err instanceof GenaiError && err.kind === "daemonExited" && /config: bad file/.test(err.message));
    await within(5_000, 'the exit event', new Promise<void>((resolve) => {
      const check = () => (events.length ? resolve() : setTimeout(check, 20));
      check();
    }));
    assert.equal(events[0].exit?.willRestart, false);
    assert.match(events[0].exit!.message, /exited with code 3: config: bad file; not starting it again \(fix the config file\)/);
  });
});

describe('tool messages (stand-in daemon)', () => {
  test('RequestConfirmation is answered by the confirm hook; DoAction reaches the action hook', async () => {
    const asked: RequestConfirmationParams[] = [];
    const actions: DoActionNotification[] = [];
    let gotAction!: () => void;
    const actionSeen = new Promise<void>((resolve) => (gotAction = resolve));
    const client = new GenaiClient(
      new DaemonProcess({ command: process.execPath, args: [join(__dirname, 'support', 'fake-tools-daemon.js')], restart: false }),
      {
        confirm: async (request) => {
          asked.push(request);
          return true;
        },
        action: (action) => {
          actions.push(action);
          gotAction();
        },
      },
    );
    await within(10_000, 'the stand-in daemon', client.start());
    try {
      const answer = await within(5_000, 'TriggerTools', client.daemon.connection.sendRequest('TriggerTools', { conversationId: 'c1' }));
      assert.deepEqual(answer, { confirmed: true });
      assert.equal(asked[0].text, 'Delete 3 entities?');
      assert.equal(asked[0].turnId, 'turn-tools');
      assert.equal(asked[0].link, 'http://127.0.0.1:1/confirm');
      assert.equal(asked[0].tool, 'entities.delete');
      await within(5_000, 'the DoAction notification', actionSeen);
      assert.deepEqual(actions[0].action, { code: 'SPAWN' });
      assert.equal(actions[0].turnId, 'turn-tools');
    } finally {
      await client.dispose();
    }
  });
});

describe('the chat page\'s confirmation dialog (stand-in daemon)', () => {
  test('a plugin confirmation is posted to the page as Confirm/Cancel; the chosen button answers {confirmed}', async () => {
    const posted: ToView[] = [];
    let controller!: ChatController;
    const client = new GenaiClient(
      new DaemonProcess({ command: process.execPath, args: [join(__dirname, 'support', 'fake-tools-daemon.js')], restart: false }),
      { confirm: (request) => controller.confirm(request) },
    );
    // The page: answers each ask with the button named "Confirm".
    controller = new ChatController(client, (m) => {
      posted.push(m);
      if (m.type === 'confirm') void controller.handle({ type: 'confirmAnswer', id: m.id, choice: m.choices.findIndex((c) => c.label === 'Confirm') });
    }, { get: () => undefined, update: async () => undefined });
    await within(10_000, 'the stand-in daemon', client.start());
    try {
      const answer = await within(5_000, 'TriggerTools', client.daemon.connection.sendRequest('TriggerTools', { conversationId: 'c1' }));
      assert.deepEqual(answer, { confirmed: true });
      assert.deepEqual(posted.filter((m) => m.type === 'confirm'), [
        {
          type: 'confirm',
          id: 'confirm-1',
          turnId: 'turn-tools',
          text: 'Delete 3 entities?',
          detail: 'Asked by the tool entities.delete.',
          choices: [{ label: 'Confirm', kind: 'allow' }, { label: 'Cancel', kind: 'reject' }],
        },
      ]);
    } finally {
      await client.dispose();
    }
  });
});

describe('notifications before their turn is announced (stand-in daemon)', () => {
  test('tool-call pieces, chunks and the final response that come before {turnId} reach the turn and the page', async () => {
    const client = new GenaiClient(new DaemonProcess({ command: process.execPath, args: [join(__dirname, 'support', 'fake-tools-daemon.js')], restart: false }));
    await within(10_000, 'the stand-in daemon', client.start());
    try {
      const posted: ToView[] = [];
      const memory = new Map<string, unknown>();
      const controller = new ChatController(client, (m) => posted.push(m), {
        get: <T>(k: string) => memory.get(k) as T | undefined,
        update: async (k: string, v: unknown) => void memory.set(k, v),
      });
      await within(10_000, 'the turn', controller.handle({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'fake' } }));
      await within(10_000, 'the turn', controller.handle({ type: 'send', text: 'Who comes first?' }));
      assert.deepEqual(
        posted.filter((m) => m.type !== 'conversation' && m.type !== 'title'),
        [
          { type: 'userMessage', text: 'Who comes first?' },
          { type: 'toolCall', turnId: 'turn-early', index: 0, name: 'events.getEvents', id: 'call_1' },
          { type: 'chunk', turnId: 'turn-early', delta: 'Early ' },
          { type: 'chunk', turnId: 'turn-early', delta: 'bird.' },
          { type: 'turnStarted', turnId: 'turn-early' },
          { type: 'turnEnded', turnId: 'turn-early', summary: 'Early bird.', detailedResponse: ['came first'], isSuccess: true, error: undefined },
        ],
      );
    } finally {
      await client.dispose();
    }
  });
});

describe('chat controller', () => {
  test('remembers the new-chat choice, and a turn becomes page messages in order', async () => {
    const client = newClient();
    await within(10_000, 'the daemon to start', client.start());
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>();
    const store = { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) };
    try {
      const controller = new ChatController(client, (m) => posted.push(m), store);
      await controller.handle({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'fast' } });
      assert.equal(posted.find((m) => m.type === 'error'), undefined, JSON.stringify(posted));
      await controller.askAboutSelection({ question: 'What does it do?', fileName: 'src/a.ts', language: 'typescript', text: 'let a = `x`;', startLine: 3, endLine: 3 });
      const kinds = posted.map((m) => m.type);
      assert.deepEqual(kinds.filter((k) => k !== 'chunk'), ['conversation', 'userMessage', 'turnStarted', 'turnEnded', 'title']);
      const user = posted.find((m) => m.type === 'userMessage') as Extract<ToView, { type: 'userMessage' }>;
      assert.match(user.text, /^What does it do\?\n\nFrom `src\/a\.ts, lines 3-3` \(typescript\):\n\n```typescript\nlet a = `x`;\n```\n$/);
      const end = posted.find((m) => m.type === 'turnEnded') as Extract<ToView, { type: 'turnEnded' }>;
      assert.equal(end.isSuccess, true);
      assert.equal(end.summary, REPLY);
      assert.equal(posted.filter((m) => m.type === 'chunk').length, 4);

      // A second controller (a new window) preselects the remembered choice.
      const next: ToView[] = [];
      await new ChatController(client, (m) => next.push(m), store).handle({ type: 'ready' });
      const components = next.find((m) => m.type === 'components') as Extract<ToView, { type: 'components' }>;
      assert.deepEqual(components.choices.last, { feature: 'assistant', serviceProvider: 'fast' });
      const conversations = next.find((m) => m.type === 'conversations') as Extract<ToView, { type: 'conversations' }>;
      assert.ok(conversations.items.some((c) => c.title.startsWith('What does it do?')));

      // The first reply gives the header the title the history keeps.
      const titled = posted.find((m) => m.type === 'title') as Extract<ToView, { type: 'title' }>;
      assert.ok(conversations.items.some((c) => c.id === titled.id && c.title === titled.title), JSON.stringify(titled));

      // Errors are posted to the page, not dropped.
      await controller.handle({ type: 'openConversation', id: 'no-such-conversation' });
      const error = posted.at(-1) as Extract<ToView, { type: 'error' }>;
      assert.equal(error.type, 'error');
      assert.match(error.message, /unknownConversation/);
    } finally {
      await client.dispose();
    }
  });

  test('a message sent before any chat is kept until one is chosen, then sent in it', async () => {
    const client = newClient();
    await within(10_000, 'the daemon to start', client.start());
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>();
    const store = { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) };
    try {
      const controller = new ChatController(client, (m) => posted.push(m), store);
      await controller.handle({ type: 'ready' });
      // Nothing is chosen by default here (a config, no [defaults]): the form opens, the text waits.
      await controller.handle({ type: 'send', text: 'Remember   this\nplease' });
      assert.deepEqual(posted.filter((m) => m.type === 'show'), [{ type: 'show', panel: 'newChat' }]);
      assert.equal(posted.filter((m) => m.type === 'userMessage' || m.type === 'error').length, 0, JSON.stringify(posted));
      posted.length = 0;
      await within(10_000, 'the turn', controller.handle({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'fast' } }));
      assert.deepEqual(posted.map((m) => m.type).filter((k) => k !== 'chunk'), ['conversation', 'userMessage', 'turnStarted', 'turnEnded', 'title']);
      assert.deepEqual(posted[1], { type: 'userMessage', text: 'Remember   this\nplease' });
      const end = posted.find((m) => m.type === 'turnEnded') as Extract<ToView, { type: 'turnEnded' }>;
      assert.equal(end.summary, REPLY);
      assert.equal((posted.at(-1) as Extract<ToView, { type: 'title' }>).title, 'Remember this please');
      // Sent once: the next message goes in the same conversation, alone.
      posted.length = 0;
      await within(10_000, 'the second turn', controller.handle({ type: 'send', text: 'And this' }));
      assert.deepEqual(posted.filter((m) => m.type === 'userMessage'), [{ type: 'userMessage', text: 'And this' }]);
      assert.equal(posted.some((m) => m.type === 'title' || m.type === 'conversation'), false, JSON.stringify(posted));

      // A message sent while another chat is being started (the page's "start", then Enter at
      // once) goes in the new chat, after it is shown, never in the one it replaces.
      posted.length = 0;
      const previous = controller.current?.id;
      const started = controller.handle({ type: 'newChat', choice: { feature: 'assistant', serviceProvider: 'fast' } });
      const sent = controller.handle({ type: 'send', text: 'For the new chat' });
      await within(10_000, 'the new chat and its turn', Promise.all([started, sent]));
      const order = posted.map((m) => m.type).filter((k) => k === 'conversation' || k === 'userMessage');
      assert.deepEqual(order, ['conversation', 'userMessage'], JSON.stringify(posted));
      const shown = posted.find((m) => m.type === 'conversation') as Extract<ToView, { type: 'conversation' }>;
      assert.notEqual(shown.id, previous);
      assert.equal(controller.current?.id, shown.id);
    } finally {
      await client.dispose();
    }
  });
});

describe('permission asks of the workspace tools (real daemon, scripted model)', () => {
  const OPTIONS = ['allow_once', 'allow_always', 'reject_once', 'reject_always'];
  let scripted: ScriptedProvider;
  let scriptedEnv: NodeJS.ProcessEnv;
  let project: string;
  let client: GenaiClient<DaemonProcess>;
  /** Every RequestConfirmation the hook got, and the answers it is to give, in order. */
  const asked: RequestConfirmationParams[] = [];
  const answers: Array<PermissionOption | true> = [];
  /** Where the client's confirm hook goes when a test sets it (else: `answers`). */
  let confirmVia: ((request: RequestConfirmationParams) => Promise<RequestConfirmationResult>) | undefined;
  const file = (rel: string) => join(project, rel);
  const read = (rel: string) => (existsSync(file(rel)) ? readFileSync(file(rel), 'utf8') : undefined);

  before(async () => {
    scripted = await startScriptedProvider({ reply: 'Done.' });
    scriptedEnv = daemonEnv({ scripted: scripted.url });
    project = mkdtempSync(join(tmpdir(), 'genai-vscode-project-'));
    mkdirSync(join(project, 'src'));
    writeFileSync(file('src/a.txt'), 'alpha\n');
    writeFileSync(file('src/b.txt'), 'beta\n');
    client = new GenaiClient(new DaemonProcess({ command: genaiBin, env: scriptedEnv, restart: false }), {
      confirm: async (request): Promise<boolean | RequestConfirmationResult> => {
        asked.push(request);
        if (confirmVia) return confirmVia(request);
        // An ask the test did not expect is refused (and counted by the assertions).
        const answer = answers.shift() ?? 'reject_once';
        return answer === true ? true : { confirmed: answer.startsWith('allow'), option: answer };
      },
    });
    await within(10_000, 'the daemon to start', client.start());
  });
  after(async () => {
    await client?.dispose();
    scripted?.stop();
  });

  /** A chat controller whose conversations get the workspace of `project` under `mode`. */
  function controllerFor(mode: WorkspaceSettings['mode']): { controller: ChatController; posted: ToView[] } {
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>();
    const controller = new ChatController(
      client,
      (m) => posted.push(m),
      { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) },
      { workspace: () => ({ cwd: project, tools: true, mode, assistantToo: true }) },
    );
    return { controller, posted };
  }

  /** The model calls `tool` with `args`, then says `reply`; the turn's end as the page got it. */
  async function turn(controller: ChatController, posted: ToView[], tool: string, args: object, reply: string) {
    await scripted.push({ reply: '', toolCalls: [[`workspace__${tool}`, JSON.stringify(args)]] });
    await scripted.push({ reply });
    posted.length = 0;
    await within(20_000, `the turn calling ${tool}`, controller.send(`Please ${tool}`));
    const end = posted.find((m) => m.type === 'turnEnded');
    assert.ok(end && end.type === 'turnEnded', JSON.stringify(posted));
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(end.summary, reply);
    return end;
  }

  /** What the model was told the last tool call gave (the last request's tool message). */
  async function lastToolResult(): Promise<string> {
    const bodies = await scripted.requests();
    const messages: Array<{ role: string; content: unknown }> = bodies.at(-1).messages;
    const tool = messages.filter((m) => m.role === 'tool').at(-1);
    assert.ok(tool, JSON.stringify(messages));
    return typeof tool.content === 'string' ? tool.content : JSON.stringify(tool.content);
  }

  test('an assistant chat gets the workspace tools: allow_always edits and saves the rule, reject_once refuses once', async () => {
    const { controller, posted } = controllerFor('ask');
    await controller.newChat({ feature: 'assistant', serviceProvider: 'scripted' });
    assert.equal(controller.current!.feature, 'tools', 'the assistant runs on tools to get them');

    // 1. An edit asks; "always allow" lets it run and saves the folder's rule.
    answers.push('allow_always');
    const first = await turn(controller, posted, 'edit_file', { path: 'src/a.txt', old_text: 'alpha', new_text: 'ALPHA' }, 'Edited a.');
    assert.equal(asked.length, 1, JSON.stringify(asked));
    const ask = asked[0];
    assert.equal(ask.text, 'Edit src/a.txt');
    assert.equal(ask.tool, 'workspace.edit_file');
    assert.equal(ask.toolCallId, 'call_1');
    assert.equal(ask.conversationId, controller.current!.id);
    assert.equal(ask.link ?? undefined, undefined, 'a permission ask has no link');
    assert.ok(ask.permission, 'the ask carries the permission');
    assert.deepEqual(ask.permission.options, OPTIONS);
    assert.equal(ask.permission.rule, 'workspace.edit_file(src/**)');
    assert.equal(ask.permission.subject, 'src/a.txt');
    assert.equal(ask.permission.reason, 'mode ask');
    assert.deepEqual(ask.permission.arguments, { path: 'src/a.txt', old_text: 'alpha', new_text: 'ALPHA' });
    assert.equal(read('src/a.txt'), 'ALPHA\n');
    assert.ok(first.detailedResponse.some((l) => l.includes('allow_always')), first.detailedResponse.join('\n'));
    const saved = readFileSync(join(scriptedEnv.GENAI_CONFIG_DIR!, 'projects.toml'), 'utf8');
    assert.ok(saved.includes('"workspace.edit_file(src/**)"'), saved);

    // 2. Another file of that folder: the saved rule allows it without asking.
    await turn(controller, posted, 'edit_file', { path: 'src/b.txt', old_text: 'beta', new_text: 'BETA' }, 'Edited b.');
    assert.equal(asked.length, 1, 'no ask for what the saved rule allows');
    assert.equal(read('src/b.txt'), 'BETA\n');

    // 3. A new file at the root asks; "reject" leaves the disk alone and the model is told.
    answers.push('reject_once');
    await turn(controller, posted, 'write_file', { path: 'top.txt', content: 'top\n' }, 'Not written.');
    assert.equal(asked.length, 2);
    assert.equal(asked[1].text, 'Write top.txt');
    assert.equal(asked[1].permission?.rule, 'workspace.write_file(/top.txt)');
    assert.deepEqual(asked[1].permission?.options, OPTIONS);
    assert.equal(read('top.txt'), undefined, 'a rejected write writes nothing');
    assert.match(await lastToolResult(), /^Refused: workspace\.write_file\(top\.txt\) was not allowed \(the user \(reject_once\)\)/);

    // 4. "Reject" held once: the same write asks again; a plain `true` allows it once.
    answers.push(true);
    await turn(controller, posted, 'write_file', { path: 'top.txt', content: 'top\n' }, 'Written.');
    assert.equal(asked.length, 3, 'reject_once is not remembered');
    assert.equal(read('top.txt'), 'top\n');
    assert.deepEqual(answers, [], 'every answer was asked for');
  });

  test('mode read-only refuses an edit without asking', async () => {
    const before = asked.length;
    const { controller, posted } = controllerFor('read-only');
    await controller.newChat({ feature: 'assistant', serviceProvider: 'scripted' });
    await turn(controller, posted, 'write_file', { path: 'src/a.txt', content: 'overwritten\n' }, 'Could not.');
    assert.equal(asked.length, before, 'read-only denies, it does not ask');
    assert.equal(read('src/a.txt'), 'ALPHA\n');
    assert.match(await lastToolResult(), /^Refused: workspace\.write_file\(src\/a\.txt\) was not allowed \(mode read-only\)/);
  });

  test('mode plan refuses an edit saying how to carry the plan out; the plan reaches the page', async () => {
    const before = asked.length;
    const { controller, posted } = controllerFor('plan');
    await controller.newChat({ feature: 'assistant', serviceProvider: 'scripted' });
    await turn(controller, posted, 'write_file', { path: 'src/a.txt', content: 'overwritten\n' }, 'Could not.');
    assert.equal(asked.length, before, 'plan mode denies, it does not ask');
    assert.equal(read('src/a.txt'), 'ALPHA\n');
    assert.match(await lastToolResult(), /\(plan mode: .*--mode edit\)/);
    const entries = [
      { content: 'Rewrite src/a.txt', status: 'pending', priority: 'high' },
      { content: 'Check it', status: 'pending' },
    ];
    const end = await turn(controller, posted, 'plan', { entries }, 'Planned.');
    assert.deepEqual(
      posted.filter((m) => m.type === 'plan'),
      [{ type: 'plan', turnId: end.turnId, entries }],
    );
  });

  test('the page\'s dialog: an ask whose turn is cancelled while it waits is closed on the page and writes nothing', async () => {
    const { controller, posted } = controllerFor('ask');
    let shown!: (m: Extract<ToView, { type: 'confirm' }>) => void;
    const dialogShown = new Promise<Extract<ToView, { type: 'confirm' }>>((resolve) => (shown = resolve));
    confirmVia = (request) => {
      const answer = controller.confirm(request);
      const m = posted.find((p) => p.type === 'confirm');
      if (m && m.type === 'confirm') shown(m);
      return answer;
    };
    try {
      await controller.newChat({ feature: 'tools', serviceProvider: 'scripted' });
      await scripted.push({ reply: '', toolCalls: [['workspace__write_file', JSON.stringify({ path: 'late.txt', content: 'late\n' })]] });
      await scripted.push({ reply: 'Too late.' });
      const sent = controller.send('Write late.txt');
      const ask = await within(20_000, 'the ask on the page', dialogShown);
      assert.equal(ask.text, 'Write late.txt');
      assert.deepEqual(ask.choices.map((c) => c.label), ['Allow once', 'Always allow (workspace.write_file(/late.txt))', 'Reject', 'Always reject in this conversation']);
      assert.deepEqual(ask.choices.map((c) => c.kind), ['allow', 'allow', 'reject', 'reject']);
      await controller.cancel();
      await within(20_000, 'the cancelled turn', sent);
      const end = posted.find((m) => m.type === 'turnEnded');
      assert.ok(end && end.type === 'turnEnded' && end.error?.kind === 'cancelled', JSON.stringify(end));
      assert.deepEqual(posted.filter((m) => m.type === 'confirmClosed'), [{ type: 'confirmClosed', id: ask.id }]);
      assert.equal(read('late.txt'), undefined);
      // An answer that comes after is ignored.
      await controller.handle({ type: 'confirmAnswer', id: ask.id, choice: 0 });
      assert.equal(read('late.txt'), undefined);
    } finally {
      confirmVia = undefined;
    }
  });

  test('conversationParams: tools only where the daemon takes them, mode with every tools chat', () => {
    const w: WorkspaceSettings = { cwd: '/p', tools: true, mode: 'edit', assistantToo: true };
    assert.deepEqual(conversationParams({ feature: 'assistant', serviceProvider: 'x' }, w), {
      feature: 'tools', serviceProvider: 'x', modelConfiguration: undefined, model: undefined, cwd: '/p', tools: ['workspace', '*'], mode: 'edit',
    });
    assert.deepEqual(conversationParams({ feature: 'assistant', serviceProvider: 'x' }, { ...w, assistantToo: false }), {
      feature: 'assistant', serviceProvider: 'x', modelConfiguration: undefined, model: undefined, cwd: '/p',
    });
    assert.deepEqual(conversationParams({ feature: 'tools', serviceProvider: 'x' }, { ...w, tools: false }), {
      feature: 'tools', serviceProvider: 'x', modelConfiguration: undefined, model: undefined, cwd: '/p', mode: 'edit',
    });
    assert.deepEqual(conversationParams({ feature: 'reviewer', serviceProvider: 'x' }, w), {
      feature: 'reviewer', serviceProvider: 'x', modelConfiguration: undefined, model: undefined, cwd: '/p',
    });
    assert.deepEqual(conversationParams({ feature: 'assistant', serviceProvider: 'x' }), {
      feature: 'assistant', serviceProvider: 'x', modelConfiguration: undefined, model: undefined,
    });
  });
});

describe('editor tools and the editor\'s files (real daemon, scripted model)', () => {
  let scripted: ScriptedProvider;
  let scriptedEnv: NodeJS.ProcessEnv;
  let project: string;
  /** A client without the editor capability: the daemon writes the files itself. */
  let client: GenaiClient<DaemonProcess>;
  /** A client declaring `capabilities.editor`: the files are read and written through it. */
  let editorClient: GenaiClient<DaemonProcess>;
  const asked: RequestConfirmationParams[] = [];
  const answers: PermissionOption[] = [];
  /** The editor's unsaved texts, by absolute path (what ReadTextFile answers before the disk). */
  const buffers = new Map<string, string>();
  const reads: Array<{ conversationId: string; path: string }> = [];
  const writes: Array<{ conversationId: string; turnId: string; callId: string; path: string; text: string }> = [];
  /** When set, the editor refuses writes with this message (as Reject in the diff review does). */
  let rejectWrites: string | undefined;
  const file = (rel: string) => join(project, rel);
  const read = (rel: string) => (existsSync(file(rel)) ? readFileSync(file(rel), 'utf8') : undefined);
  const confirm = async (request: RequestConfirmationParams): Promise<RequestConfirmationResult> => {
    asked.push(request);
    const option = answers.shift() ?? 'reject_once';
    return { confirmed: option.startsWith('allow'), option };
  };
  /** What the editor tools read: two open documents, one unsaved, a selection and a diagnostic. */
  const host: EditorHost = {
    openDocuments: () => [
      { path: file('src/a.txt'), dirty: true, languageId: 'plaintext' },
      { path: file('src/b.txt'), dirty: false, languageId: 'plaintext' },
    ],
    activeEditor: () => ({ path: file('src/a.txt'), selection: { startLine: 1, endLine: 1, text: 'alpha' } }),
    diagnostics: (path) =>
      path === 'src/a.txt' ? [{ severity: 'warning', message: 'a word in lower case', source: 'fake-lint', startLine: 1, startColumn: 1, endLine: 1, endColumn: 6 }] : [],
    bufferText: async (path) => (path === 'src/a.txt' ? 'alpha (unsaved)\n' : null),
  };

  before(async () => {
    scripted = await startScriptedProvider({ reply: 'Done.' });
    scriptedEnv = daemonEnv({ scripted: scripted.url });
    project = mkdtempSync(join(tmpdir(), 'genai-vscode-editor-'));
    mkdirSync(join(project, 'src'));
    writeFileSync(file('src/a.txt'), 'alpha\n');
    writeFileSync(file('src/b.txt'), 'beta\n');
    client = new GenaiClient(new DaemonProcess({ command: genaiBin, env: scriptedEnv, restart: false }), { confirm });
    editorClient = new GenaiClient(new DaemonProcess({ command: genaiBin, env: scriptedEnv, restart: false }), {
      confirm,
      editor: {
        readTextFile: async (request) => {
          reads.push(request);
          return buffers.get(request.path) ?? (existsSync(request.path) ? readFileSync(request.path, 'utf8') : null);
        },
        writeTextFile: async (request) => {
          if (rejectWrites) throw new Error(rejectWrites);
          writes.push(request);
          buffers.set(request.path, request.text);
        },
      },
    });
    await within(10_000, 'the daemons to start', Promise.all([client.start(), editorClient.start()]));
  });
  after(async () => {
    await client?.dispose();
    await editorClient?.dispose();
    scripted?.stop();
  });
  // An answer a failed test left unused must not answer the next test's ask.
  beforeEach(() => {
    answers.length = 0;
  });

  /** The tool messages of the model's last request, as text. */
  async function lastToolResults(): Promise<string[]> {
    const bodies = await scripted.requests();
    const messages: Array<{ role: string; content: unknown }> = bodies.at(-1).messages;
    return messages.filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
  }

  /** The model makes `calls`, then replies `reply`; the turn's end. */
  async function turn(conversation: Conversation, calls: Array<[string, object]>, reply: string) {
    await scripted.push({ reply: '', toolCalls: calls.map(([name, args]) => [name, JSON.stringify(args)]) });
    await scripted.push({ reply });
    const t = await conversation.send(`Please call ${calls.map(([n]) => n).join(', ')}`);
    const end = await within(20_000, `the turn calling ${calls.map(([n]) => n).join(', ')}`, t.done);
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(end.summary, reply);
    return { turn: t, end };
  }

  test('the editor tools are registered; the model\'s calls reach the client (OnToolCall) and the answers reach the model', async () => {
    const names = await registerEditorTools(client, host);
    assert.deepEqual(names, ['editor.open_files', 'editor.diagnostics', 'editor.buffer_text']);
    // A tool of a test's own, to see OnToolCall's params.
    const calls: Array<{ args: Record<string, unknown>; call: { conversationId: string; turnId: string; callId: string; name: string } }> = [];
    assert.equal(
      await client.registerTool('echo', { description: 'Says the text back.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, readOnly: true }, (args, call) => {
        calls.push({ args, call });
        return [{ type: 'text', text: `echo: ${String(args.text)}` }];
      }),
      'editor.echo',
    );
    const conversation = await client.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['editor'], mode: 'ask', cwd: project });
    const before = asked.length;
    const { turn: t } = await turn(
      conversation,
      [
        ['editor__open_files', {}],
        ['editor__diagnostics', { path: 'src/a.txt' }],
        ['editor__buffer_text', { path: 'src/a.txt' }],
        ['editor__echo', { text: 'hi' }],
      ],
      'Seen.',
    );
    assert.equal(asked.length, before, 'read-only tools run without asking in mode ask');
    const results = await lastToolResults();
    assert.equal(results.length, 4, JSON.stringify(results));
    const openFiles = JSON.parse(results[0]);
    assert.deepEqual(openFiles.documents.map((d: { dirty: boolean }) => d.dirty), [true, false]);
    assert.equal(openFiles.documents[0].path, file('src/a.txt'));
    assert.deepEqual(openFiles.activeEditor, { path: file('src/a.txt'), selection: { startLine: 1, endLine: 1, text: 'alpha' } });
    assert.deepEqual(JSON.parse(results[1]).diagnostics.map((d: { message: string; severity: string }) => [d.severity, d.message]), [['warning', 'a word in lower case']]);
    assert.equal(results[2], 'alpha (unsaved)\n');
    assert.equal(results[3], 'echo: hi');
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0].args, { text: 'hi' });
    assert.deepEqual(calls[0].call, { conversationId: conversation.id, turnId: t.id, callId: 'call_4', name: 'echo', arguments: { text: 'hi' } });

    // A missing file is the tool's error; a name this client does not host is answered with a JSON-RPC error.
    (client as unknown as { tools: Map<string, unknown> }).tools.delete('echo');
    await turn(conversation, [['editor__buffer_text', { path: 'nowhere.txt' }], ['editor__echo', { text: 'again' }]], 'Failed.');
    const failed = await lastToolResults();
    assert.match(failed.at(-2)!, /no such file: nowhere\.txt/);
    assert.match(failed.at(-1)!, /no tool echo is hosted by this client/);
    assert.equal(calls.length, 1);
    await client.unregisterTool('diagnostics');
    await assert.rejects(client.unregisterTool('diagnostics'), (err: unknown) => err instanceof GenaiError && err.code === -32602);
    await assert.rejects(
      client.registerTool('bad name!', { description: 'x', inputSchema: { type: 'object' } }, () => ''),
      (err: unknown) => err instanceof GenaiError && err.code === -32602 && /name/.test(err.message),
    );
    await assert.rejects(
      client.registerTool('no_object', { description: 'x', inputSchema: { type: 'string' } }, () => ''),
      (err: unknown) => err instanceof GenaiError && err.code === -32602 && /inputSchema/.test(err.message),
    );
  });

  test('a tool call the client does not answer in time fails with a time-out the model sees; the turn ends', async () => {
    let called = 0;
    await client.registerTool('never', { description: 'Never answers.', inputSchema: { type: 'object' }, readOnly: true, timeoutMs: 500 }, () => {
      called++;
      return new Promise<never>(() => {});
    });
    const conversation = await client.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['editor.never'], mode: 'ask' });
    const started = Date.now();
    const { end } = await turn(conversation, [['editor__never', {}]], 'It timed out.');
    assert.equal(called, 1, 'OnToolCall reached the client');
    assert.ok(Date.now() - started < 10_000, 'the turn did not wait for the default time-out');
    const [result] = await lastToolResults();
    assert.match(result, /editor\.never: the client did not answer within/);
    assert.ok(end.detailedResponse.some((l) => l.includes('editor.never')), end.detailedResponse.join('\n'));
  });

  let stamped = 0;
  test('mode read-only refuses a tool that is not read-only: no OnToolCall', async () => {
    await client.registerTool('stamp', { description: 'Stamps the file.', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }, () => {
      stamped++;
      return 'stamped';
    });
    const conversation = await client.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['editor'], mode: 'read-only' });
    const before = asked.length;
    await turn(conversation, [['editor__stamp', { path: 'src/a.txt' }]], 'Not stamped.');
    assert.equal(asked.length, before, 'read-only denies, it does not ask');
    assert.equal(stamped, 0, 'no OnToolCall for a denied call');
    const [result] = await lastToolResults();
    assert.match(result, /^Refused: editor\.stamp/);
  });

  test('mode ask asks before a tool that is not read-only; rejected, it never reaches the client', async () => {
    const conversation = await client.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['editor'], mode: 'ask' });
    const before = asked.length;
    answers.push('reject_once');
    await turn(conversation, [['editor__stamp', { path: 'src/a.txt' }]], 'Not stamped.');
    assert.equal(asked.length, before + 1, 'the user was asked');
    assert.equal(asked.at(-1)!.tool, 'editor.stamp');
    assert.deepEqual(asked.at(-1)!.permission?.options, ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
    assert.equal(stamped, 0, 'no OnToolCall for a rejected call');
    const [result] = await lastToolResults();
    assert.match(result, /^Refused: editor\.stamp/);
    // Allowed once, it runs.
    answers.push('allow_once');
    await turn(conversation, [['editor__stamp', { path: 'src/a.txt' }]], 'Stamped.');
    assert.equal(stamped, 1);
    assert.equal((await lastToolResults()).at(-1), 'stamped');
  });

  test('a daemon whose client leaves while an OnToolCall is pending ends cleanly; the stored history stays consistent', async () => {
    const own = await startScriptedProvider({ reply: 'After.' });
    const ownEnv = daemonEnv({ own: own.url });
    const child = spawn(genaiBin, ['daemon'], { env: ownEnv, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    let pending!: (p: unknown) => void;
    const toolCalled = new Promise<unknown>((resolve) => (pending = resolve));
    conn.onRequest('OnToolCall', (params: unknown) => {
      pending(params);
      return new Promise<never>(() => {});
    });
    conn.onError(() => undefined);
    conn.listen();
    let conversationId: string;
    try {
      await conn.sendRequest('Initialize', { clientInfo: { name: 'leaving' }, capabilities: { streaming: true } });
      await conn.sendRequest('RegisterTool', { name: 'hang', description: 'Hangs.', inputSchema: { type: 'object' }, readOnly: true });
      const opened = (await conn.sendRequest('CreateConversation', { feature: 'tools', serviceProvider: 'own', tools: ['editor'], mode: 'ask' })) as { conversationId: string };
      conversationId = opened.conversationId;
      await own.push({ reply: '', toolCalls: [['editor__hang', '{}']] });
      await conn.sendRequest('OnNewMessage', { conversationId, message: 'Hang, please' });
      const call = (await within(20_000, 'the OnToolCall', toolCalled)) as { name: string; conversationId: string };
      assert.equal(call.name, 'hang');
      assert.equal(call.conversationId, conversationId);
      // The client goes away: its end of the pipe closes.
      child.stdin.end();
      const exit = await within(15_000, 'the daemon to exit', exited);
      assert.deepEqual(exit, { code: 0, signal: null }, stderr);
      assert.doesNotMatch(stderr, /panick/i, stderr);
    } finally {
      conn.dispose();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    // A new daemon on the same data: every tool call stored has its result after it.
    const again = new GenaiClient(new DaemonProcess({ command: genaiBin, env: ownEnv, restart: false }));
    await within(10_000, 'the second daemon', again.start());
    try {
      const history = await again.conversationHistory(conversationId!);
      const open = new Set<string>();
      for (const m of history) {
        const parts = Array.isArray(m.content) ? m.content : [];
        for (const p of parts) {
          if (typeof p !== 'string' && p.type === 'toolCall') open.add(p.id);
          if (typeof p !== 'string' && p.type === 'toolResult') assert.ok(open.delete(p.toolCallId), `a result for an unknown call: ${JSON.stringify(m)}`);
        }
      }
      assert.deepEqual([...open], [], `calls without a result: ${JSON.stringify(history)}`);
      if (history.length) assert.equal(history[0].role, 'user', JSON.stringify(history));
    } finally {
      await again.dispose();
      own.stop();
    }
  });

  test('with the editor capability the workspace tools read the editor\'s text and write through WriteTextFile, never the disk', async () => {
    assert.deepEqual(editorClient.capabilities(), { streaming: true, editor: { readTextFile: true, writeTextFile: true } });
    buffers.set(file('src/a.txt'), 'alpha (unsaved)\n');
    const conversation = await editorClient.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['workspace'], mode: 'edit', cwd: project });

    // 1. An edit of the unsaved text (mode edit: no ask): one WriteTextFile with the whole new text.
    const { turn: t, end } = await turn(conversation, [['workspace__edit_file', { path: 'src/a.txt', old_text: 'unsaved', new_text: 'edited' }]], 'Edited.');
    assert.ok(reads.some((r) => r.path === file('src/a.txt') && r.conversationId === conversation.id), JSON.stringify(reads));
    assert.deepEqual(writes, [{ conversationId: conversation.id, turnId: t.id, callId: 'call_1', path: file('src/a.txt'), text: 'alpha (edited)\n' }]);
    assert.equal(read('src/a.txt'), 'alpha\n', 'the daemon wrote nothing itself');
    // changedFiles: absolute paths (schemas/notification.OnFeatureResponse.json).
    assert.deepEqual(end.changedFiles, [file('src/a.txt')]);

    // 2. The user rejects the edit: the model is told the editor's message.
    rejectWrites = 'the user rejected the edit';
    try {
      await turn(conversation, [['workspace__write_file', { path: 'src/new.txt', content: 'new\n' }]], 'Not written.');
    } finally {
      rejectWrites = undefined;
    }
    assert.equal(writes.length, 1);
    assert.equal(read('src/new.txt'), undefined);
    assert.match((await lastToolResults()).at(-1)!, /the user rejected the edit/);

    // 3. Mode ask: the ask carries the diff of the whole file (the editor's text), then the write comes.
    const asking = await editorClient.createConversation({ feature: 'tools', serviceProvider: 'scripted', tools: ['workspace'], mode: 'ask', cwd: project });
    answers.push('allow_once');
    const before = asked.length;
    const third = await turn(asking, [['workspace__edit_file', { path: 'src/a.txt', old_text: 'alpha', new_text: 'ALPHA' }]], 'Capitalized.');
    assert.equal(asked.length, before + 1);
    assert.deepEqual(asked.at(-1)!.permission?.diff, { path: file('src/a.txt'), oldText: 'alpha (edited)\n', newText: 'ALPHA (edited)\n' });
    assert.deepEqual(writes.at(-1), { conversationId: asking.id, turnId: third.turn.id, callId: 'call_1', path: file('src/a.txt'), text: 'ALPHA (edited)\n' });
    answers.push('allow_once');
    await turn(asking, [['workspace__write_file', { path: 'src/c.txt', content: 'see\n' }]], 'Created.');
    assert.deepEqual(asked.at(-1)!.permission?.diff, { path: file('src/c.txt'), oldText: null, newText: 'see\n' });
    assert.equal(writes.at(-1)!.text, 'see\n');
    assert.equal(read('src/c.txt'), undefined, 'the daemon wrote nothing itself');
    buffers.clear();
  });

  test('the chat page: an edit ask shows its diff, the turn\'s end offers Undo (changedFiles), and Undo puts the file back', async () => {
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>();
    let controller!: ChatController;
    // The page answers every ask with its first choice (Allow once).
    const pageClient = new GenaiClient(new DaemonProcess({ command: genaiBin, env: scriptedEnv, restart: false }), {
      confirm: (request) => controller.confirm(request),
    });
    controller = new ChatController(
      pageClient,
      (m) => {
        posted.push(m);
        if (m.type === 'confirm') void controller.handle({ type: 'confirmAnswer', id: m.id, choice: 0 });
      },
      { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) },
      { workspace: () => ({ cwd: project, tools: true, mode: 'ask', assistantToo: true }) },
    );
    await within(10_000, 'the daemon', pageClient.start());
    try {
      await controller.newChat({ feature: 'tools', serviceProvider: 'scripted' });
      await scripted.push({ reply: '', toolCalls: [['workspace__edit_file', JSON.stringify({ path: 'src/b.txt', old_text: 'beta', new_text: 'BETA' })]] });
      await scripted.push({ reply: 'Edited b.' });
      await within(20_000, 'the edit turn', controller.send('Capitalize b.txt'));
      assert.equal(read('src/b.txt'), 'BETA\n');
      const ask = posted.find((m) => m.type === 'confirm');
      assert.ok(ask && ask.type === 'confirm', JSON.stringify(posted));
      assert.deepEqual(ask.diff, {
        path: file('src/b.txt'),
        created: false,
        lines: [
          { kind: 'hunk', text: '@@ -1,1 +1,1 @@' },
          { kind: 'remove', text: 'beta' },
          { kind: 'add', text: 'BETA' },
        ],
        added: 1,
        removed: 1,
      });
      const end = posted.find((m) => m.type === 'turnEnded');
      assert.ok(end && end.type === 'turnEnded' && end.isSuccess, JSON.stringify(end));
      assert.deepEqual(end.changedFiles, [file('src/b.txt')]);
      assert.equal(end.edits?.length, 1);
      assert.equal(end.edits![0].path, 'src/b.txt');
      assert.equal(end.edits![0].partial, undefined, 'the whole file\'s diff, from the ask');
      assert.deepEqual(end.edits![0].lines.map((l) => l.kind), ['hunk', 'remove', 'add']);

      // Undo (what the page's button sends).
      await controller.handle({ type: 'undo', turnId: end.turnId });
      const undone = posted.find((m) => m.type === 'undone');
      assert.deepEqual(undone, { type: 'undone', turnId: end.turnId, ok: true, text: 'Undone: src/b.txt restored' });
      assert.equal(read('src/b.txt'), 'beta\n');
      // A turn id the daemon does not know: the failure is shown, not thrown.
      await controller.handle({ type: 'undo', turnId: 'no-such-turn' });
      const failed = posted.filter((m) => m.type === 'undone').at(-1);
      assert.ok(failed && failed.type === 'undone' && !failed.ok && /^Undo failed: /.test(failed.text), JSON.stringify(failed));
    } finally {
      await pageClient.dispose();
    }
  });
});

describe('commands: ListCommands and RunCommand (real daemon, scripted model)', () => {
  let scripted: ScriptedProvider;
  let client: GenaiClient<DaemonProcess>;
  let project: string;
  const path = (rel: string) => join(project, rel);

  before(async () => {
    scripted = await startScriptedProvider({ reply: 'Done.' });
    const commandsEnv = daemonEnv({ scripted: scripted.url });
    // A home of its own: no user or Claude Code commands of the machine's user.
    const home = mkdtempSync(join(tmpdir(), 'genai-vscode-home-'));
    commandsEnv.HOME = home;
    commandsEnv.CODEX_HOME = join(home, '.codex');
    project = mkdtempSync(join(tmpdir(), 'genai-vscode-commands-'));
    mkdirSync(path('.genai/commands'), { recursive: true });
    mkdirSync(path('.claude/commands'), { recursive: true });
    writeFileSync(
      path('.genai/commands/translate.md'),
      '---\ndescription: Translate the input\narguments: [{name: lang, default: French}]\n---\nTranslate into {{lang}}:\n\n{{input}}\n',
    );
    writeFileSync(path('.genai/commands/greet.md'), '---\ndescription: Greet someone\narguments: [{name: who, description: whom to greet}]\n---\nSay hello to {{who}}.\n');
    writeFileSync(path('.genai/commands/broken.md'), '---\ndescription: Broken\ncolour: red\n---\nNever sent.\n');
    writeFileSync(path('.claude/commands/review.md'), '---\ndescription: Review\nargument-hint: [pr]\n---\nReview PR #$1.');
    client = new GenaiClient(new DaemonProcess({ command: genaiBin, env: commandsEnv, restart: false }));
    await within(10_000, 'the daemon to start', client.start());
  });
  after(async () => {
    await client?.dispose();
    scripted?.stop();
  });

  /** The text of the last user message of the model's last request. */
  async function lastUserText(): Promise<string> {
    const bodies = await scripted.requests();
    const messages: Array<{ role: string; content: unknown }> = bodies.at(-1).messages;
    const user = messages.filter((m) => m.role === 'user').at(-1);
    assert.ok(user, JSON.stringify(messages));
    if (typeof user.content === 'string') return user.content;
    return (user.content as Array<{ type: string; text?: string }>).map((p) => p.text ?? '').join('');
  }

  /** A GenaiError with code -32602 whose message matches `pattern`. */
  const invalidParams = (pattern: RegExp) => (err: unknown) => {
    assert.ok(err instanceof GenaiError, String(err));
    assert.equal(err.code, -32602, err.message);
    assert.match(err.message, pattern);
    return true;
  };

  test('ListCommands lists the project\'s, Claude Code\'s and the built-in commands, and the bad files with PATH:LINE', async () => {
    const { commands, errors } = await client.listCommands(project);
    const byName = new Map(commands.map((c) => [c.name, c]));
    assert.deepEqual(byName.get('translate'), {
      name: 'translate',
      title: 'translate',
      description: 'Translate the input',
      source: 'project',
      path: path('.genai/commands/translate.md'),
      arguments: [{ name: 'lang', default: 'French' }],
      apply: 'show',
    });
    const review = byName.get('review');
    assert.equal(review?.source, 'claude-project');
    assert.equal(review?.description, 'Review');
    // YAML reads `[pr]` as a list: the daemon says it as `["pr"]` today; the hint names `pr` either way.
    assert.match(review?.argumentHint ?? '', /\bpr\b/);
    assert.equal(review?.path, path('.claude/commands/review.md'));
    assert.deepEqual(byName.get('greet')?.arguments, [{ name: 'who', description: 'whom to greet' }]);
    for (const name of ['explain', 'improve', 'document', 'test', 'fix']) {
      assert.equal(byName.get(name)?.source, 'builtin', name);
    }
    assert.equal(byName.get('fix')?.apply, 'replace');
    assert.equal(byName.get('test')?.apply, 'insert_below');
    assert.equal(byName.has('broken'), false);
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0].name, 'broken');
    assert.equal(errors[0].path, path('.genai/commands/broken.md'));
    assert.ok(errors[0].message.startsWith(`${path('.genai/commands/broken.md')}:3: `), errors[0].message);
    assert.match(errors[0].message, /colour/);
  });

  let conversation: Conversation;
  test('RunCommand renders the command with its arguments and input, in a new conversation, and the turn completes', async () => {
    const { conversation: opened, started } = await client.runCommand({
      name: 'translate',
      arguments: { lang: 'German' },
      input: 'Good morning',
      cwd: project,
      model: 'scripted',
    });
    conversation = opened;
    assert.equal(started.conversationId, opened.id);
    assert.equal(opened.serviceProvider, 'scripted');
    assert.equal(started.text, 'Translate into German:\n\nGood morning');
    const chunks: string[] = [];
    const turn = opened.follow(started.turnId, { chunk: (delta) => chunks.push(delta) });
    const end = await within(10_000, 'the final OnFeatureResponse', turn.done);
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(end.turnId, started.turnId);
    assert.equal(end.summary, 'Done.');
    assert.equal(chunks.join(''), 'Done.');
    assert.equal(await lastUserText(), 'Translate into German:\n\nGood morning');
  });

  test('RunCommand in an open conversation: a Claude Code command takes the text as $1', async () => {
    const started = await conversation.runCommand({ name: 'review', text: '42', cwd: project });
    assert.equal(started.conversationId, conversation.id);
    assert.equal(started.text, 'Review PR #42.');
    const end = await within(10_000, 'the turn', conversation.follow(started.turnId).done);
    assert.equal(end.isSuccess, true, end.summary);
    assert.equal(await lastUserText(), 'Review PR #42.');
    const history = await conversation.history();
    assert.deepEqual(history.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  });

  test('RunCommand refuses a missing or unknown argument, an unknown name and a bad file with -32602 naming it', async () => {
    const before = (await scripted.requests()).length;
    await assert.rejects(client.runCommand({ name: 'greet', cwd: project, model: 'scripted' }), invalidParams(/`greet` needs its argument `who`/));
    await assert.rejects(
      conversation.runCommand({ name: 'translate', arguments: { colour: 'red' }, cwd: project }),
      invalidParams(/`translate` has no argument `colour`/),
    );
    await assert.rejects(client.runCommand({ name: 'nope', cwd: project, model: 'scripted' }), invalidParams(/no command `nope`/));
    await assert.rejects(client.runCommand({ name: 'broken', cwd: project, model: 'scripted' }), invalidParams(/broken\.md:3: .*colour/));
    assert.equal((await scripted.requests()).length, before, 'nothing reached the model');
  });

  test('the chat controller: /NAME with no chat open runs in a new conversation on the last choice (no default model); errors show', async () => {
    const posted: ToView[] = [];
    const memory = new Map<string, unknown>([['genai.lastChoice', { feature: 'assistant', serviceProvider: 'scripted' }]]);
    const controller = new ChatController(
      client,
      (m) => posted.push(m),
      { get: <T>(k: string) => memory.get(k) as T | undefined, update: async (k: string, v: unknown) => void memory.set(k, v) },
      { workspace: () => ({ cwd: project, tools: false }) },
    );
    await within(10_000, 'the command turn', controller.handle({ type: 'send', text: '/translate lang=Dutch Good evening' }));
    assert.deepEqual(posted.map((m) => m.type).filter((k) => k !== 'chunk'), ['conversation', 'userMessage', 'turnStarted', 'turnEnded', 'title']);
    const opened = posted[0] as Extract<ToView, { type: 'conversation' }>;
    assert.equal(opened.title, '/translate');
    assert.match(opened.description, / · scripted · scripted-model$/);
    assert.deepEqual(posted[1], { type: 'userMessage', text: 'Translate into Dutch:\n\nGood evening' });
    assert.equal(await lastUserText(), 'Translate into Dutch:\n\nGood evening');
    assert.equal(controller.current?.id, opened.id);

    // In the open conversation now; a refused run is an error in the chat, and nothing is sent.
    posted.length = 0;
    await controller.handle({ type: 'send', text: '/greet' });
    assert.equal(posted.length, 1, JSON.stringify(posted));
    const error = posted[0] as Extract<ToView, { type: 'error' }>;
    assert.equal(error.type, 'error');
    assert.match(error.message, /`greet` needs its argument `who`/);
  });
});
