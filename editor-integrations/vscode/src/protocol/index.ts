// The protocol as the client sees it: the types generated from schemas/ (generated.ts, made by
// `npm run gen:protocol`), plus the tool messages the daemon does not send yet.
export * from './generated';

/**
 * d→c request: ask the user before a tool acts (DESIGN §6). Not in schemas/ yet (tools are
 * issue 5); written by hand from the design until the daemon generates it.
 */
export interface RequestConfirmationParams {
  conversationId: string;
  text: string;
  link?: string | null;
}
export interface RequestConfirmationResult {
  confirmed: boolean;
}

/** d→c notification: a `[[CODE]]` action from a model's reply (DESIGN §6). Not in schemas/ yet. */
export interface DoActionParams {
  conversationId: string;
  messageId?: string | null;
  sequence?: number | null;
  action: unknown;
}

/** The `data.kind` names of JSON-RPC errors and failed turns (docs/PROTOCOL.md, Errors). */
export type ErrorKind =
  | 'invalidParams'
  | 'internal'
  | 'unknownConversation'
  | 'unknownAgent'
  | 'unknownComponent'
  | 'incompatibleComponents'
  | 'invalidParameter'
  | 'missingCredentials'
  | 'config'
  | 'providerError'
  | 'timeout'
  | 'cancelled'
  | 'featureError'
  | 'store'
  /** Client side: the daemon process ended while the request or turn was under way. */
  | 'daemonExited';
