/**
 * The HTTP transport: `MemorySidecar` over a running `memory-sidecar serve` (docs/http.md), with `fetch`
 * (Node >= 18, browsers, Tauri webviews). Each request line becomes one `POST /v1/command`; requests run
 * side by side, and every answer (an error's too) comes back as the line the pipe would have written.
 *
 * ```ts
 * const sidecar = await MemorySidecar.start(new HttpTransport({ url: 'http://127.0.0.1:7438', token }));
 * await sidecar.store({ user_id: '123', content: 'my cat Miso hates the vacuum' });
 * await sidecar.close(); // this client's end; the server goes on serving the others
 * ```
 */
import type { Transport, TransportHandlers } from './transport.js';
import { PROTOCOL_VERSION } from './protocol.gen.js';

export interface HttpTransportOptions {
  /** The server's base URL: the `url` of its ready line, e.g. `http://127.0.0.1:7438`. */
  url: string;
  /** The bearer token: the contents of the server's `token_file` (trimmed). */
  token: string;
  /** The `fetch` to use. Default: the global one. */
  fetch?: typeof fetch;
  /**
   * Whether `close()` (the `shutdown` request) stops the server itself. Default false: it ends this
   * client only, answered here, since other processes share the server.
   */
  shutdownServer?: boolean;
}

interface StatsLine {
  type: string;
  version?: string;
  memories?: number;
  model?: { name?: string; dim?: number; digest?: string };
}

export class HttpTransport implements Transport {
  readonly url: string;
  private handlers: TransportHandlers | undefined;
  private readonly fetch: typeof fetch;
  private readonly inFlight = new Set<AbortController>();
  private ended = false;

  constructor(private readonly options: HttpTransportOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Asks the server for `stats` and reports a `ready` line made from it (version, model, memories, and
   * `url`; `data_dir` is empty and `startup_ms` 0: the server started before this client), or the error
   * it answered (a wrong token: `unauthorized`). Rejects when the server cannot be reached.
   */
  async start(handlers: TransportHandlers): Promise<void> {
    if (this.handlers) throw new Error('HttpTransport.start called twice');
    this.handlers = handlers;
    const answer = await this.post(JSON.stringify({ type: 'stats' }), undefined);
    const stats = JSON.parse(answer) as StatsLine;
    if (stats.type !== 'stats') {
      handlers.line(answer);
      return;
    }
    const ready = {
      type: 'ready',
      version: stats.version ?? '',
      protocol: PROTOCOL_VERSION,
      model: stats.model?.name ?? '',
      dim: stats.model?.dim ?? 0,
      model_digest: stats.model?.digest ?? '',
      data_dir: '',
      memories: stats.memories ?? 0,
      startup_ms: 0,
      url: this.url,
    };
    handlers.line(JSON.stringify(ready));
  }

  /** Sends each line as one POST /v1/command; its answer is reported as a line when it comes. */
  async write(data: string): Promise<void> {
    if (!this.handlers) throw new Error('HttpTransport is not started');
    if (this.ended) throw new Error('HttpTransport is closed');
    for (const line of data.split('\n')) {
      if (line.trim() === '') continue;
      const request = JSON.parse(line) as { type?: string; request_id?: string | number };
      if (request.type === 'shutdown' && !this.options.shutdownServer) {
        this.handlers.line(JSON.stringify({ type: 'ok', request_id: request.request_id }));
        this.end(0);
        continue;
      }
      // not awaited: requests run side by side, answers are matched by request_id
      void this.post(line, request.request_id).then(
        (answer) => {
          if (this.ended) return;
          this.handlers?.line(answer);
          if (request.type === 'shutdown') this.end(0);
        },
        (error: unknown) => {
          if (this.ended) return;
          const message = error instanceof Error ? error.message : String(error);
          this.handlers?.line(
            JSON.stringify({ type: 'error', code: 'http_failed', message: `POST ${this.url}/v1/command failed: ${message}`, request_id: request.request_id }),
          );
        },
      );
    }
  }

  /** Ends this client at once: requests in flight are aborted (the server may still run them). */
  async kill(): Promise<void> {
    this.end(null);
  }

  private end(code: number | null): void {
    if (this.ended) return;
    this.ended = true;
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
    this.handlers?.exit({ code, signal: null });
  }

  /** One POST; the answer as one line. An answer that is not the server's JSON (a proxy's page, uvicorn's
   * 503 beyond its connection limit) becomes an error line with code `http_<status>`. */
  private async post(body: string, requestId: string | number | undefined): Promise<string> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    try {
      const response = await this.fetch(`${this.url}/v1/command`, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.options.token}`, 'content-type': 'application/json' },
        body,
        signal: controller.signal,
      });
      const text = await response.text();
      let answer: Record<string, unknown> | undefined;
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) answer = parsed as Record<string, unknown>;
      } catch {
        answer = undefined;
      }
      if (!answer || typeof answer.type !== 'string') {
        answer = { type: 'error', code: `http_${response.status}`, message: `HTTP ${response.status}: ${text.slice(0, 200)}` };
      }
      // an answer made before the request was read (a wrong token, a body too large) carries no request_id
      if (answer.request_id === undefined && requestId !== undefined) answer.request_id = requestId;
      return JSON.stringify(answer);
    } finally {
      this.inFlight.delete(controller);
    }
  }
}
