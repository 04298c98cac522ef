// Drives `genai acp` with the official ACP TypeScript SDK (@agentclientprotocol/sdk), as Zed or
// Neovim would, against the loopback fake provider and fake plugin module of
// examples/fake-provider.rs and the MCP server of examples/fake-mcp-server.rs.
//
// GENAI_BIN, FAKE_PROVIDER_BIN and FAKE_MCP_BIN name the binaries (scripts/test-acp.sh sets
// them). Every wait has a deadline (node --test --test-timeout).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { client, ndJsonStream, RequestError } from "@agentclientprotocol/sdk";

const GENAI_BIN = process.env.GENAI_BIN;
const FAKE_PROVIDER_BIN = process.env.FAKE_PROVIDER_BIN;
const FAKE_MCP_BIN = process.env.FAKE_MCP_BIN;
const REPLY = "Hello from the fake model.";
// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

let fake; // { url, pluginUrl, send(cmd) }
let dir; // a temp dir: config, data, project files
let config; // the config.toml every home gets
const homes = []; // the fresh homes of the permission tests

/** Starts the fake provider (and plugin module) under our control. */
async function startFake() {
  const child = spawn(FAKE_PROVIDER_BIN, ["--control", "--plugin", "--reply", REPLY, "--chunks", "3"], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => (await lines.next()).value;
  const url = (await next()).replace("listening on ", "");
  const pluginUrl = (await next()).replace("plugin on ", "");
  let queue = Promise.resolve();
  const send = (cmd) => {
    const p = queue.then(async () => {
      child.stdin.write(JSON.stringify(cmd) + "\n");
      return JSON.parse(await next());
    });
    queue = p.catch(() => {});
    return p;
  };
  return { child, url, pluginUrl, send };
}

/** Starts `genai acp` over the config and history of `home` (the shared dir by default). */
function startAgent(home = dir) {
  const child = spawn(GENAI_BIN, ["acp"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: {
      ...process.env,
      GENAI_CONFIG_DIR: join(home, "config"),
      GENAI_DATA_DIR: join(home, "data"),
      // Claude Code's and Codex's user folders of commands, absent: only the test's are seen.
      CLAUDE_CONFIG_DIR: join(home, "claude"),
      CODEX_HOME: join(home, "codex"),
      OPENAI_API_KEY: "",
      RUST_LOG: "warn",
    },
  });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stream, exited };
}

/** A client app that records updates and answers fs reads and permissions as told; with
 * `writes`, it takes fs/write_text_file into its buffers (and onto the disk with `disk`);
 * with `terminal`, it runs terminal/* commands itself and records them. */
function editor({ buffers = null, permission = "allow", writes = false, disk = false, terminal = false } = {}) {
  const updates = [];
  const asked = [];
  const watchers = [];
  // Resolves once an update satisfies `pred` (the test's timeout is the deadline).
  const until = (pred) =>
    new Promise((resolve) => {
      if (updates.some(pred)) resolve();
      else watchers.push({ pred, resolve });
    });
  let app = client()
    .onNotification("session/update", (ctx) => {
      updates.push(ctx.params);
      for (const w of watchers.filter((w) => w.pred(ctx.params))) {
        watchers.splice(watchers.indexOf(w), 1);
        w.resolve();
      }
    })
    .onRequest("session/request_permission", (ctx) => {
      asked.push(ctx.params);
      return { outcome: { outcome: "selected", optionId: permission } };
    });
  if (buffers) {
    app = app.onRequest("fs/read_text_file", (ctx) => {
      const text = buffers[ctx.params.path];
      if (text === undefined) throw RequestError.resourceNotFound(ctx.params.path);
      return { content: text };
    });
  }
  const written = [];
  if (writes) {
    app = app.onRequest("fs/write_text_file", (ctx) => {
      written.push({ path: ctx.params.path, content: ctx.params.content });
      if (buffers) buffers[ctx.params.path] = ctx.params.content;
      if (disk) writeFileSync(ctx.params.path, ctx.params.content);
      return {};
    });
  }
  const terminals = [];
  if (terminal) {
    app = app
      .onRequest("terminal/create", (ctx) => {
        const { command, args, cwd } = ctx.params;
        const child = spawn(command, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
        const t = { id: `term-${terminals.length + 1}`, command, args, cwd, output: "", released: false };
        child.stdout.on("data", (d) => (t.output += d));
        child.stderr.on("data", (d) => (t.output += d));
        t.exit = once(child, "close").then(([code, signal]) => ({ exitCode: code, signal }));
        t.child = child;
        terminals.push(t);
        return { terminalId: t.id };
      })
      .onRequest("terminal/wait_for_exit", async (ctx) => terminals.find((t) => t.id === ctx.params.terminalId).exit)
      .onRequest("terminal/output", async (ctx) => {
        const t = terminals.find((t) => t.id === ctx.params.terminalId);
        return { output: t.output, truncated: false, exitStatus: await t.exit };
      })
      .onRequest("terminal/kill", (ctx) => {
        terminals.find((t) => t.id === ctx.params.terminalId).child.kill("SIGKILL");
        return {};
      })
      .onRequest("terminal/release", (ctx) => {
        terminals.find((t) => t.id === ctx.params.terminalId).released = true;
        return {};
      });
  }
  return { app, updates, asked, until, fs: Boolean(buffers), writes, terminal, written, terminals };
}

/** Runs `op(agent)` on a fresh `genai acp` process, initialized, and waits for it to exit. */
async function withAgent(ed, op, home = dir) {
  const agent = startAgent(home);
  try {
    return await ed.app.connectWith(agent.stream, async (cx) => {
      const init = await cx.request("initialize", {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: ed.fs, writeTextFile: ed.writes }, terminal: ed.terminal },
        clientInfo: { name: "acp-test", version: "1.0.0" },
      });
      return op(cx, init);
    });
  } finally {
    agent.child.stdin.end();
    assert.equal(await agent.exited, 0, "genai acp exits cleanly at the end of its input");
  }
}

