// End to end against the REAL sidecar: `$SIDECAR_PYTHON -m sidecar` (default python3), or the frozen
// binary at `$SIDECAR_BIN` when that is set (what a desktop app spawns; tests/test_frozen.py runs this suite
// against the onedir build), the real ONNX model and a real LanceDB data dir in a temp folder, over real
// pipes (NodeTransport).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  MemorySidecar,
  PROTOCOL_VERSION,
  SidecarError,
  SidecarExitError,
  SidecarTimeoutError,
  type MemorySidecarOptions,
  type RequestType,
} from '../src/index.js';
import { NodeTransport, pythonTransport } from '../src/node.js';

const PYTHON = process.env.SIDECAR_PYTHON || 'python3';
const BIN = process.env.SIDECAR_BIN || undefined;
// A onefile build runs as two processes: the pid we spawned is its launcher, the sidecar is the launcher's child.
const ONEFILE = BIN !== undefined && !existsSync(join(dirname(BIN), '_internal'));
const REPO = fileURLToPath(new URL('../../../..', import.meta.url)); // dist/test/ -> the repo root
const TIMEOUT = { timeout: 180_000 }; // per suite; a busy 2-core machine starts the sidecar in seconds, not minutes
const tempDirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'memory-sidecar-ts-'));
  tempDirs.push(dir);
  return dir;
}

function transport(dataDir: string, ...args: string[]) {
  const argv = ['--data-dir', dataDir, '--ttl-days', '0', ...args];
  // the binary runs from a folder with no Python project around it, as in an app bundle
  if (BIN) return new NodeTransport({ command: BIN, args: argv, cwd: tmpdir() });
  // cwd = the repo root, so `-m sidecar` runs this checkout's sidecar package
  return pythonTransport(PYTHON, argv, { cwd: REPO });
}

async function startSidecar(dataDir: string, options: MemorySidecarOptions = {}) {
  const t = transport(dataDir);
  const sidecar = await MemorySidecar.start(t, options);
  return { sidecar, pid: t.pid! };
}

