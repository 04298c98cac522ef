// Generates src/protocol/generated.ts from the daemon's JSON Schemas in ../../schemas.
//
// Each schema file becomes one named type: `X.params.json` -> `XParams`, `X.result.json` ->
// `XResult`, `notification.X.json` -> `XNotification`, `message.json` -> `Message`. The `$defs`
// of all files are merged (a name defined differently in two files is an error). Three maps tie
// method names to their types: `Requests` (client to daemon), `DaemonRequests` (daemon to client,
// such as `RequestConfirmation`) and `Notifications` (daemon to client). The client is typed
// against these maps, so a protocol change that the client does not follow breaks `tsc`.
//
// What the schemas do not say is read from docs/PROTOCOL.md, the protocol's reference: the
// direction of each request (its methods table) and the `data.kind` names of errors (its Errors
// table; the schemas type `kind` as a plain string). A request schema the table does not list,
// or a table the script cannot read, is an error.
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { compile } from 'json-schema-to-typescript';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..', '..');
const schemaDir = process.env.GENAI_SCHEMAS ?? join(repoRoot, 'schemas');
const protocolDoc = process.env.GENAI_PROTOCOL_DOC ?? join(repoRoot, 'docs', 'PROTOCOL.md');
const outFile = join(here, '..', 'src', 'protocol', 'generated.ts');

/** The type name of one schema file, or null for files that are not part of the protocol. */
function typeName(file) {
  let m;
  if ((m = /^notification\.(\w+)\.json$/.exec(file))) return { name: `${m[1]}Notification`, method: m[1], kind: 'notification' };
  if ((m = /^(\w+)\.params\.json$/.exec(file))) return { name: `${m[1]}Params`, method: m[1], kind: 'params' };
  if ((m = /^(\w+)\.result\.json$/.exec(file))) return { name: `${m[1]}Result`, method: m[1], kind: 'result' };
  if (file === 'message.json') return { name: 'Message', method: null, kind: 'type' };
  return null; // config.json (the config file) and notifications.json (a union of the others)
}

const doc = readFileSync(protocolDoc, 'utf8');

/** The rows of the markdown table under `## heading` in the protocol reference, as cell lists. */
function tableRows(heading) {
  const start = doc.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`${protocolDoc}: no "## ${heading}" section`);
  const end = doc.indexOf('\n## ', start + 1);
  return doc
    .slice(start, end < 0 ? undefined : end)
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|[-| ]+\|$/.test(line))
    .map((line) => line.split('|').slice(1, -1).map((cell) => cell.trim()));
}

/** Method name -> 'c→d' or 'd→c', for the requests of the methods table. */
const requestDirection = new Map();
for (const [method, dir, kind] of tableRows('Methods')) {
  const name = /^\[`([\w$/]+)`\]/.exec(method ?? '')?.[1];
  if (name && kind?.startsWith('request') && (dir === 'c→d' || dir === 'd→c')) requestDirection.set(name, dir);
}
if (requestDirection.size === 0) throw new Error(`${protocolDoc}: no requests found in the Methods table`);

/** The `data.kind` names of the Errors table (rows of codes without a kind are skipped). */
const errorKinds = tableRows('Errors')
  .map(([code, kind]) => (/^-\d+$/.test(code ?? '') ? /^`(\w+)`$/.exec(kind ?? '')?.[1] : undefined))
  .filter((kind) => kind !== undefined);
if (errorKinds.length === 0) throw new Error(`${protocolDoc}: no error kinds found in the Errors table`);

const defs = {};
const requests = new Map();
const daemonRequests = new Map();
const notifications = [];
function addDef(name, { title: _title, ...schema }, origin) {
  const text = JSON.stringify(schema);
  if (name in defs && JSON.stringify(defs[name]) !== text) {
    throw new Error(`${origin}: $defs/${name} differs from an earlier schema's definition of the same name`);
  }
  defs[name] = schema;
}