// genai's built-in commands, as listed (by name).
const BUILTIN_COMMANDS = ["document", "explain", "fix", "improve", "test"];

const kinds = (updates, sessionId) =>
  updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate);
const textOf = (updates, sessionId, kind) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
    .map((u) => u.update.content?.text ?? "")
    .join("");
const lastRequest = async () => (await fake.send({ requests: true })).requests.at(-1);
const requestText = (body) => JSON.stringify(body.messages);
// How many chat requests the fake has recorded, and those after the first `from`.
const requestCount = async () => (await fake.send({ requests: true })).requests.length;
const requestsSince = async (from) => (await fake.send({ requests: true })).requests.slice(from);
// What the model was told a tool call answered, in the request after it.
const toolResult = (bodies, callId) => {
  const m = bodies.flatMap((b) => b.messages).find((m) => m.role === "tool" && m.tool_call_id === callId);
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
};

/** A fresh config and history (the shared config.toml, no saved answers) and a project
 * folder in it, `home/project`, for a session's cwd. */
function freshHome() {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "genai-acp-perm-")));
  homes.push(home);
  mkdirSync(join(home, "config"), { recursive: true });
  writeFileSync(join(home, "config", "config.toml"), config);
  const cwd = join(home, "project");
  mkdirSync(cwd);
  return { home, cwd };
}

before(async () => {
  for (const [name, v] of Object.entries({ GENAI_BIN, FAKE_PROVIDER_BIN, FAKE_MCP_BIN })) {
    assert.ok(v, `${name} must name the binary`);
  }
  fake = await startFake();
  dir = mkdtempSync(join(tmpdir(), "genai-acp-"));
  writeFileSync(join(dir, "notes.md"), "notes as saved on disk\n");
  config = `
[service_providers.fake]
kind = "openai"
base_url = "${fake.url}"
api_key = "sk-acp-test"

[defaults]
model = "fake:fake-model"

[agents.other]
provider = "fake"
model = "other-model"

[plugins.events]
url = "${fake.pluginUrl}"
enabled = true
`;
  mkdirSync(join(dir, "config"), { recursive: true });
  writeFileSync(join(dir, "config", "config.toml"), config);
});

after(() => {
  fake?.child.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

test("initialize claims what genai does", async () => {
  await withAgent(editor(), async (cx, init) => {
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentInfo.name, "genai");
    assert.deepEqual(init.authMethods.map((m) => m.id), ["genai-keys"]);
    assert.deepEqual(await cx.request("authenticate", { methodId: "genai-keys" }), {});
    const caps = init.agentCapabilities;
    assert.equal(caps.loadSession, true);
    assert.equal(caps.promptCapabilities.image, true);
    assert.equal(caps.promptCapabilities.embeddedContext, true);
    assert.ok(caps.sessionCapabilities.list && caps.sessionCapabilities.resume && caps.sessionCapabilities.close);
    assert.equal(caps.mcpCapabilities.http, true);
    assert.equal(caps.mcpCapabilities.sse, false);
  });
});

test("a reply streams as agent_message_chunk, a linked file is read through the client's buffer", async () => {
  const path = join(dir, "notes.md");
  const ed = editor({ buffers: { [path]: "UNSAVED buffer text" } });
  await withAgent(ed, async (cx) => {
    const { sessionId, configOptions } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    assert.ok(configOptions.some((o) => o.id === "model" && o.category === "model"));
    assert.ok(configOptions.some((o) => o.id === "mode" && o.category === "_genai_feature"));
    const r = await cx.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "Summarize my notes" },
        { type: "resource_link", name: "notes.md", uri: pathToFileURL(path).href },
      ],
    });
    assert.equal(r.stopReason, "end_turn");
    assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), REPLY);
    const chunks = kinds(ed.updates, sessionId).filter((k) => k === "agent_message_chunk");
    assert.ok(chunks.length >= 3, `streamed in pieces: ${chunks.length}`);
    assert.ok(kinds(ed.updates, sessionId).includes("usage_update"));
    const sent = requestText(await lastRequest());
    assert.ok(sent.includes("UNSAVED buffer text"), sent);
    assert.ok(!sent.includes("as saved on disk"), sent);
  });
});

test("without fs/read_text_file a linked file is read from disk", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    await cx.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "Read it" },
        { type: "resource_link", name: "notes.md", uri: pathToFileURL(join(dir, "notes.md")).href },
      ],
    });
    assert.ok(requestText(await lastRequest()).includes("notes as saved on disk"));
  });
});

test("embedded resources become context with their URI, images become image parts", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    const r = await cx.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "What is this?" },
        { type: "resource", resource: { uri: "file:///src/lib.rs", text: "fn embedded() {}", mimeType: "text/x-rust" } },
        { type: "image", mimeType: "image/png", data: PNG },
      ],
    });
    assert.equal(r.stopReason, "end_turn");
    const body = await lastRequest();
    const sent = requestText(body);
    assert.ok(sent.includes("file:///src/lib.rs") && sent.includes("fn embedded() {}"), sent);
    assert.ok(sent.includes(`data:image/png;base64,${PNG}`), sent);
  });
});

test("sessions are listed by cwd and loaded with their history after a restart", async () => {
  const project = join(dir, "project-a");
  let sessionId;
  await withAgent(editor(), async (cx) => {
    ({ sessionId } = await cx.request("session/new", { cwd: project, mcpServers: [] }));
    await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Remember the word pelican" }] });
  });
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const list = await cx.request("session/list", { cwd: project });
    assert.equal(list.sessions.length, 1);
    assert.equal(list.sessions[0].sessionId, sessionId);
    assert.equal(list.sessions[0].cwd, project);
    assert.equal(list.sessions[0].title, "Remember the word pelican");
    assert.ok(!Number.isNaN(Date.parse(list.sessions[0].updatedAt)));
    const elsewhere = await cx.request("session/list", { cwd: join(dir, "project-b") });
    assert.deepEqual(elsewhere.sessions, []);

    await cx.request("session/load", { sessionId, cwd: project, mcpServers: [] });
    // The replay is sent before the answer.
    assert.equal(textOf(ed.updates, sessionId, "user_message_chunk"), "Remember the word pelican");
    assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), REPLY);
    await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Which word?" }] });
    const sent = requestText(await lastRequest());
    assert.ok(sent.includes("pelican") && sent.includes("Which word?"), sent);
    await cx.request("session/close", { sessionId });
  });
});

