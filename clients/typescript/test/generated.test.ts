// src/protocol.gen.ts must be what scripts/generate-types.mjs makes from protocol/schema.json now.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { REQUEST_TYPES, RESPONSE_TYPE_OF, RESPONSE_TYPES } from '../src/index.js';

const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url)); // dist/test/ -> the package
const SCRIPT = join(PACKAGE_DIR, 'scripts', 'generate-types.mjs');
const GENERATED = join(PACKAGE_DIR, 'src', 'protocol.gen.ts');

function check(file?: string) {
  const args = [SCRIPT, '--check', ...(file ? ['--file', file] : [])];
  return spawnSync(process.execPath, args, { cwd: PACKAGE_DIR, encoding: 'utf8' });
}

describe('generated protocol types', () => {
  it('src/protocol.gen.ts is up to date with protocol/schema.json', () => {
    const result = check();
    assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  });

  it('the check fails on a stale file, naming the first difference', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gen-'));
    try {
      const stale = join(dir, 'protocol.gen.ts');
      writeFileSync(stale, readFileSync(GENERATED, 'utf8').replace("type: 'ready';", "type: 'readyy';"));
      const result = check(stale);
      assert.equal(result.status, 1);
      assert.match(result.stderr, /is stale.*readyy/s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every response type the client expects exists in the schema', () => {
    assert.deepEqual(Object.keys(RESPONSE_TYPE_OF).sort(), [...REQUEST_TYPES].sort());
    for (const type of Object.values(RESPONSE_TYPE_OF)) assert.ok((RESPONSE_TYPES as readonly string[]).includes(type), type);
  });
});
