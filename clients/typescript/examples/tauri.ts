// clients/typescript/examples/tauri.ts
import { appDataDir, join } from '@tauri-apps/api/path';
import { MemorySidecar, SidecarExitError } from 'memory-sidecar-client';
import { TauriTransport } from 'memory-sidecar-client/tauri';

const dataDir = await join(await appDataDir(), 'memory');
const sidecar = await MemorySidecar.start(
  new TauriTransport({ program: 'binaries/memory-sidecar', args: ['--data-dir', dataDir] }),
  { onStderr: (text) => console.debug('[memory-sidecar]', text.trimEnd()) },
);
void sidecar.closed.then(({ code, signal }) => console.log('memory-sidecar exited', code, signal));

export async function remember(userId: string, content: string): Promise<string> {
  await sidecar.store({ user_id: userId, content });
  const { text } = await sidecar.context({ user_id: userId, text: content });
  return text; // for the prompt: the user's facts, what is true now, the stored messages relevant to `content`
}

export async function search(userId: string, text: string) {
  try {
    return (await sidecar.query({ user_id: userId, text, limit: 5 })).messages;
  } catch (error) {
    if (error instanceof SidecarExitError) console.error(error.message); // with exit code and stderr tail
    throw error;
  }
}

// when the app quits (the sidecar also exits by itself when the app dies)
export const stopMemory = () => sidecar.close();
