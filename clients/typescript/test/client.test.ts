// MemorySidecar's protocol handling over a scripted transport (the real process is in
// integration.test.ts): correlation, error lines, timeouts, exits, shutdown.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  MemorySidecar,
  MemorySidecarError,
  SidecarError,
  SidecarExitError,
  SidecarProtocolError,
  SidecarTimeoutError,
} from '../src/index.js';
import { FakeTransport, READY } from './fake-transport.js';

async function started(options = {}): Promise<{ sidecar: MemorySidecar; fake: FakeTransport }> {
  const fake = new FakeTransport();
  const starting = MemorySidecar.start(fake, options);
  await new Promise((resolve) => setImmediate(resolve));
  fake.emit(READY);
  return { sidecar: await starting, fake };
}

describe('MemorySidecar start-up', () => {
  it('waits for the ready line and exposes it', async () => {
    const { sidecar } = await started();
    assert.equal(sidecar.ready.dim, 384);
  });

  it('rejects with SidecarError startup_failed when the first line is an error', async () => {
    const fake = new FakeTransport();
    const starting = MemorySidecar.start(fake);
    await new Promise((resolve) => setImmediate(resolve));
    fake.emit({ type: 'error', code: 'startup_failed', message: 'data dir is locked' });
    await assert.rejects(starting, (e: unknown) => e instanceof SidecarError && e.code === 'startup_failed' && /locked/.test(e.message));
  });

  it('rejects with SidecarExitError carrying the code and the stderr tail when it exits first', async () => {
    const fake = new FakeTransport();
    const starting = MemorySidecar.start(fake);
    await new Promise((resolve) => setImmediate(resolve));
    fake.stderr('usage: memory-sidecar ...\nerror: bad flag\n');
    fake.exit({ code: 2, signal: null });
    await assert.rejects(starting, (e: unknown) => {
      assert.ok(e instanceof SidecarExitError);
      assert.equal(e.code, 2);
      assert.match(e.stderrTail, /bad flag/);
      assert.match(e.message, /exited with code 2 before it was ready.*\n.*bad flag/s);
      return true;
    });
  });

  it('kills the process when no ready line comes in time', async () => {
    const fake = new FakeTransport();
    await assert.rejects(MemorySidecar.start(fake, { readyTimeoutMs: 30 }), /no ready line within 30 ms/);
    assert.equal(fake.killed, true);
  });
});

