/**
 * Splits a stream of text chunks into lines. A chunk may end in the middle of a line (or hold many
 * lines); the unfinished tail is kept until the next chunk brings its `\n`. A `\r` before the `\n`
 * is dropped. Chunks must already be decoded text: decode bytes with a streaming decoder
 * (`TextDecoder` with `{ stream: true }`, or `stream.setEncoding('utf8')`) so a multi-byte
 * character cut between two chunks survives.
 */
export class LineSplitter {
  private buffer = '';

  constructor(private readonly onLine: (line: string) => void) {}

  /** Feeds one chunk; calls `onLine` for every line it completes. */
  push(chunk: string): void {
    if (chunk.length === 0) return;
    let start = 0;
    let newline = chunk.indexOf('\n');
    if (newline === -1) {
      this.buffer += chunk;
      return;
    }
    let line = this.buffer + chunk.slice(0, newline);
    this.buffer = '';
    for (;;) {
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
      if (newline === -1) break;
      line = chunk.slice(start, newline);
    }
    this.buffer = chunk.slice(start);
  }

  /** The unfinished line held so far (text after the last `\n`). */
  get pending(): string {
    return this.buffer;
  }

  /** Ends the stream: an unfinished last line is delivered as a line, if it is not empty. */
  end(): void {
    const rest = this.buffer;
    this.buffer = '';
    if (rest.length > 0) this.onLine(rest.endsWith('\r') ? rest.slice(0, -1) : rest);
  }
}