test("session/cancel ends the prompt as cancelled and commits nothing", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    await fake.send({ push: { reply: "one two three four five six seven eight", chunks: 8, delayMs: 300 } });
    const prompt = cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Count slowly" }] });
    await ed.until((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk");
    await cx.notify("session/cancel", { sessionId });
    assert.equal((await prompt).stopReason, "cancelled");
    const before = ed.updates.length;
    await cx.request("session/load", { sessionId, cwd: dir, mcpServers: [] });
    const replayed = ed.updates.slice(before).filter((u) => u.sessionId === sessionId);
    assert.deepEqual(replayed, [], "the cancelled turn left nothing in the history");
  });
});

test("a plugin tool call shows as tool_call updates and its confirmation as a permission request", async () => {
  const ed = editor({ permission: "allow" });
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    const set = await cx.request("session/set_config_option", { sessionId, configId: "mode", value: "tools" });
    assert.equal(set.configOptions.find((o) => o.id === "mode").currentValue, "tools");
    await fake.send({
      plugin: {
        method: "eventParticipation",
        answer: {
          text: "Confirm your participation to E1?",
          askConfirmation: true,
          confirmationLink: `${fake.pluginUrl}/confirmations/C1`,
        },
      },
    });
    await fake.send({ push: { reply: "", toolCalls: [["events__eventParticipation", '{"eventId":"E1","participation":"YES"}']] } });
    await fake.send({ push: { reply: "You are registered." } });
    const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Register me to E1" }] });
    assert.equal(r.stopReason, "end_turn");
    const mine = ed.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
    const call = mine.find((u) => u.sessionUpdate === "tool_call");
    assert.equal(call.toolCallId, "call_1");
    assert.equal(call.title, "events.eventParticipation");
    assert.deepEqual(call.rawInput, { eventId: "E1", participation: "YES" });
    const statuses = mine.filter((u) => u.sessionUpdate === "tool_call_update").map((u) => u.status);
    assert.deepEqual(statuses, ["in_progress", "completed"]);
    const done = mine.filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    assert.ok(JSON.stringify(done.content).includes("confirmed C1"), JSON.stringify(done));
    assert.equal(ed.asked.length, 1);
    assert.equal(ed.asked[0].toolCall.toolCallId, "call_1");
    assert.deepEqual(ed.asked[0].options.map((o) => o.kind), ["allow_once", "reject_once"]);
    const posts = (await fake.send({ pluginRequests: true })).requests.map((q) => q.path);
    assert.ok(posts.includes("/confirmations/C1"), posts.join(" "));
    assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), "You are registered.");
  });
});

test("a refused permission leaves the confirmation link alone", async () => {
  const ed = editor({ permission: "reject" });
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    await cx.request("session/set_config_option", { sessionId, configId: "mode", value: "tools" });
    await fake.send({
      plugin: {
        method: "eventParticipation",
        answer: { text: "Confirm?", askConfirmation: true, confirmationLink: `${fake.pluginUrl}/confirmations/C2` },
      },
    });
    await fake.send({ push: { reply: "", toolCalls: [["events__eventParticipation", '{"eventId":"E2","participation":"NO"}']] } });
    await fake.send({ push: { reply: "Not done." } });
    await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Unregister me" }] });
    assert.equal(ed.asked.length, 1);
    const posts = (await fake.send({ pluginRequests: true })).requests.map((q) => q.path);
    assert.ok(!posts.includes("/confirmations/C2"), posts.join(" "));
  });
});

// The workspace's tools, rooted at the session's cwd: an edit asks in the default mode.
const EDIT = (path) => ["workspace__edit_file", JSON.stringify({ path, old_text: "draft", new_text: "final" })];
const FOUR = [
  ["allow_once", "allow_once"],
  ["allow_always", "allow_always"],
  ["reject_once", "reject_once"],
  ["reject_always", "reject_always"],
];
const toolUpdates = (updates, sessionId) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate.startsWith("tool_call"))
    .map((u) => u.update);

test("workspace: an edit asks with the four options, and allow_once edits the file", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  const ed = editor({ permission: "allow_once" });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Edited." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(r.stopReason, "end_turn");
      assert.equal(ed.asked.length, 1, JSON.stringify(ed.asked));
      const [ask] = ed.asked;
      assert.equal(ask.sessionId, sessionId);
      assert.deepEqual(ask.options.map((o) => [o.optionId, o.kind]), FOUR);
      assert.equal(ask.options[1].name, "Always allow (workspace.edit_file(/notes.md))");
      assert.equal(ask.toolCall.toolCallId, "call_1");
      assert.equal(ask.toolCall.kind, "edit");
      assert.deepEqual(ask.toolCall.rawInput, { path: "notes.md", old_text: "draft", new_text: "final" });
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
      const sent = await requestsSince(from);
      assert.equal(sent.length, 2);
      const result = toolResult(sent, "call_1");
      assert.ok(result.includes("+a final note"), result);
      const calls = toolUpdates(ed.updates, sessionId);
      assert.equal(calls[0].title, "workspace.edit_file");
      assert.equal(calls.at(-1).status, "completed", JSON.stringify(calls));
      assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), "Edited.");
    },
    home,
  );
});

