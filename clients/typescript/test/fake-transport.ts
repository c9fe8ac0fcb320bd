import type { ExitInfo, Transport, TransportHandlers } from '../src/transport.js';

/** A scripted transport for unit tests: records writes, lets the test emit lines and exits. */
export class FakeTransport implements Transport {
  handlers: TransportHandlers | undefined;
  readonly written: Record<string, unknown>[] = [];
  killed = false;
  /** Called on every request written; may answer through `this.emit`. */
  onRequest: ((request: Record<string, unknown>) => void) | undefined;

  async start(handlers: TransportHandlers): Promise<void> {
    this.handlers = handlers;
  }

  async write(data: string): Promise<void> {
    for (const line of data.split('\n')) {
      if (!line) continue;
      const request = JSON.parse(line) as Record<string, unknown>;
      this.written.push(request);
      this.onRequest?.(request);
    }
  }

  async kill(): Promise<void> {
    this.killed = true;
    queueMicrotask(() => this.exit({ code: null, signal: 'SIGKILL' }));
  }

  emit(obj: unknown): void {
    this.handlers!.line(typeof obj === 'string' ? obj : JSON.stringify(obj));
  }

  stderr(text: string): void {
    this.handlers!.stderr(text);
  }

  exit(info: ExitInfo): void {
    this.handlers!.exit(info);
  }
}

export const READY = {
  type: 'ready',
  version: '0.0.0',
  protocol: 1,
  model: 'm',
  dim: 384,
  model_digest: 'x',
  data_dir: '/tmp/x',
  memories: 0,
  startup_ms: 1,
};
