/**
 * The Node.js transport: spawns the sidecar with `child_process.spawn` (`memory-sidecar` by
 * default, or `python -m sidecar`, or a frozen binary). Node only; for Tauri use
 * `memory-sidecar-client/tauri`.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { LineSplitter } from './lines.js';
import type { Transport, TransportHandlers } from './transport.js';

export interface NodeTransportOptions {
  /** The program to run. Default `memory-sidecar` (on PATH); e.g. `python3` with `args: ['-m', 'sidecar']`. */
  command?: string;
  /** Its arguments, e.g. `['--data-dir', dir]`. */
  args?: string[];
  /** Environment of the process. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  /** Working directory of the process. */
  cwd?: string;
}

const GONE = new Set(['EPIPE', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END', 'ECONNRESET']);

export class NodeTransport implements Transport {
  readonly command: string;
  readonly args: string[];
  private child: ChildProcessWithoutNullStreams | undefined;

  constructor(private readonly options: NodeTransportOptions = {}) {
    this.command = options.command ?? 'memory-sidecar';
    this.args = options.args ?? [];
  }

  /** The process id, once spawned. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(handlers: TransportHandlers): Promise<void> {
    if (this.child) return Promise.reject(new Error('NodeTransport.start called twice'));
    return new Promise<void>((resolve, reject) => {
      const child = spawn(this.command, this.args, {
        cwd: this.options.cwd,
        env: this.options.env ?? process.env,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
      this.child = child;
      let spawned = false;
      let exited = false;
      const splitter = new LineSplitter((line) => handlers.line(line));
      child.stdout.setEncoding('utf8'); // a StringDecoder: a character cut between chunks survives
      child.stdout.on('data', (chunk: string) => splitter.push(chunk));
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => handlers.stderr(chunk));
      child.stdin.on('error', () => undefined); // EPIPE once the child is gone: reported by 'close'
      child.once('spawn', () => {
        spawned = true;
        resolve();
      });
      child.on('error', (error) => {
        // Before 'spawn': the program could not be started. After it: a failed kill or similar,
        // nothing to report (a listener must stay, or a second 'error' would be thrown).
        if (!spawned && !exited) {
          exited = true;
          reject(new Error(`could not start ${this.command}: ${error.message}`, { cause: error }));
        }
      });
      // 'close' comes after stdout and stderr have ended, so every line is delivered before it.
      child.once('close', (code, signal) => {
        if (exited) return;
        exited = true;
        splitter.end();
        handlers.exit({ code, signal });
      });
    });
  }

  write(data: string): Promise<void> {
    const child = this.child;
    if (!child) return Promise.reject(new Error('NodeTransport is not started'));
    return new Promise<void>((resolve, reject) => {
      child.stdin.write(data, 'utf8', (error) => {
        // A write to a dead child fails with EPIPE: the exit (with its code, signal and stderr)
        // is the useful error, and it is on its way through 'close'.
        if (!error || GONE.has((error as NodeJS.ErrnoException).code ?? '')) resolve();
        else reject(error);
      });
    });
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /** Closes the child's stdin (the sidecar then finishes and exits 0, as on `shutdown`). */
  endInput(): void {
    this.child?.stdin.end();
  }
}

/**
 * A `NodeTransport` running the sidecar with a Python interpreter: `python -m sidecar ...args`
 * (the `sidecar` package must be installed in that interpreter's environment).
 */
export function pythonTransport(python = 'python3', args: string[] = [], options: Omit<NodeTransportOptions, 'command' | 'args'> = {}): NodeTransport {
  return new NodeTransport({ ...options, command: python, args: ['-m', 'sidecar', ...args] });
}