test("subagents: a subagent's edit asks the editor, and its progress is the task call's content", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  mkdirSync(join(cwd, ".genai", "agents"), { recursive: true });
  writeFileSync(
    join(cwd, ".genai", "agents", "writer.md"),
    "---\ndescription: Edits notes\ntools: [read_file, edit_file]\n---\nYou are the writer. Edit the note.\n",
  );
  const ed = editor({ permission: "allow_once" });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      const task = ["workspace__task", JSON.stringify({ agent: "writer", prompt: "Finish notes.md" }), "task_1"];
      await fake.send({ push: { reply: "", toolCalls: [task] } });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Finished the note." } });
      await fake.send({ push: { reply: "The writer finished the note." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Have the writer finish it" }] });
      assert.equal(r.stopReason, "end_turn");
      // The subagent's edit was asked of the editor, as the parent's own would be.
      assert.equal(ed.asked.length, 1, JSON.stringify(ed.asked));
      const [ask] = ed.asked;
      assert.equal(ask.sessionId, sessionId);
      assert.equal(ask.toolCall.kind, "edit");
      // Named under its task call, never taken for the task call itself.
      assert.equal(ask.toolCall.toolCallId, "task_1/call_1");
      assert.deepEqual(ask.toolCall.rawInput, { path: "notes.md", old_text: "draft", new_text: "final" });
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
      // The subagent worked in its own context: its request has its prompt, not the parent's.
      const sent = await requestsSince(from);
      assert.equal(sent.length, 4);
      assert.ok(requestText(sent[1]).includes("You are the writer"), requestText(sent[1]));
      assert.ok(!requestText(sent[1]).includes("Have the writer finish it"), requestText(sent[1]));
      assert.equal(toolResult(sent, "task_1"), "Finished the note.");
      // Its progress is the task call's content, a line per step, named by the subagent.
      const taskUpdates = toolUpdates(ed.updates, sessionId).filter((u) => u.toolCallId === "task_1");
      assert.equal(taskUpdates[0].title, "workspace.task");
      const progress = taskUpdates
        .flatMap((u) => u.content ?? [])
        .map((c) => c.content?.text ?? "")
        .join("\n");
      assert.ok(progress.includes("[writer]") && progress.includes("edit_file"), progress);
      assert.equal(taskUpdates.at(-1).status, "completed", JSON.stringify(taskUpdates));
      assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), "The writer finished the note.");
    },
    home,
  );
});

test("workspace: reject_once leaves the file alone and the model is told it was refused", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  const ed = editor({ permission: "reject_once" });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "I did not edit it." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(r.stopReason, "end_turn");
      assert.equal(ed.asked.length, 1, JSON.stringify(ed.asked));
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a draft note\n");
      const sent = await requestsSince(from);
      assert.equal(sent.length, 2);
      const result = toolResult(sent, "call_1");
      assert.ok(result?.startsWith("Refused"), result);
      const done = toolUpdates(ed.updates, sessionId).at(-1);
      assert.equal(done.status, "failed", JSON.stringify(done));
      assert.equal(done.content[0].content.text, result);
      assert.equal(textOf(ed.updates, sessionId, "agent_message_chunk"), "I did not edit it.");
    },
    home,
  );
});

test("workspace: allow_always is saved for the project, and a later session on it is not asked again", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  const first = editor({ permission: "allow_always" });
  await withAgent(
    first,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Edited." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(first.asked.length, 1);
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
    },
    home,
  );
  const saved = readFileSync(join(home, "config", "projects.toml"), "utf8");
  assert.ok(saved.includes(`root = ${JSON.stringify(cwd)}`), saved);
  assert.ok(saved.includes('"workspace.edit_file(/notes.md)"'), saved);

  // A new process, the same project: the matching call runs unasked, another file still asks,
  // and so does the same file in another project.
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  writeFileSync(join(cwd, "other.md"), "another draft\n");
  const elsewhere = join(home, "elsewhere");
  mkdirSync(elsewhere);
  writeFileSync(join(elsewhere, "notes.md"), "a draft note\n");
  const second = editor({ permission: "reject_once" });
  await withAgent(
    second,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md"), EDIT("other.md")] } });
      await fake.send({ push: { reply: "Edited one." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish both" }] });
      assert.equal(r.stopReason, "end_turn");
      assert.deepEqual(
        second.asked.map((a) => [a.toolCall.toolCallId, a.toolCall.rawInput.path]),
        [["call_2", "other.md"]],
      );
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
      assert.equal(readFileSync(join(cwd, "other.md"), "utf8"), "another draft\n");

      const other = await cx.request("session/new", { cwd: elsewhere, mcpServers: [] });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Not here." } });
      await cx.request("session/prompt", { sessionId: other.sessionId, prompt: [{ type: "text", text: "Finish it" }] });
      assert.equal(second.asked.length, 2);
      assert.equal(second.asked[1].sessionId, other.sessionId);
      assert.equal(readFileSync(join(elsewhere, "notes.md"), "utf8"), "a draft note\n");
    },
    home,
  );
});

