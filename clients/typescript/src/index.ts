/**
 * memory-sidecar-client: a typed client for memory-sidecar. This entry point runs anywhere (Node,
 * a browser, a Tauri webview), and so does its HTTP transport (`HttpTransport`, a running
 * `memory-sidecar serve`); the process transports are separate entry points:
 * `memory-sidecar-client/node` (child_process) and `memory-sidecar-client/tauri` (Tauri v2 shell plugin).
 */
export { MemorySidecar, type MemorySidecarOptions } from './client.js';
export { MemorySidecarError, SidecarError, SidecarExitError, SidecarProtocolError, SidecarTimeoutError } from './errors.js';
export { HttpTransport, type HttpTransportOptions } from './http.js';
export { LineSplitter } from './lines.js';
export type { ExitInfo, Transport, TransportHandlers } from './transport.js';
export {
  RESPONSE_TYPE_OF,
  type Params,
  type RequestArgs,
  type RequestOf,
  type RequestOptions,
  type RequestType,
  type ResponseOf,
  type StoreMessage,
} from './types.js';
export * from './protocol.gen.js';
