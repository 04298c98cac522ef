// A stand-in daemon for what the real one does not do (yet, or not reliably enough to test):
// the tool messages (RequestConfirmation, DoAction) and notifications that arrive before the
// response announcing their turn. Content-Length JSON-RPC on stdio: `Initialize` answers at
// once; the test-only `TriggerTools` asks the client to confirm, sends one DoAction, and returns
// the answer; `CreateConversation` opens "c1"; `OnNewMessage` sends the whole turn (a tool call in
// two pieces, two chunks and the final response) *before* its `{turnId}` answer. What it sends
// is typed from the generated protocol, so it cannot drift from the schemas.
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import type { DaemonRequests, Notifications, Requests } from '../../src/protocol';

const conn = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
conn.onRequest('Initialize', (): Requests['Initialize']['result'] => ({
  serverInfo: { name: 'fake-tools', version: '0' }, protocolVersion: '1.0', capabilities: {},
}));
/** Sends a daemon-to-client notification, its params typed by method. */
function notify<M extends keyof Notifications>(method: M, params: Notifications[M]): Promise<void> {
  return conn.sendNotification(method, params);
}

conn.onRequest('TriggerTools', async (params: { conversationId: string }) => {
  const confirmation: DaemonRequests['RequestConfirmation']['params'] = {
    conversationId: params.conversationId,
    turnId: 'turn-tools',
    text: 'Delete 3 entities?',
    link: 'http://127.0.0.1:1/confirm',
    tool: 'entities.delete',
  };
  const answer = (await conn.sendRequest('RequestConfirmation', confirmation)) as DaemonRequests['RequestConfirmation']['result'];
  await notify('DoAction', { conversationId: params.conversationId, turnId: 'turn-tools', messageId: 'm1', sequence: 0, action: { code: 'SPAWN' } });
  return answer;
});
conn.onRequest('CreateConversation', (): Requests['CreateConversation']['result'] => ({
  conversationId: 'c1', agentId: 'a1', feature: 'assistant', serviceProvider: 'fake', format: 'openai-chat', model: 'm',
}));
conn.onRequest('OnNewMessage', async (): Promise<Requests['OnNewMessage']['result']> => {
  const turnId = 'turn-early';
  await notify('OnToolCallChunk', { conversationId: 'c1', turnId, index: 0, id: 'call_1', name: 'events.getEvents', arguments: '' });
  await notify('OnToolCallChunk', { conversationId: 'c1', turnId, index: 0, arguments: '{}' });
  for (const delta of ['Early ', 'bird.']) {
    await notify('OnFeatureResponseChunk', { conversationId: 'c1', turnId, delta });
  }
  await notify('OnFeatureResponse', {
    conversationId: 'c1', turnId, summary: 'Early bird.', detailedResponse: ['came first'], final: true, isSuccess: true,
  });
  return { turnId };
});
conn.onRequest('Shutdown', () => {
  setImmediate(() => process.exit(0));
  return {};
});
conn.onClose(() => process.exit(0));
conn.listen();