function isCode(code: string) {
  return (e: unknown) => {
    assert.ok(e instanceof SidecarError, `expected a SidecarError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

after(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('real sidecar: one session', TIMEOUT, () => {
  let sidecar: MemorySidecar;
  let pid: number;
  let dataDir: string;

  before(async () => {
    dataDir = tempDir();
    ({ sidecar, pid } = await startSidecar(dataDir));
  });

  after(async () => {
    await sidecar?.kill(); // only matters when a test failed before the close test
  });

  it('is ready: protocol, model and data dir', () => {
    assert.equal(sidecar.ready.type, 'ready');
    assert.equal(sidecar.ready.protocol, PROTOCOL_VERSION);
    assert.equal(sidecar.ready.dim, 384);
    assert.equal(sidecar.ready.data_dir, dataDir);
    assert.equal(sidecar.ready.memories, 0);
  });

  it('store and query round trip, single and batch', async () => {
    const stored = await sidecar.store({ user_id: '123', content: 'my cat Miso hates the vacuum', username: 'alice' });
    assert.equal(stored.type, 'ok');
    assert.match(stored.id ?? '', /^[0-9a-f-]{36}$/);
    const batch = await sidecar.storeMany([
      { user_id: '123', content: 'I work at Acme Robotics as an engineer' },
      { user_id: '456', content: 'my dog Rex loves the beach', is_bot: false },
    ]);
    assert.equal(batch.ids?.length, 2);
    const { messages } = await sidecar.query({ user_id: '123', text: 'tell me about pets', limit: 1 });
    assert.equal(messages.length, 1);
    assert.equal(messages[0]?.content, 'my cat Miso hates the vacuum');
    assert.equal(messages[0]?.id, stored.id);
    assert.equal(messages[0]?.user_id, '123');
    const other = await sidecar.query({ user_id: '456', text: 'dog', limit: 5, mode: 'keyword' });
    assert.deepEqual(other.messages.map((m) => m.content), ['my dog Rex loves the beach']);
  });

  it('facts and context: remember, facts, update_fact, fact_history, context, forget_fact', async () => {
    const remembered = await sidecar.remember({ user_id: '123', text: 'Lives in New York', category: 'answer' });
    assert.equal(remembered.action, 'added');
    const factId = remembered.fact.id;
    const facts = await sidecar.facts({ user_id: '123', text: 'where does she live' });
    assert.deepEqual(facts.facts.map((f) => f.text), ['Lives in New York']);
    const updated = await sidecar.updateFact({ fact_id: factId, text: 'Lives in Boston' });
    assert.equal(updated.fact.text, 'Lives in Boston');
    const history = await sidecar.factHistory({ fact_id: factId });
    assert.ok(history.events.length >= 2, JSON.stringify(history.events));
    const context = await sidecar.context({ users: { '123': 'alice' }, text: 'where do I live?', include: ['facts'] });
    assert.equal(context.format, 'xml');
    assert.equal(context.facts, 1);
    assert.match(context.text, /<user name="alice">\n- Lives in Boston\n<\/user>/);
    // by default also what is true now (her relations) and the stored messages relevant to the text
    const full = await sidecar.context({ users: { '123': 'alice' }, text: 'what toy should I get my cat?' });
    assert.match(full.text, /<true_now>\n- Works at Acme Robotics \(as of \w+ \d{4}\)\n/);
    assert.match(full.text, /<memories>\n- \d{4}-\d\d-\d\d alice: my cat Miso hates the vacuum\n<\/memories>/);
    assert.ok(full.relations >= 1 && full.memories === 1, JSON.stringify(full));
    const forgotten = await sidecar.forgetFact({ fact_id: factId });
    assert.equal(forgotten.deleted, 1);
    assert.deepEqual((await sidecar.facts({ user_id: '123' })).facts, []);
    await assert.rejects(sidecar.forgetFact({ fact_id: factId }), isCode('not_found'));
  });

  it('graph: entities and graph_recall answer with their shapes', async () => {
    await sidecar.store({ user_id: '789', content: 'I went hiking with Ana in the Alps last weekend' });
    const recall = await sidecar.graphRecall({ user_id: '789', text: 'where did Ana go hiking?', limit: 3 });
    assert.equal(recall.type, 'graph_recall');
    assert.equal(typeof recall.known, 'boolean');
    assert.ok(Array.isArray(recall.traces));
    const entities = await sidecar.entities({ user_id: '789', limit: 20 });
    assert.equal(entities.type, 'entities');
    assert.ok(Array.isArray(entities.entities));
  });

  it('serves from the frozen binary when SIDECAR_BIN is set', { skip: !BIN && 'SIDECAR_BIN is not set' }, async () => {
    const stats = await sidecar.request('stats');
    assert.equal(stats.model.source, 'files bundled in the frozen binary');
  });

  it('the generic request() takes any type', async () => {
    assert.equal((await sidecar.request('ping')).type, 'pong');
    const stats = await sidecar.request('stats');
    assert.equal(stats.memories, 4); // 2 of user 123, 1 of 456, 1 of 789
    const instructions = await sidecar.request('memory_instructions', {});
    assert.match(instructions.text, /memory/i);
    const history = await sidecar.request('history', { user_id: '123' });
    assert.equal(history.type, 'history');
  });

  it('a secret is stored as its placeholder and the answer counts it', async () => {
    const content = 'my token ghp_Zq9Wx8Vc7Bn6Mm5Ll4Kk3Jj2Hh1Gg0Ff9Ee8Dd <private>and a secret</private>';
    const stored = await sidecar.store({ user_id: 'priv', content });
    assert.equal(stored.redacted, 1);
    const { messages } = await sidecar.query({ user_id: 'priv', text: 'token', limit: 1, mode: 'keyword' });
    assert.equal(messages[0]?.content, 'my token [redacted: github token] ');
  });

  it('50 requests in flight, each answered with its own result', async () => {
    const users = Array.from({ length: 25 }, (_, i) => `concurrent-${i}`);
    const stores = users.map((user, i) => sidecar.store({ user_id: user, content: `note number ${i} for ${user}` }));
    const queries = users.map((user) => sidecar.query({ user_id: user, text: 'note', limit: 5 }));
    assert.equal(sidecar.inFlight, 50);
    const [stored, found] = await Promise.all([Promise.all(stores), Promise.all(queries)]);
    assert.equal(new Set(stored.map((s) => s.id)).size, 25);
    found.forEach((result, i) => {
      assert.deepEqual(result.messages.map((m) => m.content), [`note number ${i} for concurrent-${i}`]);
      assert.equal(result.messages[0]?.id, stored[i]?.id);
    });
    assert.equal(sidecar.inFlight, 0);
  });

  it('a response far larger than a pipe chunk, with multi-byte characters, arrives whole', async () => {
    const contents = Array.from({ length: 4 }, (_, i) => `${i} ` + 'é✓😀 memory '.repeat(2_400)); // ~29k chars each
    await sidecar.storeMany(contents.map((content) => ({ user_id: 'big', content })));
    const { messages } = await sidecar.query({ user_id: 'big', text: 'memory', limit: 4 });
    assert.deepEqual(messages.map((m) => m.content).sort(), [...contents].sort());
  });

  it('error lines become SidecarError with the sidecar code, and the process keeps serving', async () => {
    await assert.rejects(sidecar.query({ user_id: '1', text: 'x', limit: 1000 }), (e: unknown) => {
      isCode('too_large')(e);
      assert.equal((e as SidecarError).message, 'limit 1000 is over the maximum of 100');
      assert.equal((e as SidecarError).requestType, 'query');
      return true;
    });
    // requests the types forbid, the way an untyped caller could send them
    await assert.rejects(sidecar.request('query', { user_id: '1' } as never), (e: unknown) => {
      isCode('invalid_request')(e);
      assert.match((e as Error).message, /`text`/);
      return true;
    });
    await assert.rejects(sidecar.request('teleport' as RequestType, {} as never), isCode('unknown_type'));
    await assert.rejects(sidecar.store({ user_id: '1', content: '   ' }), isCode('invalid_request'));
    await assert.rejects(sidecar.delete({ id: 'no-such-id' }), isCode('not_found'));
    assert.equal((await sidecar.ping()).type, 'pong');
  });

  it('an over-long line gets too_large without request_id; it goes to the right request among others in flight', async () => {
    // The sidecar skips a line over --max-line-bytes (1 MiB) unread, so its error cannot echo the
    // request_id: answers come in request order, so it belongs to the oldest unanswered request.
    const before = sidecar.ping();
    const huge = sidecar.store({ user_id: '1', content: 'x'.repeat(1_100_000) });
    const afterwards = sidecar.query({ user_id: '456', text: 'dog', limit: 1 });
    assert.equal((await before).type, 'pong');
    await assert.rejects(huge, (e: unknown) => {
      isCode('too_large')(e);
      assert.equal((e as SidecarError).requestType, 'store');
      return true;
    });
    assert.equal((await afterwards).messages[0]?.content, 'my dog Rex loves the beach');
  });

  const onefileSkip = ONEFILE && 'SIGSTOP stops only the onefile launcher, not the sidecar (its child) that answers';
  it('a request times out (process stopped with SIGSTOP), its late answer is dropped, and the next one works', { skip: onefileSkip }, async () => {
    process.kill(pid, 'SIGSTOP');
    try {
      const started = Date.now();
      await assert.rejects(sidecar.stats({ timeoutMs: 300 }), (e: unknown) => e instanceof SidecarTimeoutError && e.timeoutMs === 300);
      assert.ok(Date.now() - started < 5_000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    assert.equal((await sidecar.ping()).type, 'pong');
    assert.equal((await sidecar.query({ user_id: '123', text: 'cat', limit: 1 })).type, 'results');
  });

  it('forget_user removes the user, then close() shuts down gracefully with exit code 0', async () => {
    const forgot = await sidecar.forgetUser({ user_id: '123' });
    assert.equal(forgot.deleted, 2);
    assert.deepEqual((await sidecar.query({ user_id: '123', text: 'cat' })).messages, []);
    const exit = await sidecar.close();
    assert.deepEqual(exit, { code: 0, signal: null });
    await assert.rejects(sidecar.ping(), SidecarExitError);
  });
});

describe('real sidecar: failures', TIMEOUT, () => {
  it('SIGKILL while a request is pending rejects it with the exit, not a hang', async () => {
    const { sidecar, pid } = await startSidecar(tempDir());
    const messages = Array.from({ length: 300 }, (_, i) => ({ user_id: 'k', content: `message ${i} about something` }));
    const pending = sidecar.storeMany(messages, {}, { timeoutMs: 60_000 });
    const alsoPending = sidecar.ping();
    await new Promise((resolve) => setTimeout(resolve, 50));
    process.kill(pid, 'SIGKILL');
    const started = Date.now();
    for (const p of [pending, alsoPending]) {
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof SidecarExitError, String(e));
        assert.equal(e.signal, 'SIGKILL');
        assert.equal(e.code, null);
        assert.match(e.message, /killed by signal SIGKILL while (store|ping) \(request_id \d+\) was pending/);
        return true;
      });
    }
    assert.ok(Date.now() - started < 5_000);
    await assert.rejects(sidecar.ping(), /before ping was sent/);
  });

  it('a second sidecar on a locked data dir fails with startup_failed', async () => {
    const dataDir = tempDir();
    const { sidecar } = await startSidecar(dataDir);
    try {
      await assert.rejects(startSidecar(dataDir), (e: unknown) => {
        isCode('startup_failed')(e);
        assert.match((e as Error).message, /in use by another memory-sidecar/);
        return true;
      });
    } finally {
      await sidecar.close();
    }
  });

  it('an exit before ready carries the exit code and the stderr tail', async () => {
    const bad = transport(tempDir(), '--ttl-days', 'not-a-number');
    await assert.rejects(MemorySidecar.start(bad), (e: unknown) => {
      assert.ok(e instanceof SidecarExitError, String(e));
      assert.equal(e.code, 2);
      assert.match(e.stderrTail, /--ttl-days/);
      assert.match(e.message, /exited with code 2 before it was ready; last stderr:/);
      return true;
    });
  });

  it('a command that does not exist fails start() with the spawn error', async () => {
    const missing = new NodeTransport({ command: join(tempDir(), 'no-such-memory-sidecar') });
    await assert.rejects(MemorySidecar.start(missing), (e: unknown) => {
      assert.ok(e instanceof SidecarExitError, String(e));
      assert.match(e.message, /could not start .*no-such-memory-sidecar: spawn .* ENOENT/);
      return true;
    });
  });
});

describe('docs example', TIMEOUT, () => {
  // examples/node.ts (shown in docs/hosts.md) runs `memory-sidecar` from PATH: the console script
  // beside $SIDECAR_PYTHON when it is a virtualenv's python, or a link named so to $SIDECAR_BIN.
  let bin = dirname(PYTHON);
  if (BIN) {
    bin = tempDir();
    symlinkSync(BIN, join(bin, 'memory-sidecar'));
  }
  const script = join(bin, 'memory-sidecar');
  it('examples/node.ts runs against the real sidecar', { skip: !existsSync(script) && `no ${script}` }, () => {
    const example = fileURLToPath(new URL('../examples/node.js', import.meta.url));
    const result = spawnSync(process.execPath, [example], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH ?? ''}`, TMPDIR: tempDir() },
    });
    assert.equal(result.status, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /my cat Miso hates the vacuum/);
    assert.match(result.stdout, /- Has a cat named Miso/);
    assert.match(result.stdout, /^not_found /m);
  });
});