describe('MemorySidecar requests', () => {
  it('matches answers by request_id, whatever order they come in', async () => {
    const { sidecar, fake } = await started();
    const answers = [sidecar.ping(), sidecar.stats(), sidecar.store({ user_id: '1', content: 'a' })] as const;
    const [ping, stats, store] = fake.written;
    fake.emit({ type: 'ok', request_id: store!.request_id, id: 'uuid-1' });
    fake.emit({ type: 'stats', request_id: stats!.request_id, memories: 1 });
    fake.emit({ type: 'pong', request_id: ping!.request_id });
    const [p, s, o] = await Promise.all(answers);
    assert.equal(p.type, 'pong');
    assert.equal(s.memories, 1);
    assert.equal(o.id, 'uuid-1');
    assert.deepEqual(store, { user_id: '1', content: 'a', type: 'store', request_id: store!.request_id });
  });

  it('turns an error line into a SidecarError with code, message and request type', async () => {
    const { sidecar, fake } = await started();
    const answer = sidecar.delete({ id: 'nope' });
    fake.emit({ type: 'error', request_id: fake.written[0]!.request_id, code: 'not_found', message: 'no memory nope' });
    await assert.rejects(answer, (e: unknown) => {
      assert.ok(e instanceof SidecarError);
      assert.equal(e.code, 'not_found');
      assert.equal(e.message, 'no memory nope');
      assert.equal(e.requestType, 'delete');
      return true;
    });
  });

  it('gives an answer without request_id to the oldest unanswered request', async () => {
    const { sidecar, fake } = await started();
    const first = sidecar.ping();
    const second = sidecar.ping();
    fake.emit({ type: 'error', code: 'too_large', message: 'line too long' });
    fake.emit({ type: 'pong', request_id: fake.written[1]!.request_id });
    await assert.rejects(first, (e: unknown) => e instanceof SidecarError && e.code === 'too_large');
    assert.equal((await second).type, 'pong');
  });

  it('times out one request (per-call timeout), drops its late answer, and keeps serving', async () => {
    const { sidecar, fake } = await started({ timeoutMs: 5_000 });
    const slow = sidecar.query({ user_id: '1', text: 'x' }, { timeoutMs: 20 });
    await assert.rejects(slow, (e: unknown) => e instanceof SidecarTimeoutError && e.timeoutMs === 20 && e.requestType === 'query');
    const next = sidecar.ping();
    fake.emit({ type: 'results', request_id: fake.written[0]!.request_id, messages: [] }); // the late answer
    fake.emit({ type: 'pong', request_id: fake.written[1]!.request_id });
    assert.equal((await next).type, 'pong');
  });

  it('applies the default timeout from the options', async () => {
    const { sidecar } = await started({ timeoutMs: 15 });
    await assert.rejects(sidecar.ping(), (e: unknown) => e instanceof SidecarTimeoutError && e.timeoutMs === 15);
  });

  it('rejects an answer of the wrong type, or not JSON, with SidecarProtocolError', async () => {
    const { sidecar, fake } = await started();
    const a = sidecar.query({ user_id: '1', text: 'x' });
    fake.emit({ type: 'pong', request_id: fake.written[0]!.request_id });
    await assert.rejects(a, (e: unknown) => e instanceof SidecarProtocolError && /expected results/.test(e.message));
    const b = sidecar.ping();
    fake.emit('this is not json');
    await assert.rejects(b, SidecarProtocolError);
  });

  it('rejects every pending request when the process exits, and later ones at once', async () => {
    const { sidecar, fake } = await started();
    const pending = [sidecar.ping(), sidecar.stats()];
    fake.stderr('Traceback: boom\n');
    fake.exit({ code: null, signal: 'SIGKILL' });
    for (const p of pending) {
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof SidecarExitError);
        assert.equal(e.signal, 'SIGKILL');
        assert.equal(e.code, null);
        assert.match(e.message, /killed by signal SIGKILL while (ping|stats) \(request_id \d+\) was pending.*boom/s);
        return true;
      });
    }
    await assert.rejects(sidecar.ping(), /before ping was sent/);
    assert.deepEqual(await sidecar.closed, { code: null, signal: 'SIGKILL' });
  });

  it('reports a failed write at once', async () => {
    const { sidecar, fake } = await started();
    fake.write = async () => {
      throw new Error('shell.stdin_write not allowed');
    };
    await assert.rejects(sidecar.ping(), /could not write ping to memory-sidecar: shell.stdin_write not allowed/);
    assert.equal(sidecar.inFlight, 0);
  });
});

describe('MemorySidecar.close', () => {
  it('sends shutdown and resolves with the exit', async () => {
    const { sidecar, fake } = await started();
    fake.onRequest = (request) => {
      if (request.type !== 'shutdown') return;
      fake.emit({ type: 'ok', request_id: request.request_id });
      setImmediate(() => fake.exit({ code: 0, signal: null }));
    };
    assert.deepEqual(await sidecar.close(), { code: 0, signal: null });
    assert.deepEqual(await sidecar.close(), { code: 0, signal: null });
    assert.equal(fake.killed, false);
    await assert.rejects(sidecar.ping(), SidecarExitError);
  });

  it('kills the process after the grace period when it does not exit', async () => {
    const { sidecar, fake } = await started();
    const info = await sidecar.close({ graceMs: 30 });
    assert.equal(fake.killed, true);
    assert.equal(info.signal, 'SIGKILL');
  });

  it('refuses new requests while shutting down', async () => {
    const { sidecar } = await started();
    void sidecar.close({ graceMs: 50 });
    await assert.rejects(sidecar.ping(), (e: unknown) => e instanceof MemorySidecarError && /shutting down/.test(e.message));
  });
});
