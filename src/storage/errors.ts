/**
 * Storage raises only these neutral codes. The API layer translates them once into
 * Kubernetes Status errors (see src/api/meta/storage-status.ts); nothing below the API layer
 * knows about HTTP codes.
 */
export type StorageErrorCode =
  | 'KeyExists'        // create of a key that exists
  | 'KeyNotFound'      // get/update/delete of a missing key
  | 'Conflict'         // compare-and-swap failed: modRevision did not match
  | 'Compacted'        // the asked revision is older than the compaction point
  | 'FutureRevision'   // the asked revision is newer than the store has reached
  | 'ValueTooLarge'    // a value above MAX_VALUE_BYTES
  | 'InvalidArgument'  // malformed key, range or option
  | 'Unavailable'      // the backend cannot serve now (closed, connection lost, locked)
  | 'Internal';        // anything else: data corruption, unexpected backend answer

/** Largest value a backend accepts, as etcd's default request limit (1.5 MiB). */
export const MAX_VALUE_BYTES = 1.5 * 1024 * 1024;

export class StorageError extends Error {
  override readonly name = 'StorageError';
  constructor(
    readonly code: StorageErrorCode,
    message: string,
    readonly details: {
      key?: string;
      /** The store's current revision when known (Conflict, Compacted, FutureRevision). */
      currentRevision?: number;
      /** For Compacted: the compaction point (for a watch cache, the last revision before its history). */
      compactRevision?: number;
      /** For Compacted: a watch cache's history no longer reaches the revision (the backend's may). */
      beforeHistory?: boolean;
      /** For Conflict: the key's current modification revision (0 when deleted meanwhile). */
      actualModRevision?: number;
    } = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function isStorageError(e: unknown, code?: StorageErrorCode): e is StorageError {
  return e instanceof StorageError && (code === undefined || e.code === code);
}