for (const file of readdirSync(schemaDir).filter((f) => f.endsWith('.json')).sort()) {
  const info = typeName(file);
  if (!info) continue;
  const schema = JSON.parse(readFileSync(join(schemaDir, file), 'utf8'));
  const { $defs = {}, $schema: _ignored, ...root } = schema;
  for (const [name, def] of Object.entries($defs)) addDef(name, def, file);
  addDef(info.name, root, file);
  if (info.kind === 'params' || info.kind === 'result') {
    const dir = requestDirection.get(info.method);
    if (!dir) throw new Error(`${file}: ${info.method} is not a request in the Methods table of ${protocolDoc}`);
    const map = dir === 'c→d' ? requests : daemonRequests;
    const entry = map.get(info.method) ?? {};
    entry[info.kind] = info.name;
    map.set(info.method, entry);
  } else if (info.kind === 'notification') {
    notifications.push(info);
  }
}

/** Keywords that constrain a value; a schema with none of them accepts any JSON value. */
const CONSTRAINTS = ['type', '$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'enum', 'const', 'properties', 'items', 'tsType'];

/**
 * Types a schema that accepts any value (such as `DoAction`'s `action`) as `unknown`: left alone,
 * json-schema-to-typescript makes it an object with string keys, narrower than the protocol.
 */
function anyAsUnknown(schema) {
  if (Array.isArray(schema)) return schema.map(anyAsUnknown);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, anyAsUnknown(value)]));
  for (const key of ['properties', '$defs']) {
    for (const [name, sub] of Object.entries(out[key] ?? {})) {
      if (sub && typeof sub === 'object' && !CONSTRAINTS.some((c) => c in sub)) out[key][name] = { ...sub, tsType: 'unknown' };
    }
  }
  return out;
}

// Give every definition its own name as title, so the generator names the type after it.
for (const [name, def] of Object.entries(defs)) defs[name] = { ...anyAsUnknown(def), title: name };

const combined = { title: 'ProtocolTypes', type: 'object', additionalProperties: false, $defs: defs };
let ts = await compile(combined, 'ProtocolTypes', {
  bannerComment: '',
  unreachableDefinitions: true,
  additionalProperties: false,
  strictIndexSignatures: false,
  format: true,
  style: { singleQuote: true, printWidth: 100 },
  cwd: schemaDir,
});
ts = ts.replace(/export interface ProtocolTypes \{\}\n?/, '');

/** One `method: { params; result }` line per request of `map`. */
const requestLines = (map) =>
  [...map.entries()].sort().map(([method, e]) =>
    `  ${method}: { params: ${e.params ?? 'Record<string, never> | undefined'}; result: ${e.result ?? 'Record<string, never>'} };`);

const lines = [
  '// GENERATED by scripts/gen-protocol.mjs from schemas/*.json and the tables of docs/PROTOCOL.md.',
  '// Do not edit: run `npm run gen:protocol`.',
  '/* eslint-disable */',
  '',
  ts.trim(),
  '',
  '/** The `data.kind` of a JSON-RPC error, and the `kind` of a failed turn\'s or prompt\'s `error`. */',
  `export type ErrorKind =\n${errorKinds.map((k) => `  | '${k}'`).join('\n')};`,
  '',
  '/** Client-to-daemon requests: method name -> params and result types. */',
  'export interface Requests {',
  ...requestLines(requests),
  '}',
  '',
  '/** Daemon-to-client requests: method name -> params and result (the client\'s answer) types. */',
  'export interface DaemonRequests {',
  ...requestLines(daemonRequests),
  '}',
  '',
  '/** Daemon-to-client notifications: method name -> params type. */',
  'export interface Notifications {',
  ...notifications.map((n) => `  ${n.method}: ${n.name};`),
  '}',
  '',
];
mkdirSync(dirname(outFile), { recursive: true });
writeFileSync(outFile, lines.join('\n'));
console.log(
  `wrote ${outFile}: ${Object.keys(defs).length} types, ${requests.size} + ${daemonRequests.size} requests, ` +
    `${notifications.length} notifications, ${errorKinds.length} error kinds`,
);
