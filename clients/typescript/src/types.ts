import type { MessageIn, Request, Response, StoreRequest } from './protocol.gen.js';

/** Every request `type` (`'store'`, `'query'`, ...). */
export type RequestType = Request['type'];
/** The request object of one `type`. */
export type RequestOf<T extends RequestType> = Extract<Request, { type: T }>;
/** The fields of a request, without `type` and `request_id` (the client sets both). */
export type Params<T extends RequestType> = Omit<RequestOf<T>, 'type' | 'request_id'>;

/**
 * The `type` of the answer to each request `type` (an `error` line may come instead of any).
 * `satisfies` makes tsc fail when the schema gains a request type that is not listed here.
 */
export const RESPONSE_TYPE_OF = {
  store: 'ok',
  query: 'results',
  cleanup: 'ok',
  delete: 'ok',
  forget_user: 'ok',
  stats: 'stats',
  ping: 'pong',
  shutdown: 'ok',
  channel_context: 'channel_context',
  history: 'history',
  remember: 'remembered',
  extract_inline: 'extracted',
  memory_instructions: 'instructions',
  resolve: 'resolved',
  facts: 'facts',
  recall: 'recall',
  fact_history: 'fact_history',
  update_fact: 'fact',
  forget_fact: 'ok',
  context: 'context',
  sync: 'synced',
  entities: 'entities',
  entity: 'entity',
  merge_entities: 'merged',
  consolidate: 'consolidated',
  health: 'health',
  graph_recall: 'graph_recall',
  export: 'exported',
  import: 'imported',
} as const satisfies Record<RequestType, Exclude<Response['type'], 'error' | 'ready'>>;

/** The successful answer to a request of `type` T. */
export type ResponseOf<T extends RequestType> = Extract<Response, { type: (typeof RESPONSE_TYPE_OF)[T] }>;

/** One message for `store` (the single form), with `store`'s own options. */
export type StoreMessage = MessageIn & Pick<StoreRequest, 'extract'>;

/** Per-call options. */
export interface RequestOptions {
  /** Reject with `SidecarTimeoutError` after this many ms without an answer (0: never). */
  timeoutMs?: number;
}

/** `[params, options]` of `request(type, ...)`: params may be left out when every field is optional. */
export type RequestArgs<T extends RequestType> =
  {} extends Params<T> ? [params?: Params<T>, options?: RequestOptions] : [params: Params<T>, options?: RequestOptions];
