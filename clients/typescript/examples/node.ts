// clients/typescript/examples/node.ts
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemorySidecar, SidecarError } from 'memory-sidecar-client';
import { NodeTransport } from 'memory-sidecar-client/node';

const sidecar = await MemorySidecar.start(
  new NodeTransport({
    command: 'memory-sidecar', // or the frozen binary's path, or 'python3' with args ['-m', 'sidecar', ...]
    args: ['--data-dir', join(tmpdir(), 'memory-demo')],
  }),
  { timeoutMs: 10_000, onStderr: (text) => process.stderr.write(text) },
);
console.log('ready:', sidecar.ready.version, sidecar.ready.model);

await sidecar.store({ user_id: '123', content: 'my cat Miso hates the vacuum', username: 'alice' });
const { messages } = await sidecar.query({ user_id: '123', text: 'tell me about pets', limit: 3 });
for (const m of messages) console.log(m.similarity.toFixed(2), m.content);

await sidecar.remember({ user_id: '123', text: 'Has a cat named Miso', category: 'preference' });
const context = await sidecar.context({ users: { '123': 'alice' }, text: 'what toy should I buy?' });
console.log(context.text); // a prompt-ready <background_facts> block for the LLM call (facts, what is true now, memories)

try {
  await sidecar.delete({ id: 'no-such-id' });
} catch (error) {
  if (!(error instanceof SidecarError)) throw error;
  console.log(error.code, error.message); // not_found ...
}

await sidecar.close(); // sends shutdown, waits for exit 0, kills after the grace period
