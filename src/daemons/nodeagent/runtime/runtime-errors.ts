/**
 * The one error type runtime backends raise. `code` follows the gRPC status names so that CRI
 * failures map one to one, and the fake runtime uses the same codes for the same situations.
 */
export type RuntimeErrorCode =
  | 'CANCELLED' | 'UNKNOWN' | 'INVALID_ARGUMENT' | 'DEADLINE_EXCEEDED' | 'NOT_FOUND'
  | 'ALREADY_EXISTS' | 'PERMISSION_DENIED' | 'RESOURCE_EXHAUSTED' | 'FAILED_PRECONDITION'
  | 'ABORTED' | 'OUT_OF_RANGE' | 'UNIMPLEMENTED' | 'INTERNAL' | 'UNAVAILABLE' | 'DATA_LOSS'
  | 'UNAUTHENTICATED';

/** Indexed by the numeric gRPC status code (0 is OK and never used for an error). */
const GRPC_CODE_NAMES: readonly RuntimeErrorCode[] = [
  'UNKNOWN', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
  'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED',
  'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];

export class RuntimeError extends Error {
  override readonly name = 'RuntimeError';
  constructor(
    readonly code: RuntimeErrorCode,
    /** The runtime operation, e.g. 'RunPodSandbox'. */
    readonly operation: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${operation}: ${code}: ${message}`, options);
  }
}

export function runtimeErrorCodeFromGrpc(code: number): RuntimeErrorCode {
  return GRPC_CODE_NAMES[code] ?? 'UNKNOWN';
}

export function isRuntimeError(e: unknown, code?: RuntimeErrorCode): e is RuntimeError {
  return e instanceof RuntimeError && (code === undefined || e.code === code);
}
