import type { ExitInfo } from './transport.js';

/** Base class of every error this client throws. */
export class MemorySidecarError extends Error {
  override name = 'MemorySidecarError';
}

/**
 * The sidecar answered with an `error` line: `code` is its stable snake_case code
 * (`invalid_request`, `not_found`, `too_large`, `unknown_type`, `disabled`, `internal`,
 * `startup_failed`, ...; see docs/protocol.md#errors), `message` its sentence.
 */
export class SidecarError extends MemorySidecarError {
  override name = 'SidecarError';
  constructor(
    readonly code: string,
    message: string,
    /** The `type` of the request that failed (undefined for `startup_failed`). */
    readonly requestType?: string,
    readonly requestId?: string | number | null,
  ) {
    super(message);
  }
}

/** No answer within the request's timeout. The request may still run in the sidecar. */
export class SidecarTimeoutError extends MemorySidecarError {
  override name = 'SidecarTimeoutError';
  constructor(
    readonly requestType: string,
    readonly timeoutMs: number,
    readonly requestId?: string | number,
  ) {
    super(`memory-sidecar did not answer ${requestType} (request_id ${String(requestId)}) within ${timeoutMs} ms`);
  }
}

/**
 * The sidecar process ended (or could not start) while this request was pending, or before it was
 * sent. Carries how it ended and the last lines it wrote to stderr.
 */
export class SidecarExitError extends MemorySidecarError {
  override name = 'SidecarExitError';
  readonly code: number | null;
  readonly signal: string | number | null;
  constructor(
    readonly exit: ExitInfo,
    readonly stderrTail: string,
    what: string,
  ) {
    const how = exit.error
      ? `failed: ${exit.error.message}`
      : exit.signal !== null
        ? `was killed by signal ${exit.signal}`
        : `exited with code ${exit.code}`;
    const tail = stderrTail.trim() ? `; last stderr:\n${stderrTail.trimEnd()}` : ' (nothing on stderr)';
    super(`memory-sidecar ${how} ${what}${tail}`, exit.error ? { cause: exit.error } : undefined);
    this.code = exit.code;
    this.signal = exit.signal;
  }
}

/** The sidecar wrote something this client cannot read as a response (not JSON, wrong type). */
export class SidecarProtocolError extends MemorySidecarError {
  override name = 'SidecarProtocolError';
  constructor(
    message: string,
    readonly line: string,
  ) {
    super(message);
  }
}