test("workspace: .env and paths outside the cwd are refused without asking, and the secret goes nowhere", async () => {
  const { home, cwd } = freshHome();
  const SECRET = "tok-9f8e7d6c5b4a-secret";
  const OUTSIDE = "outside-the-root-4711";
  writeFileSync(join(cwd, ".env"), `API_TOKEN=${SECRET}\n`);
  writeFileSync(join(home, "outside.txt"), `${OUTSIDE}\n`);
  // A copy of the value elsewhere is masked in what a tool answers.
  writeFileSync(join(cwd, "notes.md"), `visible-notes-0815 token=${SECRET}\n`);
  const ed = editor({ permission: "allow_once" });
  const read = (path) => ["workspace__read_file", JSON.stringify({ path })];
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      await fake.send({
        push: {
          reply: "",
          toolCalls: [
            read(".env"),
            read("../outside.txt"),
            read(join(home, "outside.txt")),
            ["workspace__search", JSON.stringify({ pattern: "API_TOKEN" })],
            read("notes.md"),
          ],
        },
      });
      await fake.send({ push: { reply: "Read what I could." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Show me the config" }] });
      assert.equal(r.stopReason, "end_turn");
      assert.deepEqual(ed.asked, [], "nothing was asked");
      const sent = await requestsSince(from);
      assert.equal(sent.length, 2);
      // The allowed read reached the model, so the others' absence means something.
      assert.ok(toolResult(sent, "call_5").includes("visible-notes-0815"), toolResult(sent, "call_5"));
      for (const id of ["call_1", "call_2", "call_3"]) {
        assert.ok(toolResult(sent, id)?.startsWith("Refused"), `${id}: ${toolResult(sent, id)}`);
      }
      assert.ok(toolResult(sent, "call_4") !== undefined, "the search has a result");
      const ends = toolUpdates(ed.updates, sessionId).filter(
        (u) => u.sessionUpdate === "tool_call_update" && u.status !== "in_progress",
      );
      assert.deepEqual(ends.map((u) => [u.toolCallId, u.status]), [
        ["call_1", "failed"],
        ["call_2", "failed"],
        ["call_3", "failed"],
        ["call_4", "completed"],
        ["call_5", "completed"],
      ]);
      const all = JSON.stringify(sent);
      assert.ok(!all.includes(SECRET), `the secret reached the provider: ${all}`);
      assert.ok(!all.includes(OUTSIDE), `a file outside the root reached the provider: ${all}`);
      const shown = JSON.stringify(ed.updates);
      assert.ok(!shown.includes(SECRET), `the secret reached the client: ${shown}`);
      assert.ok(!shown.includes(OUTSIDE), `a file outside the root reached the client: ${shown}`);
    },
    home,
  );
});

test("stdio MCP servers from session/new join the session's tools", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId, configOptions } = await cx.request("session/new", {
      cwd: dir,
      mcpServers: [{ name: "calc", command: FAKE_MCP_BIN, args: [], env: [] }],
    });
    assert.equal(configOptions.find((o) => o.id === "mode").currentValue, "tools");
    await fake.send({ push: { reply: "", toolCalls: [["calc__add", '{"a":2,"b":3}']] } });
    await fake.send({ push: { reply: "It is 5." } });
    const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "2+3?" }] });
    assert.equal(r.stopReason, "end_turn");
    const requests = (await fake.send({ requests: true })).requests;
    const offered = requests.at(-2).tools.map((t) => t.function.name);
    assert.ok(offered.includes("calc__add") && offered.includes("events__getEvents"), offered.join(" "));
    const mine = ed.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
    const done = mine.filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
    assert.equal(done.status, "completed");
    assert.equal(done.content[0].content.text, "5");
  });
});

test("streamable-HTTP MCP servers from session/new join the session's tools with their headers", async () => {
  const server = spawn(FAKE_MCP_BIN, ["--http"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, FAKE_MCP_HTTP_KEY: "key-42" },
  });
  try {
    const first = (await createInterface({ input: server.stdout })[Symbol.asyncIterator]().next()).value;
    const url = first.replace("listening on ", "");
    const ed = editor();
    await withAgent(ed, async (cx) => {
      const { sessionId } = await cx.request("session/new", {
        cwd: dir,
        mcpServers: [{ type: "http", name: "web", url, headers: [{ name: "X-Test-Key", value: "key-42" }] }],
      });
      await fake.send({ push: { reply: "", toolCalls: [["web__add", '{"a":20,"b":22}']] } });
      await fake.send({ push: { reply: "It is 42." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "20+22?" }] });
      assert.equal(r.stopReason, "end_turn");
      const mine = ed.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
      const done = mine.filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
      assert.equal(done.status, "completed");
      assert.equal(done.content[0].content.text, "42");
    });
  } finally {
    server.kill();
  }
});

test("an MCP server's resources are context for resource_links, its prompts slash commands", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId } = await cx.request("session/new", {
      cwd: dir,
      mcpServers: [{ name: "notes", command: FAKE_MCP_BIN, args: [], env: [{ name: "FAKE_MCP_MORE_TOOLS", value: "1" }] }],
    });
    const r = await cx.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "Use the greeting" },
        { type: "resource_link", name: "greeting", uri: "memo://greeting" },
        { type: "resource_link", name: "elsewhere", uri: "https://example.com/page" },
      ],
    });
    assert.equal(r.stopReason, "end_turn");
    const sent = requestText(await lastRequest());
    assert.ok(sent.includes("Hello from a resource"), sent);
    assert.ok(sent.includes("[elsewhere](https://example.com/page)"), sent);

    // Its prompts are slash commands.
    await ed.until((u) => u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update");
    const announced = ed.updates.find((u) => u.update.sessionUpdate === "available_commands_update").update;
    // After /undo, /compact and the built-in commands (this cwd has no command files).
    assert.deepEqual(announced.availableCommands.map((c) => c.name), [
      "undo",
      "compact",
      ...BUILTIN_COMMANDS,
      "notes.review",
    ]);
    await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/notes.review fn f() {}" }] });
    const expanded = requestText(await lastRequest());
    assert.ok(expanded.includes("Review this code: fn f() {}"), expanded);
  });
});

test("the model is a config option", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    const { sessionId, configOptions } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    const model = configOptions.find((o) => o.id === "model");
    assert.equal(model.currentValue, "fake:fake-model");
    assert.ok(model.options.some((o) => o.value === "other"));
    const set = await cx.request("session/set_config_option", { sessionId, configId: "model", value: "other" });
    assert.equal(set.configOptions.find((o) => o.id === "model").currentValue, "other");
    await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Who are you?" }] });
    assert.equal((await lastRequest()).model, "other-model");
    await assert.rejects(
      cx.request("session/set_config_option", { sessionId, configId: "mode", value: "nope" }),
      (e) => e.code === -32602,
    );
  });
});

test("errors: unknown sessions, bad params, a failing provider", async () => {
  const ed = editor();
  await withAgent(ed, async (cx) => {
    await assert.rejects(
      cx.request("session/prompt", { sessionId: "01NOSUCHSESSION", prompt: [{ type: "text", text: "hi" }] }),
      (e) => e.code === -32002,
    );
    await assert.rejects(
      cx.request("session/load", { sessionId: "01NOSUCHSESSION", cwd: dir, mcpServers: [] }),
      (e) => e.code === -32002,
    );
    await assert.rejects(cx.request("session/new", { cwd: "not/absolute", mcpServers: [] }), (e) => e.code === -32602);
    const { sessionId } = await cx.request("session/new", { cwd: dir, mcpServers: [] });
    await fake.send({ push: { error: { status: 400, message: "the fake refuses this" } } });
    const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
    assert.equal(r.stopReason, "end_turn");
    assert.ok(textOf(ed.updates, sessionId, "agent_message_chunk").includes("the fake refuses this"));
  });
});

