import { SidecarError, SidecarExitError, SidecarProtocolError, SidecarTimeoutError, MemorySidecarError } from './errors.js';
import type { MessageIn, ReadyResponse, StoreRequest } from './protocol.gen.js';
import type { ExitInfo, Transport, TransportHandlers } from './transport.js';
import {
  RESPONSE_TYPE_OF,
  type Params,
  type RequestArgs,
  type RequestOptions,
  type RequestType,
  type ResponseOf,
  type StoreMessage,
} from './types.js';

export interface MemorySidecarOptions {
  /** How long to wait for the `ready` line after spawning (the model load). Default 120 000 ms. */
  readyTimeoutMs?: number;
  /** Default per-request timeout; `0` waits forever. Default 30 000 ms. Overridable per call. */
  timeoutMs?: number;
  /** How much of the end of stderr to keep for exit errors. Default 8192 characters. */
  stderrTailChars?: number;
  /** Called with every piece of stderr text (the sidecar's log), e.g. to forward it to your logger. */
  onStderr?: (text: string) => void;
  /** `close()`'s default grace period before it kills the process. Default 10 000 ms. */
  shutdownGraceMs?: number;
}

interface Pending {
  type: RequestType;
  expect: string;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

type State = 'new' | 'starting' | 'ready' | 'closing' | 'exited';

const DEFAULT_READY_TIMEOUT_MS = 120_000;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_STDERR_TAIL_CHARS = 8192;
const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
const KILL_WAIT_MS = 5_000;

function delay(ms: number): { promise: Promise<void>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const promise = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * A client of one memory-sidecar process, over any `Transport`.
 *
 * ```ts
 * const sidecar = await MemorySidecar.start(new NodeTransport({ args: ['--data-dir', dir] }));
 * await sidecar.store({ user_id: '123', content: 'my cat Miso hates the vacuum' });
 * const { messages } = await sidecar.query({ user_id: '123', text: 'pets' });
 * await sidecar.close();
 * ```
 *
 * Every request gets a numeric `request_id`; answers are matched by it (an answer without one,
 * which only a line the sidecar could not parse gets, goes to the oldest unanswered request, as
 * answers come in request order). Any number of requests may be in flight.
 */
export class MemorySidecar {
  /** The sidecar's `ready` line (version, protocol, model, data_dir, ...). */
  get ready(): ReadyResponse {
    if (!this.readyLine) throw new MemorySidecarError('memory-sidecar is not ready yet');
    return this.readyLine;
  }
  /** Resolves when the process has ended, however it ended (it never rejects). */
  readonly closed: Promise<ExitInfo>;

  private state: State = 'new';
  private readyLine: ReadyResponse | undefined;
  private readyWaiter: { resolve(r: ReadyResponse): void; reject(e: Error): void } | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  /** Ids sent and not answered yet, oldest first; timed-out ones stay until their answer comes. */
  private readonly unanswered: number[] = [];
  private tail = '';
  private exitInfo: ExitInfo | undefined;
  private resolveClosed!: (info: ExitInfo) => void;
  private readonly readyTimeoutMs: number;
  private readonly timeoutMs: number;
  private readonly stderrTailChars: number;
  private readonly shutdownGraceMs: number;

  private constructor(
    private readonly transport: Transport,
    private readonly options: MemorySidecarOptions,
  ) {
    this.readyTimeoutMs = options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.stderrTailChars = options.stderrTailChars ?? DEFAULT_STDERR_TAIL_CHARS;
    this.shutdownGraceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  /**
   * Starts the process through `transport` and resolves once its `ready` line has come. Rejects
   * with `SidecarError` (code `startup_failed`) when the sidecar reports a failed start-up, with
   * `SidecarExitError` when it exits (or cannot be spawned) first, and with `MemorySidecarError`
   * after `readyTimeoutMs` (the process is killed then).
   */
  static async start(transport: Transport, options: MemorySidecarOptions = {}): Promise<MemorySidecar> {
    const sidecar = new MemorySidecar(transport, options);
    await sidecar.begin();
    return sidecar;
  }

  /** The last `stderrTailChars` characters the process wrote to stderr. */
  get stderrTail(): string {
    return this.tail;
  }

  /** How the process ended, once it has. */
  get exit(): ExitInfo | undefined {
    return this.exitInfo;
  }

  /** Requests sent and not answered yet (timed-out ones not counted). */
  get inFlight(): number {
    return this.pending.size;
  }

  private async begin(): Promise<void> {
    this.state = 'starting';
    const ready = new Promise<ReadyResponse>((resolve, reject) => (this.readyWaiter = { resolve, reject }));
    ready.catch(() => undefined); // handled below; keeps an early rejection from being "unhandled"
    const handlers: TransportHandlers = {
      line: (line) => this.onLine(line),
      stderr: (text) => this.onStderr(text),
      exit: (info) => this.onExit(info),
    };
    try {
      await this.transport.start(handlers);
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      this.onExit({ code: null, signal: null, error: err });
      throw new SidecarExitError(this.exitInfo!, this.tail, 'before it was ready');
    }
    const timer = delay(this.readyTimeoutMs);
    const timedOut = timer.promise.then(() => {
      throw new MemorySidecarError(
        `memory-sidecar sent no ready line within ${this.readyTimeoutMs} ms; killed it` +
          (this.tail.trim() ? `; last stderr:\n${this.tail.trimEnd()}` : ''),
      );
    });
    try {
      this.readyLine = await Promise.race([ready, timedOut]);
      this.state = 'ready';
    } catch (error) {
      if (!this.exitInfo) await this.forceKill();
      throw error;
    } finally {
      timer.cancel();
      this.readyWaiter = undefined;
    }
  }

  // ------------------------------------------------------------------ transport events

  private onStderr(text: string): void {
    this.tail = (this.tail + text).slice(-this.stderrTailChars);
    this.options.onStderr?.(text);
  }

  private onLine(line: string): void {
    if (line.trim() === '') return;
    let msg: unknown;
    try {
      msg = JSON.parse(line);
    } catch {
      msg = undefined;
    }
    const obj = typeof msg === 'object' && msg !== null && !Array.isArray(msg) ? (msg as Record<string, unknown>) : undefined;
    if (this.state === 'starting') {
      const waiter = this.readyWaiter;
      if (!waiter) return;
      if (obj?.type === 'ready') waiter.resolve(obj as unknown as ReadyResponse);
      else if (obj?.type === 'error')
        waiter.reject(new SidecarError(String(obj.code), `memory-sidecar failed to start: ${String(obj.message)}`));
      else waiter.reject(new SidecarProtocolError(`memory-sidecar's first line is not ready: ${line.slice(0, 200)}`, line));
      return;
    }
    const rid = obj?.request_id;
    let id: number | undefined;
    if (rid === undefined || rid === null) id = this.unanswered[0];
    else if (typeof rid === 'number' && this.unanswered.includes(rid)) id = rid;
    if (id === undefined) return; // an answer to nothing we asked: ignore it
    this.unanswered.splice(this.unanswered.indexOf(id), 1);
    const entry = this.pending.get(id);
    if (!entry) return; // the request timed out; its late answer is dropped
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (!obj) {
      entry.reject(new SidecarProtocolError(`memory-sidecar answered ${entry.type} with a line that is not a JSON object: ${line.slice(0, 200)}`, line));
    } else if (obj.type === 'error') {
      entry.reject(new SidecarError(String(obj.code), String(obj.message), entry.type, id));
    } else if (obj.type !== entry.expect) {
      entry.reject(new SidecarProtocolError(`memory-sidecar answered ${entry.type} with type ${JSON.stringify(obj.type)}, expected ${entry.expect}`, line));
    } else {
      entry.resolve(obj);
    }
  }

  private onExit(info: ExitInfo): void {
    if (this.exitInfo) return;
    this.exitInfo = info;
    this.state = 'exited';
    this.readyWaiter?.reject(new SidecarExitError(info, this.tail, 'before it was ready'));
    for (const [id, entry] of this.pending) {
      clearTimeout(entry.timer);
      entry.reject(new SidecarExitError(info, this.tail, `while ${entry.type} (request_id ${id}) was pending`));
    }
    this.pending.clear();
    this.unanswered.length = 0;
    this.resolveClosed(info);
  }

  // ------------------------------------------------------------------ requests

  /**
   * Sends any request and resolves with its answer (typed by `type`); rejects with `SidecarError`
   * when the answer is an `error` line, `SidecarTimeoutError` after the timeout and
   * `SidecarExitError` when the process ends first.
   */
  request<T extends RequestType>(type: T, ...args: RequestArgs<T>): Promise<ResponseOf<T>> {
    const [params, options] = args;
    return this.send(type, params ?? {}, options);
  }

  private send<T extends RequestType>(type: T, params: object, options: RequestOptions = {}): Promise<ResponseOf<T>> {
    if (this.exitInfo) {
      return Promise.reject(new SidecarExitError(this.exitInfo, this.tail, `before ${type} was sent`));
    }
    if (this.state !== 'ready' && !(this.state === 'closing' && type === 'shutdown')) {
      return Promise.reject(new MemorySidecarError(`memory-sidecar is ${this.state === 'closing' ? 'shutting down' : 'not ready'}; ${type} not sent`));
    }
    const id = this.nextId++;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const line = JSON.stringify({ ...params, type, request_id: id }) + '\n';
    return new Promise<ResponseOf<T>>((resolve, reject) => {
      const entry: Pending = {
        type,
        expect: RESPONSE_TYPE_OF[type],
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
      };
      if (timeoutMs > 0 && Number.isFinite(timeoutMs)) {
        entry.timer = setTimeout(() => {
          if (this.pending.delete(id)) reject(new SidecarTimeoutError(type, timeoutMs, id));
        }, timeoutMs);
      }
      this.pending.set(id, entry);
      this.unanswered.push(id);
      this.transport.write(line).catch((error: unknown) => {
        if (!this.pending.delete(id)) return; // already answered, timed out or failed by the exit
        clearTimeout(entry.timer);
        const at = this.unanswered.indexOf(id);
        if (at >= 0) this.unanswered.splice(at, 1);
        const err = error instanceof Error ? error : new Error(String(error));
        reject(new MemorySidecarError(`could not write ${type} to memory-sidecar: ${err.message}`, { cause: err }));
      });
    });
  }

  // ------------------------------------------------------------------ lifecycle

  /**
   * Graceful stop: sends `shutdown` (the sidecar answers the requests before it, flushes, closes
   * its store and exits 0), waits up to `graceMs` for the exit, then kills the process. Resolves
   * with how it ended. Safe to call more than once.
   */
  async close(options: { graceMs?: number } = {}): Promise<ExitInfo> {
    if (this.exitInfo) return this.exitInfo;
    const graceMs = options.graceMs ?? this.shutdownGraceMs;
    if (this.state === 'ready') {
      this.state = 'closing';
      this.send('shutdown', {}, { timeoutMs: graceMs }).catch(() => undefined);
    }
    const wait = delay(graceMs);
    const exited = await Promise.race([this.closed, wait.promise.then(() => undefined)]);
    wait.cancel();
    return exited ?? (await this.forceKill());
  }

  /** Kills the process at once (SIGKILL with Node) and resolves when it is gone. */
  async kill(): Promise<ExitInfo> {
    return this.exitInfo ?? (await this.forceKill());
  }

  private async forceKill(): Promise<ExitInfo> {
    await this.transport.kill().catch(() => undefined);
    const wait = delay(KILL_WAIT_MS);
    const exited = await Promise.race([this.closed, wait.promise.then(() => undefined)]);
    wait.cancel();
    if (exited) return exited;
    // The transport never reported the exit: report it ourselves so nothing waits forever.
    this.onExit({ code: null, signal: null, error: new Error(`no exit reported ${KILL_WAIT_MS} ms after kill`) });
    return this.exitInfo!;
  }

  // ------------------------------------------------------------------ typed commands

  /** Stores one message; answers `{type:'ok', id}`. */
  store(message: StoreMessage, options?: RequestOptions) {
    return this.send('store', message, options);
  }
  /** Stores many messages in one commit; answers `{type:'ok', ids}` in the same order. */
  storeMany(messages: MessageIn[], extra: Pick<StoreRequest, 'extract'> = {}, options?: RequestOptions) {
    return this.send('store', { ...extra, messages }, options);
  }
  /** One user's memories, best first (`mode`: hybrid, semantic, keyword or graph). */
  query(params: Params<'query'>, options?: RequestOptions) {
    return this.send('query', params, options);
  }
  cleanup(params: Params<'cleanup'> = {}, options?: RequestOptions) {
    return this.send('cleanup', params, options);
  }
  /** Deletes one memory by id (a `not_found` SidecarError when there is none). */
  delete(params: Params<'delete'>, options?: RequestOptions) {
    return this.send('delete', params, options);
  }
  /** Deletes everything about a user: messages, facts, graph. */
  forgetUser(params: Params<'forget_user'>, options?: RequestOptions) {
    return this.send('forget_user', params, options);
  }
  stats(options?: RequestOptions) {
    return this.send('stats', {}, options);
  }
  ping(options?: RequestOptions) {
    return this.send('ping', {}, options);
  }
  health(options?: RequestOptions) {
    return this.send('health', {}, options);
  }
  channelContext(params: Params<'channel_context'>, options?: RequestOptions) {
    return this.send('channel_context', params, options);
  }
  history(params: Params<'history'>, options?: RequestOptions) {
    return this.send('history', params, options);
  }
  remember(params: Params<'remember'>, options?: RequestOptions) {
    return this.send('remember', params, options);
  }
  extractInline(params: Params<'extract_inline'>, options?: RequestOptions) {
    return this.send('extract_inline', params, options);
  }
  memoryInstructions(options?: RequestOptions) {
    return this.send('memory_instructions', {}, options);
  }
  resolve(params: Params<'resolve'>, options?: RequestOptions) {
    return this.send('resolve', params, options);
  }
  facts(params: Params<'facts'>, options?: RequestOptions) {
    return this.send('facts', params, options);
  }
  recall(params: Params<'recall'>, options?: RequestOptions) {
    return this.send('recall', params, options);
  }
  factHistory(params: Params<'fact_history'>, options?: RequestOptions) {
    return this.send('fact_history', params, options);
  }
  updateFact(params: Params<'update_fact'>, options?: RequestOptions) {
    return this.send('update_fact', params, options);
  }
  forgetFact(params: Params<'forget_fact'>, options?: RequestOptions) {
    return this.send('forget_fact', params, options);
  }
  /** A prompt-ready block of facts (and optionally channel and history blocks). */
  context(params: Params<'context'>, options?: RequestOptions) {
    return this.send('context', params, options);
  }
  /** Waits for background extraction; the default timeout follows `params.timeout` (120 s) + 10 s. */
  sync(params: Params<'sync'> = {}, options?: RequestOptions) {
    const timeoutMs = options?.timeoutMs ?? ((params.timeout ?? 120) * 1000 + 10_000);
    return this.send('sync', params, { ...options, timeoutMs });
  }
  entities(params: Params<'entities'>, options?: RequestOptions) {
    return this.send('entities', params, options);
  }
  entity(params: Params<'entity'>, options?: RequestOptions) {
    return this.send('entity', params, options);
  }
  mergeEntities(params: Params<'merge_entities'>, options?: RequestOptions) {
    return this.send('merge_entities', params, options);
  }
  consolidate(params: Params<'consolidate'> = {}, options?: RequestOptions) {
    return this.send('consolidate', params, options);
  }
  graphRecall(params: Params<'graph_recall'>, options?: RequestOptions) {
    return this.send('graph_recall', params, options);
  }
  /** Writes the memory (one user's, or everyone's) to a portable file the sidecar creates (docs/portability.md). */
  exportMemory(params: Params<'export'>, options?: RequestOptions) {
    return this.send('export', params, options);
  }
  /** Reads a portable file (or plain JSON Lines) into the memory; large files: prefer the CLI. */
  importMemory(params: Params<'import'>, options?: RequestOptions) {
    return this.send('import', params, options);
  }
}
