import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LineSplitter } from '../src/lines.js';

function split(chunks: string[], end = false): string[] {
  const lines: string[] = [];
  const splitter = new LineSplitter((line) => lines.push(line));
  for (const chunk of chunks) splitter.push(chunk);
  if (end) splitter.end();
  return lines;
}

describe('LineSplitter', () => {
  it('keeps a line cut between chunks until its newline comes', () => {
    assert.deepEqual(split(['{"type":', '"ok"', '}\n']), ['{"type":"ok"}']);
    assert.deepEqual(split(['{"a":1}\n{"b"', ':2}\n']), ['{"a":1}', '{"b":2}']);
  });

  it('delivers every line of a chunk holding many, and nothing of an unfinished one', () => {
    assert.deepEqual(split(['a\nb\nc\nd']), ['a', 'b', 'c']);
    assert.deepEqual(split(['a\nb\nc\nd'], true), ['a', 'b', 'c', 'd']);
  });

  it('cuts at every possible position of a stream the same way', () => {
    const text = '{"type":"ready"}\n{"type":"ok","id":"é✓😀"}\r\n\n{"type":"pong"}\n';
    const expected = ['{"type":"ready"}', '{"type":"ok","id":"é✓😀"}', '', '{"type":"pong"}'];
    for (let i = 0; i <= text.length; i++) {
      for (let j = i; j <= text.length; j++) {
        assert.deepEqual(split([text.slice(0, i), text.slice(i, j), text.slice(j)]), expected, `cut at ${i}, ${j}`);
      }
    }
  });

  it('drops a \\r before the \\n and ignores empty chunks', () => {
    assert.deepEqual(split(['x\r', '', '\ny\r\n']), ['x', 'y']);
  });

  it('reports the unfinished tail', () => {
    const splitter = new LineSplitter(() => undefined);
    splitter.push('done\npart');
    assert.equal(splitter.pending, 'part');
  });
});