test("malformed lines get JSON-RPC errors and the agent goes on", async () => {
  const agent = spawn(GENAI_BIN, ["acp"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, GENAI_CONFIG_DIR: join(dir, "config"), GENAI_DATA_DIR: join(dir, "data") },
  });
  const lines = createInterface({ input: agent.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value);
  agent.stdin.write("{this is not json\n");
  assert.equal((await next()).error.code, -32700);
  agent.stdin.write('[{"jsonrpc":"2.0","id":1,"method":"initialize"}]\n');
  assert.equal((await next()).error.code, -32600);
  agent.stdin.write('{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":7}}\n');
  const bad = await next();
  assert.equal(bad.id, 2);
  assert.equal(bad.error.code, -32602);
  agent.stdin.write('{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}\n');
  const ok = await next();
  assert.equal(ok.id, 3);
  assert.equal(ok.result.protocolVersion, 1);
  agent.stdin.end();
  const code = await new Promise((resolve) => agent.on("exit", resolve));
  assert.equal(code, 0);
});

test("editor: the model reads the unsaved buffer, its edit goes to fs/write_text_file after a permission request, /undo puts it back", async () => {
  const { home, cwd } = freshHome();
  const path = join(cwd, "notes.md");
  writeFileSync(path, "a draft note as saved\n");
  const buffers = { [path]: "an unsaved draft note\n" };
  const ed = editor({ buffers, writes: true, permission: "allow_once" });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      await ed.until((u) => u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update");
      const commands = ed.updates.find((u) => u.update.sessionUpdate === "available_commands_update").update;
      assert.ok(commands.availableCommands.some((c) => c.name === "undo"), JSON.stringify(commands));
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [["workspace__read_file", JSON.stringify({ path: "notes.md" })]] } });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Edited." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(r.stopReason, "end_turn");
      const sent = await requestsSince(from);
      assert.equal(sent.length, 3);
      // What reached the model is the editor's buffer, not the disk.
      const read = toolResult(sent.slice(0, 2), "call_1");
      assert.ok(read.includes("an unsaved draft note") && !read.includes("as saved"), read);
      // One ask, for the edit, with its location and diff; then the write, through the editor.
      assert.equal(ed.asked.length, 1, JSON.stringify(ed.asked));
      const ask = ed.asked[0].toolCall;
      assert.equal(ask.kind, "edit");
      assert.deepEqual(ask.locations, [{ path }]);
      assert.deepEqual(ask.content, [
        { type: "diff", path, oldText: "an unsaved draft note\n", newText: "an unsaved final note\n" },
      ]);
      assert.deepEqual(ed.written, [{ path, content: "an unsaved final note\n" }]);
      assert.equal(readFileSync(path, "utf8"), "a draft note as saved\n", "genai wrote nothing itself");
      const calls = toolUpdates(ed.updates, sessionId);
      const readCall = calls.find((c) => c.toolCallId === "call_1" && c.sessionUpdate === "tool_call");
      assert.equal(readCall.kind, "read");
      assert.deepEqual(readCall.locations, [{ path }]);
      const done = calls.filter((c) => c.status === "completed").at(-1);
      assert.equal(done.content[0].type, "diff", JSON.stringify(done));
      assert.equal(done.content[0].newText, "an unsaved final note\n");

      // /undo is answered by genai, not the model, and restores through the editor.
      const before = await requestCount();
      const u = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/undo" }] });
      assert.equal(u.stopReason, "end_turn");
      assert.equal(await requestCount(), before, "/undo asked the model nothing");
      assert.deepEqual(ed.written.at(-1), { path, content: "an unsaved draft note\n" });
      assert.equal(buffers[path], "an unsaved draft note\n");
      assert.ok(textOf(ed.updates, sessionId, "agent_message_chunk").includes("notes.md (restored)"));
      // A second /undo finds nothing left to undo, and says so.
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/undo" }] });
      assert.ok(textOf(ed.updates, sessionId, "agent_message_chunk").includes("nothing was undone"));
    },
    home,
  );
});

test("editor: run_command runs in the client's terminal, shown in the tool call", async () => {
  const { home, cwd } = freshHome();
  const ed = editor({ terminal: true, permission: "allow_once" });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      const command = "echo from the terminal; pwd; exit 3";
      await fake.send({ push: { reply: "", toolCalls: [["workspace__run_command", JSON.stringify({ command })]] } });
      await fake.send({ push: { reply: "Ran it." } });
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Run it" }] });
      assert.equal(r.stopReason, "end_turn");
      // Not sandboxed by genai, so asked even though a sandbox exists here.
      assert.equal(ed.asked.length, 1);
      assert.equal(ed.asked[0].toolCall.kind, "execute");
      assert.equal(ed.terminals.length, 1);
      const [t] = ed.terminals;
      assert.equal(t.command, "sh");
      assert.deepEqual(t.args, ["-c", command]);
      assert.equal(t.cwd, cwd);
      assert.equal(t.released, true, "the terminal was released");
      const shown = toolUpdates(ed.updates, sessionId).find((c) => c.content?.some((x) => x.type === "terminal"));
      assert.ok(shown, "the terminal was embedded in the tool call");
      assert.equal(shown.content.find((x) => x.type === "terminal").terminalId, t.id);
      const result = toolResult(await requestsSince(from), "call_1");
      assert.ok(result.includes("from the terminal") && result.includes(cwd), result);
      assert.ok(result.includes("exit status 3"), result);
    },
    home,
  );
});

