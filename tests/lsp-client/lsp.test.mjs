// Drives `genai lsp` over stdio with vscode-languageserver-protocol (the protocol library under
// VS Code's language clients), against the loopback fake provider of examples/fake-provider.rs:
// the "show" action ("genai: Explain") opens its answer as a Markdown file in the data dir
// through `window/showDocument` when the client advertises `window.showDocument.support`, and
// falls back to `window/showMessage` when it does not, or when it cannot open the document.
//
// GENAI_BIN and FAKE_PROVIDER_BIN name the binaries (scripts/test-editors.sh sets them). Every
// wait has a deadline (node --test --test-timeout).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import {
  createProtocolConnection,
  StreamMessageReader,
  StreamMessageWriter,
  InitializeRequest,
  InitializedNotification,
  DidOpenTextDocumentNotification,
  ExecuteCommandRequest,
  CodeActionRequest,
  ShowDocumentRequest,
  ShowMessageNotification,
  ShutdownRequest,
  ExitNotification,
} from "vscode-languageserver-protocol/node.js";

const GENAI_BIN = process.env.GENAI_BIN;
const FAKE_PROVIDER_BIN = process.env.FAKE_PROVIDER_BIN;
const REPLY = "It adds `a` and `b`.\n\n```python\nadd(1, 2)  # 3\n```";
const TEXT = "def add(a, b):\n    return a + b\n";

let fake; // { child, url }
let dir; // config, data, the project
let fileUri;

before(async () => {
  for (const [name, v] of Object.entries({ GENAI_BIN, FAKE_PROVIDER_BIN })) {
    assert.ok(v, `${name} must name the binary`);
  }
  const child = spawn(FAKE_PROVIDER_BIN, ["--port", "0", "--reply", REPLY, "--chunks", "2"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const first = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next();
  fake = { child, url: first.value.replace("listening on ", "") };
  dir = mkdtempSync(join(tmpdir(), "genai-lsp-"));
  mkdirSync(join(dir, "config"), { recursive: true });
  mkdirSync(join(dir, "project"), { recursive: true });
  writeFileSync(
    join(dir, "config", "config.toml"),
    `[service_providers.fake]\nkind = "openai"\nbase_url = "${fake.url}"\napi_key = "sk-lsp-test"\n\n` +
      `[defaults]\nmodel = "fake:fake-model"\n`,
  );
  const file = join(dir, "project", "calc.py");
  writeFileSync(file, TEXT);
  fileUri = pathToFileURL(file).href;
});

after(() => {
  fake?.child.kill();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Starts `genai lsp`, initializes it with `window` capabilities, opens the file, and returns
 * the connection with what the server showed. `openDocument` answers `window/showDocument`.
 */
async function startServer({ window, openDocument = () => ({ success: true }) }) {
  const child = spawn(GENAI_BIN, ["lsp"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: {
      ...process.env,
      GENAI_CONFIG_DIR: join(dir, "config"),
      GENAI_DATA_DIR: join(dir, "data"),
      OPENAI_API_KEY: "",
    },
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const connection = createProtocolConnection(
    new StreamMessageReader(child.stdout),
    new StreamMessageWriter(child.stdin),
  );
  const documents = [];
  const messages = [];
  connection.onRequest(ShowDocumentRequest.type, (params) => {
    documents.push(params);
    return openDocument(params);
  });
  const waiting = [];
  connection.onNotification(ShowMessageNotification.type, (params) => {
    messages.push(params);
    waiting.splice(0).forEach((resolve) => resolve());
  });
  // The notification may come after the command's answer: wait for it (the test's timeout is
  // the deadline).
  const messageCount = async (n) => {
    while (messages.length < n) await new Promise((resolve) => waiting.push(resolve));
  };
  connection.listen();
  const init = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: pathToFileURL(join(dir, "project")).href,
    capabilities: { window },
  });
  assert.equal(init.serverInfo.name, "genai");
  await connection.sendNotification(InitializedNotification.type, {});
  await connection.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: fileUri, languageId: "python", version: 1, text: TEXT },
  });
  const stop = async () => {
    await connection.sendRequest(ShutdownRequest.type);
    await connection.sendNotification(ExitNotification.type);
    assert.equal(await exited, 0, "genai lsp exits cleanly after shutdown and exit");
    connection.dispose();
  };
  return { connection, documents, messages, messageCount, stop };
}

/** Picks "genai: Explain" from the code-action menu of line 1 and runs its command. */
async function explain(connection) {
  const range = { start: { line: 0, character: 0 }, end: { line: 1, character: 16 } };
  const menu = await connection.sendRequest(CodeActionRequest.type, {
    textDocument: { uri: fileUri },
    range,
    context: { diagnostics: [] },
  });
  const action = menu.find((a) => a.title === "genai: Explain");
  assert.ok(action, `no Explain action in ${JSON.stringify(menu.map((a) => a.title))}`);
  return connection.sendRequest(ExecuteCommandRequest.type, action.command);
}

test("the show action opens its answer as a Markdown file in the data dir", async () => {
  const server = await startServer({ window: { showDocument: { support: true } } });
  try {
    const result = await explain(server.connection);
    assert.equal(result.reply, REPLY);
    assert.equal(result.applied, false);
    assert.equal(server.documents.length, 1, JSON.stringify(server.documents));
    const shown = server.documents[0];
    const path = fileURLToPath(shown.uri);
    assert.equal(path, join(dir, "data", "lsp", `${result.conversationId}.md`));
    assert.equal(shown.takeFocus, true);
    assert.notEqual(shown.external, true, "opened in the editor, not an external program");
    assert.equal(readFileSync(path, "utf8"), `# Explain: calc.py\n\n${REPLY}\n`);
    assert.deepEqual(server.messages, [], "nothing shown as a message when the document opened");
  } finally {
    await server.stop();
  }
});

test("a client without showDocument gets the answer as a message", async () => {
  const server = await startServer({ window: {} });
  try {
    const result = await explain(server.connection);
    assert.equal(server.documents.length, 0);
    await server.messageCount(1);
    assert.deepEqual(
      server.messages.map((m) => m.message),
      [REPLY],
    );
    assert.equal(server.messages[0].type, 3 /* Info */);
    assert.ok(
      !existsSync(join(dir, "data", "lsp", `${result.conversationId}.md`)),
      "no file is written for a client that cannot open it",
    );
  } finally {
    await server.stop();
  }
});

test("a client that fails to open the document gets the answer as a message", async () => {
  const server = await startServer({
    window: { showDocument: { support: true } },
    openDocument: () => ({ success: false }),
  });
  try {
    await explain(server.connection);
    assert.equal(server.documents.length, 1);
    await server.messageCount(1);
    assert.deepEqual(
      server.messages.map((m) => m.message),
      [REPLY],
    );
  } finally {
    await server.stop();
  }
});
