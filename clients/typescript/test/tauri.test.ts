// TauriTransport with a fake shell-plugin Command built from the plugin's own EventEmitter and
// Child classes (Tauri itself cannot run here): event wiring, line splitting, write order, kill.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Child, EventEmitter, type CommandEvents, type OutputEvents } from '@tauri-apps/plugin-shell';
import { MemorySidecar, SidecarExitError } from '../src/index.js';
import { TauriTransport, type TauriCommand } from '../src/tauri.js';
import type { ExitInfo } from '../src/transport.js';
import { READY } from './fake-transport.js';

class FakeChild extends Child {
  readonly written: string[] = [];
  killed = false;
  constructor(private readonly onWrite: (data: string) => void) {
    super(4242);
  }
  override async write(data: string | Uint8Array | number[]): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3)); // IPC calls take a while
    const text = typeof data === 'string' ? data : new TextDecoder().decode(Uint8Array.from(data));
    this.written.push(text);
    this.onWrite(text);
  }
  override async kill(): Promise<void> {
    this.killed = true;
  }
}

class FakeCommand<O extends string | Uint8Array> extends EventEmitter<CommandEvents> {
  readonly stdout = new EventEmitter<OutputEvents<O>>();
  readonly stderr = new EventEmitter<OutputEvents<O>>();
  child: FakeChild | undefined;
  spawnError: Error | undefined;
  onWrite: (data: string) => void = () => undefined;
  async spawn(): Promise<Child> {
    if (this.spawnError) throw this.spawnError;
    this.child = new FakeChild((data) => this.onWrite(data));
    return this.child;
  }
}

function wire<O extends string | Uint8Array>(command: FakeCommand<O>, encoding: 'text' | 'raw' = 'text') {
  const lines: string[] = [];
  const stderr: string[] = [];
  const exits: ExitInfo[] = [];
  let made: { program: string; args: string[]; encoding: string } | undefined;
  const transport = new TauriTransport({
    program: 'binaries/memory-sidecar',
    args: ['--data-dir', '/data'],
    encoding,
    createCommand: (program, args, enc) => {
      made = { program, args, encoding: enc };
      return command as unknown as TauriCommand;
    },
  });
  const started = transport.start({
    line: (line) => lines.push(line),
    stderr: (text) => stderr.push(text),
    exit: (info) => exits.push(info),
  });
  return { transport, started, lines, stderr, exits, made: () => made };
}

describe('TauriTransport', () => {
  it('makes the command with the program, args and encoding it was given', async () => {
    const command = new FakeCommand<string>();
    const { started, made } = wire(command);
    await started;
    assert.deepEqual(made(), { program: 'binaries/memory-sidecar', args: ['--data-dir', '/data'], encoding: 'text' });
  });

  it('text mode: takes one line per data event, with or without its terminator', async () => {
    const command = new FakeCommand<string>();
    const { started, lines } = wire(command);
    await started;
    command.stdout.emit('data', '{"type":"ready"}'); // the plugin strips the newline (some versions)
    command.stdout.emit('data', '{"type":"ok","request_id":1}\n'); // or keeps it (others)
    command.stdout.emit('data', '{"type":"pong","request_id":2}\r\n');
    command.stdout.emit('data', '');
    assert.deepEqual(lines, ['{"type":"ready"}', '{"type":"ok","request_id":1}', '{"type":"pong","request_id":2}', '']);
  });

  it('raw mode: reassembles lines and characters cut anywhere between byte chunks', async () => {
    const command = new FakeCommand<Uint8Array>();
    const { started, lines } = wire(command, 'raw');
    await started;
    const text = '{"type":"ready"}\n{"type":"ok","id":"é✓😀"}\n{"type":"pong"}\n';
    const bytes = new TextEncoder().encode(text);
    for (let i = 0; i < bytes.length; i += 3) command.stdout.emit('data', bytes.slice(i, i + 3)); // cuts inside é, ✓, 😀
    assert.deepEqual(lines, ['{"type":"ready"}', '{"type":"ok","id":"é✓😀"}', '{"type":"pong"}']);
  });

  it('forwards stderr lines and shell errors, and reports close as the exit, once', async () => {
    const command = new FakeCommand<string>();
    const { started, stderr, exits } = wire(command);
    await started;
    command.stderr.emit('data', 'WARNING something');
    command.emit('error', 'stream did not contain valid UTF-8');
    command.emit('close', { code: null, signal: 9 });
    command.emit('close', { code: 0, signal: null });
    assert.deepEqual(stderr, ['WARNING something\n', '[tauri shell] stream did not contain valid UTF-8\n']);
    assert.deepEqual(exits, [{ code: null, signal: 9 }]);
  });

  it('rejects start when the command cannot be spawned', async () => {
    const command = new FakeCommand<string>();
    command.spawnError = new Error('shell:allow-spawn denied');
    const { started } = wire(command);
    await assert.rejects(started, /could not spawn sidecar binaries\/memory-sidecar: shell:allow-spawn denied/);
  });

  it('writes in call order although each write is an async IPC call, and kills the child', async () => {
    const command = new FakeCommand<string>();
    const { transport, started } = wire(command);
    await started;
    await Promise.all(Array.from({ length: 20 }, (_, i) => transport.write(`${i}\n`)));
    assert.deepEqual(command.child!.written, Array.from({ length: 20 }, (_, i) => `${i}\n`));
    await transport.kill();
    assert.equal(command.child!.killed, true);
  });

  it('carries a whole MemorySidecar session: ready, requests in flight, exit', async () => {
    const command = new FakeCommand<string>();
    command.onWrite = (data) => {
      const request = JSON.parse(data) as { type: string; request_id: number };
      const answer = request.type === 'ping' ? { type: 'pong' } : { type: 'ok', id: `id-${request.request_id}` };
      setTimeout(() => command.stdout.emit('data', JSON.stringify({ ...answer, request_id: request.request_id })), Math.random() * 5);
    };
    const transport = new TauriTransport({ createCommand: () => command as unknown as TauriCommand });
    const starting = MemorySidecar.start(transport);
    await new Promise((resolve) => setTimeout(resolve, 5));
    command.stdout.emit('data', JSON.stringify(READY));
    const sidecar = await starting;
    const stores = await Promise.all(Array.from({ length: 20 }, (_, i) => sidecar.store({ user_id: '1', content: `m${i}` })));
    assert.deepEqual(
      stores.map((s) => s.id),
      stores.map((s) => `id-${s.request_id}`),
    );
    assert.equal((await sidecar.ping()).type, 'pong');
    const hanging = sidecar.stats();
    command.onWrite = () => undefined;
    await new Promise((resolve) => setTimeout(resolve, 10));
    command.stderr.emit('data', 'killed by the OS');
    command.emit('close', { code: null, signal: 9 });
    await assert.rejects(hanging, (e: unknown) => e instanceof SidecarExitError && e.signal === 9 && /killed by the OS/.test(e.message));
  });
});