test("editor: the permission modes are session modes", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  const ed = editor({ permission: "allow_once" });
  await withAgent(
    ed,
    async (cx) => {
      const s = await cx.request("session/new", { cwd, mcpServers: [] });
      const { sessionId } = s;
      assert.equal(s.modes.currentModeId, "ask");
      assert.deepEqual(s.modes.availableModes.map((m) => m.id), ["read-only", "plan", "ask", "edit", "full"]);
      await cx.request("session/set_mode", { sessionId, modeId: "read-only" });
      await ed.until((u) => u.sessionId === sessionId && u.update.sessionUpdate === "current_mode_update");
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Not allowed." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(ed.asked.length, 0, "read-only refuses without asking");
      assert.ok(toolResult(await requestsSince(from), "call_1").includes("mode read-only"));
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a draft note\n");
      // edit mode edits without asking.
      await cx.request("session/set_mode", { sessionId, modeId: "edit" });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "Edited." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Finish the note" }] });
      assert.equal(ed.asked.length, 0);
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
      await assert.rejects(cx.request("session/set_mode", { sessionId, modeId: "yolo" }), /no mode `yolo`/);
      // A session loaded again keeps its mode.
      const loaded = await cx.request("session/load", { sessionId, cwd, mcpServers: [] });
      assert.equal(loaded.modes.currentModeId, "edit");
    },
    home,
  );
});

test("editor: plan mode refuses the edit, its plan arrives as plan entries, edit mode carries it out", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "notes.md"), "a draft note\n");
  const ed = editor({ permission: "allow_once" });
  const PLAN = (first, second) => [
    "workspace__plan",
    JSON.stringify({
      entries: [
        { content: "Read the note", status: first },
        { content: "Finish the note", status: second, priority: "high" },
      ],
    }),
  ];
  const plans = (sessionId) =>
    ed.updates
      .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "plan")
      .map((u) => u.update.entries.map((e) => [e.content, e.status, e.priority]));
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      await cx.request("session/set_mode", { sessionId, modeId: "plan" });
      await ed.until((u) => u.sessionId === sessionId && u.update.sessionUpdate === "current_mode_update");
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "", toolCalls: [PLAN("pending", "pending")] } });
      await fake.send({ push: { reply: "Here is the plan." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Plan the note" }] });
      assert.equal(ed.asked.length, 0, "plan mode refuses without asking");
      const sent = await requestsSince(from);
      assert.ok(toolResult(sent, "call_1").includes("plan mode"), toolResult(sent, "call_1"));
      assert.ok(requestText(sent[0]).includes("You are in plan mode"));
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a draft note\n");
      assert.deepEqual(plans(sessionId), [
        [
          ["Read the note", "pending", "medium"],
          ["Finish the note", "pending", "high"],
        ],
      ]);
      // In edit mode the model carries the plan out, updating its entries.
      await cx.request("session/set_mode", { sessionId, modeId: "edit" });
      await fake.send({ push: { reply: "", toolCalls: [PLAN("completed", "in_progress")] } });
      await fake.send({ push: { reply: "", toolCalls: [EDIT("notes.md")] } });
      await fake.send({ push: { reply: "", toolCalls: [PLAN("completed", "completed")] } });
      await fake.send({ push: { reply: "Done." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
      assert.equal(readFileSync(join(cwd, "notes.md"), "utf8"), "a final note\n");
      assert.deepEqual(
        plans(sessionId).slice(1).map((p) => p.map(([, status]) => status)),
        [
          ["completed", "in_progress"],
          ["completed", "completed"],
        ],
      );
    },
    home,
  );
});

test("with no model, session/new asks for authentication, which says how to set one up", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(home, "config", "config.toml"), "");
  await withAgent(
    editor(),
    async (cx) => {
      await assert.rejects(cx.request("session/new", { cwd, mcpServers: [] }), (e) => {
        assert.equal(e.code, -32000, JSON.stringify(e));
        assert.ok(e.message.startsWith("no model provider is configured and no local model is installed"), e.message);
        return true;
      });
      await assert.rejects(cx.request("authenticate", { methodId: "genai-keys" }), (e) => {
        assert.equal(e.code, -32000, JSON.stringify(e));
        assert.ok(e.message.includes("genai keys set"), e.message);
        return true;
      });
    },
    home,
  );
});

test("editor: a file the client cannot read is read from the disk", async () => {
  const { home, cwd } = freshHome();
  writeFileSync(join(cwd, "other.md"), "only on the disk\n");
  const ed = editor({ buffers: {}, writes: true });
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      await fake.send({ push: { reply: "", toolCalls: [["workspace__read_file", JSON.stringify({ path: "other.md" })]] } });
      await fake.send({ push: { reply: "Read." } });
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Read other.md" }] });
      const result = toolResult(await requestsSince(from), "call_1");
      assert.ok(result.includes("only on the disk"), result);
    },
    home,
  );
});

// Commands: prompts kept as files, seen from the session's cwd (`.genai/commands/` in genai's
// format, `.claude/commands/` in Claude Code's) beside the built-in ones, announced as
// available_commands_update and expanded when a prompt starts with `/NAME`.

const TRANSLATE = `---
description: Translate text
arguments:
  - name: lang
    description: The language to translate into
    default: French
---
Translate into {{lang}}:

{{input}}
`;
const REVIEW = "---\ndescription: Review a PR\nargument-hint: [pr]\n---\nReview PR #$1 now.";

/** A fresh home whose project holds `.genai/commands/translate.md` and
 * `.claude/commands/review.md`. */
function commandsHome() {
  const { home, cwd } = freshHome();
  mkdirSync(join(cwd, ".genai", "commands"), { recursive: true });
  mkdirSync(join(cwd, ".claude", "commands"), { recursive: true });
  writeFileSync(join(cwd, ".genai", "commands", "translate.md"), TRANSLATE);
  writeFileSync(join(cwd, ".claude", "commands", "review.md"), REVIEW);
  return { home, cwd };
}

const isCommandsUpdate = (sessionId) => (u) =>
  u.sessionId === sessionId && u.update.sessionUpdate === "available_commands_update";
const commandNames = (u) => u.update.availableCommands.map((c) => c.name);

