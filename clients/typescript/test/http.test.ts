// The HTTP transport end to end against a REAL `memory-sidecar serve` ($SIDECAR_PYTHON -m sidecar serve, default
// python3, or the frozen binary at $SIDECAR_BIN): the real model, a real LanceDB data dir in a temp folder, real
// sockets and the global fetch.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { HttpTransport, MemorySidecar, SidecarError } from '../src/index.js';
import { LineSplitter } from '../src/lines.js';

const PYTHON = process.env.SIDECAR_PYTHON || 'python3';
const BIN = process.env.SIDECAR_BIN || undefined;
const REPO = fileURLToPath(new URL('../../../..', import.meta.url)); // dist/test/ -> the repo root
const TIMEOUT = { timeout: 180_000 };

interface Served {
  child: ChildProcessWithoutNullStreams;
  url: string;
  token: string;
  exited: Promise<number | null>;
}

async function serve(dataDir: string): Promise<Served> {
  const argv = ['serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--ttl-days', '0'];
  const child = BIN
    ? spawn(BIN, argv, { cwd: tmpdir(), stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(PYTHON, ['-m', 'sidecar', ...argv], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.resume();
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  const first = await new Promise<string>((resolve, reject) => {
    const splitter = new LineSplitter((line) => resolve(line));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => splitter.push(chunk));
    void exited.then((code) => reject(new Error(`serve exited with ${code} before its ready line`)));
  });
  const ready = JSON.parse(first) as { type: string; url: string; token_file: string };
  assert.equal(ready.type, 'ready', first);
  return { child, url: ready.url, token: readFileSync(ready.token_file, 'utf8').trim(), exited };
}

function isCode(code: string) {
  return (e: unknown) => {
    assert.ok(e instanceof SidecarError, `expected a SidecarError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

describe('HTTP transport against memory-sidecar serve', TIMEOUT, () => {
  let dataDir: string;
  let served: Served;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'memory-sidecar-http-'));
    served = await serve(dataDir);
  });

  after(async () => {
    if (served?.child.exitCode === null) served.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts with a ready line made from stats, and round-trips store and query', async () => {
    const sidecar = await MemorySidecar.start(new HttpTransport({ url: served.url, token: served.token }));
    assert.equal(sidecar.ready.dim, 384);
    assert.equal(sidecar.ready.url, served.url);
    const stored = await sidecar.store({ user_id: 'h1', content: 'my cat Miso hates the vacuum' });
    const { messages } = await sidecar.query({ user_id: 'h1', text: 'pets', limit: 1 });
    assert.equal(messages[0]?.id, stored.id);
    await assert.rejects(sidecar.delete({ user_id: 'h1', id: 'no-such-id' }), isCode('not_found'));
    assert.deepEqual(await sidecar.close(), { code: 0, signal: null });
    assert.equal(served.child.exitCode, null); // close() ended this client, not the shared server
  });

  it('runs many requests at once, each answered by its own request_id', async () => {
    const clients = await Promise.all([0, 1, 2].map(() => MemorySidecar.start(new HttpTransport({ url: served.url, token: served.token }))));
    const stored = await Promise.all(
      clients.flatMap((c, n) => [0, 1, 2, 3].map((i) => c.store({ user_id: `many${n}`, content: `note ${i} of client ${n}` }))),
    );
    assert.equal(new Set(stored.map((s) => s.id)).size, 12);
    const found = await Promise.all(clients.map((c, n) => c.query({ user_id: `many${n}`, text: 'note', limit: 10 })));
    for (const [n, result] of found.entries()) {
      assert.deepEqual(new Set(result.messages.map((m) => m.content)), new Set([0, 1, 2, 3].map((i) => `note ${i} of client ${n}`)));
    }
    for (const c of clients) await c.close();
  });

  it('a wrong token fails the start with unauthorized', async () => {
    await assert.rejects(MemorySidecar.start(new HttpTransport({ url: served.url, token: 'wrong-token-0123456789' })), isCode('unauthorized'));
  });

  it('with shutdownServer, close() stops the server, which exits 0', async () => {
    const sidecar = await MemorySidecar.start(new HttpTransport({ url: served.url, token: served.token, shutdownServer: true }));
    assert.equal((await sidecar.close()).code, 0);
    assert.equal(await served.exited, 0);
  });
});
