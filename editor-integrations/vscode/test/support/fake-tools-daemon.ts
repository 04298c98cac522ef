// A stand-in daemon for the tool messages genai does not send yet (RequestConfirmation,
// DoAction). It speaks Content-Length JSON-RPC on stdio: `Initialize` answers at once, and the
// test-only request `TriggerTools` asks the client to confirm, sends one DoAction, and returns
// the client's answer.
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const conn = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
conn.onRequest('Initialize', () => ({ serverInfo: { name: 'fake-tools', version: '0' }, protocolVersion: '1.0', capabilities: {} }));
conn.onRequest('TriggerTools', async (params: { conversationId: string }) => {
  const answer = (await conn.sendRequest('RequestConfirmation', {
    conversationId: params.conversationId,
    text: 'Delete 3 entities?',
    link: 'http://127.0.0.1:1/confirm',
  })) as { confirmed: boolean };
  await conn.sendNotification('DoAction', { conversationId: params.conversationId, messageId: 'm1', sequence: 0, action: { code: 'SPAWN' } });
  return answer;
});
conn.onRequest('Shutdown', () => {
  setImmediate(() => process.exit(0));
  return {};
});
conn.onClose(() => process.exit(0));
conn.listen();