/** Resolves as `promise` does, or fails saying `what` did not happen within `ms`. */
function within(ms, what, promise) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** The next session/update from now on that satisfies `pred`, within 10 s. */
function nextUpdate(ed, what, pred) {
  const from = ed.updates.length;
  let found;
  const seen = ed.until((u) => {
    const ok = ed.updates.indexOf(u) >= from && pred(u);
    if (ok) found ??= u;
    return ok;
  });
  return within(10000, what, seen).then(() => found);
}

/** The text of the last user message of a chat request (its one text part). */
function lastUserText(body) {
  const m = body.messages.filter((m) => m.role === "user").at(-1);
  if (typeof m.content === "string") return m.content;
  const texts = m.content.filter((p) => p.type === "text");
  assert.equal(texts.length, 1, `one text part: ${JSON.stringify(m)}`);
  return texts[0].text;
}

test("commands: a session is told the command files of its cwd and the built-in ones", async () => {
  const { home, cwd } = commandsHome();
  const ed = editor();
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const first = await nextUpdate(ed, "the first available_commands_update", isCommandsUpdate(sessionId));
      const names = commandNames(first);
      assert.equal(names[0], "undo", names.join(" "));
      assert.deepEqual([...names].sort(), ["undo", "compact", "translate", "review", ...BUILTIN_COMMANDS].sort());
      const byName = Object.fromEntries(first.update.availableCommands.map((c) => [c.name, c]));
      assert.equal(byName.translate.description, "Translate text");
      const hint = byName.translate.input?.hint ?? "";
      assert.ok(/\blang\b/.test(hint) && hint.includes("French"), JSON.stringify(byName.translate));
      assert.equal(byName.review.description, "Review a PR");
      assert.equal(byName.review.input?.hint, "[pr]", JSON.stringify(byName.review));
      for (const name of BUILTIN_COMMANDS) {
        assert.ok(byName[name].description, JSON.stringify(byName[name]));
        assert.ok(byName[name].input?.hint, JSON.stringify(byName[name]));
      }
    },
    home,
  );
});

test("commands: /NAME renders the command file into the user message; an unknown /x goes as it is", async () => {
  const { home, cwd } = commandsHome();
  const ed = editor();
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const from = await requestCount();
      const sent = async (text) => {
        const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
        assert.equal(r.stopReason, "end_turn");
        return lastUserText(await lastRequest());
      };
      // genai's format: a leading declared key=value, the rest is the text, placed at {{input}}.
      assert.equal(await sent("/translate lang=German Good morning"), "Translate into German:\n\nGood morning");
      // Claude Code's format: $1 is the first word.
      assert.equal(await sent("/review 42"), "Review PR #42 now.");
      // An argument not given takes its default.
      assert.equal(await sent("/translate Bonjour"), "Translate into French:\n\nBonjour");
      // Not a command: the model gets the text unchanged.
      assert.equal(await sent("/nosuch thing here"), "/nosuch thing here");
      assert.equal(await requestCount(), from + 4, "one request a prompt");

      // A session opened again is told its commands again.
      const again = nextUpdate(ed, "available_commands_update after session/resume", isCommandsUpdate(sessionId));
      await cx.request("session/resume", { sessionId, cwd, mcpServers: [] });
      assert.ok(commandNames(await again).includes("translate"));
    },
    home,
  );
});

test("commands: a command file added while the session is open is announced, and so is its removal", async () => {
  const { home, cwd } = commandsHome();
  const ed = editor();
  const later = join(cwd, ".genai", "commands", "later.md");
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const first = await nextUpdate(ed, "the first available_commands_update", isCommandsUpdate(sessionId));
      assert.ok(!commandNames(first).includes("later"));

      const added = nextUpdate(
        ed,
        "an available_commands_update listing `later`",
        (u) => isCommandsUpdate(sessionId)(u) && commandNames(u).includes("later"),
      );
      writeFileSync(later, "---\ndescription: Added later\n---\nLater: {{input}}\n");
      const update = await added;
      assert.equal(update.update.availableCommands.find((c) => c.name === "later").description, "Added later");
      assert.ok(commandNames(update).includes("translate") && commandNames(update).includes("review"));
      // The new command runs at once.
      await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/later now" }] });
      assert.equal(lastUserText(await lastRequest()), "Later: now");

      const removed = nextUpdate(
        ed,
        "an available_commands_update without `later`",
        (u) => isCommandsUpdate(sessionId)(u) && !commandNames(u).includes("later"),
      );
      rmSync(later);
      assert.ok(commandNames(await removed).includes("translate"));
    },
    home,
  );
});

test("commands: a missing required argument fails session/prompt naming it, and asks the model nothing", async () => {
  const { home, cwd } = commandsHome();
  writeFileSync(
    join(cwd, ".genai", "commands", "greet.md"),
    "---\ndescription: Greet someone\narguments:\n  - name: who\n    description: whom to greet\n---\nSay hello to {{who}}.\n",
  );
  const ed = editor();
  await withAgent(
    ed,
    async (cx) => {
      const { sessionId } = await cx.request("session/new", { cwd, mcpServers: [] });
      const before = await requestCount();
      await assert.rejects(
        cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/greet" }] }),
        (e) => {
          assert.equal(e.code, -32602, JSON.stringify(e));
          assert.ok(e.message.includes("`who`"), e.message);
          return true;
        },
      );
      // An argument the command does not declare is refused the same way, by its name.
      await assert.rejects(
        cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/translate tone=formal Hi" }] }),
        (e) => {
          assert.equal(e.code, -32602, JSON.stringify(e));
          assert.ok(e.message.includes("`tone`"), e.message);
          return true;
        },
      );
      assert.equal(await requestCount(), before, "the model was asked nothing");
      // Given, it runs, and the session goes on.
      const r = await cx.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/greet who=Ada" }] });
      assert.equal(r.stopReason, "end_turn");
      assert.equal(lastUserText(await lastRequest()), "Say hello to Ada.");
    },
    home,
  );
});
