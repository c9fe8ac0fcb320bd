/** How a sidecar process ended. */
export interface ExitInfo {
  /** Exit code, or null when it was killed by a signal (or the code is unknown). */
  code: number | null;
  /** Signal that ended it (`'SIGKILL'` from Node, a number from Tauri), or null. */
  signal: string | number | null;
  /** Set when the process could not be started, or the transport failed. */
  error?: Error;
}

/** What a transport reports to its owner (the `MemorySidecar`). */
export interface TransportHandlers {
  /** One complete stdout line, without its line terminator. */
  line(line: string): void;
  /** A piece of stderr text (the sidecar's log), in arrival order. */
  stderr(text: string): void;
  /** The process is gone (or never started); called at most once, after the last `line`. */
  exit(info: ExitInfo): void;
}

/**
 * A running sidecar process as a pipe of text lines. `MemorySidecar` does the protocol; a
 * transport only starts the process, writes to its stdin, cuts its stdout into lines and reports
 * its exit. Two are provided: `NodeTransport` (`memory-sidecar-client/node`, Node's
 * `child_process`) and `TauriTransport` (`memory-sidecar-client/tauri`, Tauri v2's shell plugin).
 */
export interface Transport {
  /** Starts the process. Resolves once it is spawned; rejects when it cannot be spawned. */
  start(handlers: TransportHandlers): Promise<void>;
  /** Writes text (whole lines, each ending in `\n`) to the process's stdin. */
  write(data: string): Promise<void>;
  /** Ends the process at once (SIGKILL where there are signals). */
  kill(): Promise<void>;
}
