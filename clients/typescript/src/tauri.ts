/**
 * The Tauri v2 transport: runs the sidecar with `Command.sidecar(...)` from
 * `@tauri-apps/plugin-shell` (an `externalBin`), reads its `stdout`/`stderr` `data` events and
 * writes with `child.write`. Needs the capabilities `shell:allow-spawn` (for this sidecar),
 * `shell:allow-stdin-write` and `shell:allow-kill`; see docs/hosts.md.
 */
import { Command, type Child, type TerminatedPayload } from '@tauri-apps/plugin-shell';
import { LineSplitter } from './lines.js';
import type { Transport, TransportHandlers } from './transport.js';

/** What the transport uses of a shell-plugin `Command` (text or raw output). */
export type TauriCommand = Pick<Command<string>, 'stdout' | 'stderr' | 'on' | 'spawn'> | Pick<Command<Uint8Array>, 'stdout' | 'stderr' | 'on' | 'spawn'>;

export interface TauriTransportOptions {
  /** The `externalBin` entry, as in tauri.conf.json. Default `binaries/memory-sidecar`. */
  program?: string;
  /** Arguments, e.g. `['--data-dir', dir]` (each must be allowed by the capability). */
  args?: string[];
  /**
   * `'text'` (default): the plugin decodes UTF-8 and emits one `data` event per line.
   * `'raw'`: it emits byte chunks with arbitrary boundaries, decoded and split here.
   */
  encoding?: 'text' | 'raw';
  /** Makes the `Command` (default: `Command.sidecar(program, args, ...)`); tests pass a fake. */
  createCommand?: (program: string, args: string[], encoding: 'text' | 'raw') => TauriCommand;
}

function defaultCommand(program: string, args: string[], encoding: 'text' | 'raw'): TauriCommand {
  return encoding === 'raw' ? Command.sidecar(program, args, { encoding: 'raw' }) : Command.sidecar(program, args);
}

/**
 * Feeds one `data` payload into `splitter`. Text mode: each event is one line, with its `\n` (or
 * `\r`) kept or stripped depending on the plugin version, so a missing terminator is added back.
 * Raw mode: bytes, decoded with a streaming decoder (a character cut between chunks survives).
 */
function feeder(splitter: LineSplitter, encoding: 'text' | 'raw'): (data: string | Uint8Array) => void {
  const decoder = new TextDecoder('utf-8');
  return (data) => {
    if (typeof data !== 'string') {
      splitter.push(decoder.decode(data, { stream: true }));
    } else if (encoding === 'raw') {
      splitter.push(data);
    } else {
      splitter.push(data.endsWith('\n') || data.endsWith('\r') ? data : `${data}\n`);
    }
  };
}

export class TauriTransport implements Transport {
  readonly program: string;
  readonly args: string[];
  private readonly encoding: 'text' | 'raw';
  private child: Pick<Child, 'write' | 'kill' | 'pid'> | undefined;
  private writes: Promise<void> = Promise.resolve();
  private exited = false;

  constructor(private readonly options: TauriTransportOptions = {}) {
    this.program = options.program ?? 'binaries/memory-sidecar';
    this.args = options.args ?? [];
    this.encoding = options.encoding ?? 'text';
  }

  /** The process id, once spawned. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(handlers: TransportHandlers): Promise<void> {
    if (this.child) throw new Error('TauriTransport.start called twice');
    const command = (this.options.createCommand ?? defaultCommand)(this.program, this.args, this.encoding);
    const out = new LineSplitter((line) => handlers.line(line));
    const feedOut = feeder(out, this.encoding);
    const err = new LineSplitter((line) => handlers.stderr(`${line}\n`));
    const feedErr = feeder(err, this.encoding);
    // The union of the two Command types has two `on` signatures; both take these listeners.
    const c = command as Pick<Command<string | Uint8Array>, 'stdout' | 'stderr' | 'on' | 'spawn'>;
    c.stdout.on('data', feedOut);
    c.stderr.on('data', feedErr);
    c.on('error', (message: string) => handlers.stderr(`[tauri shell] ${message}\n`));
    c.on('close', (payload: TerminatedPayload) => {
      if (this.exited) return;
      this.exited = true;
      out.end();
      err.end();
      handlers.exit({ code: payload.code, signal: payload.signal });
    });
    try {
      this.child = await c.spawn();
    } catch (error) {
      this.exited = true;
      throw new Error(`could not spawn sidecar ${this.program}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }

  write(data: string): Promise<void> {
    const child = this.child;
    if (!child) return Promise.reject(new Error('TauriTransport is not started'));
    // One IPC call per write; chained so lines reach stdin in the order they were written.
    const next = this.writes.then(() => child.write(data));
    this.writes = next.catch(() => undefined);
    return next;
  }

  async kill(): Promise<void> {
    if (this.child && !this.exited) await this.child.kill();
  }
}
