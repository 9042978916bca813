/**
 * Translation of etcd and gRPC failures into StorageError codes, in one place.
 *
 * The etcd3 client rebuilds gRPC errors as its own classes and keeps only the message, so
 * etcd's server errors are recognised by their stable message text (the strings of
 * etcd's api/v3rpc/rpctypes), and transport failures by the client's error classes.
 */
import {
  castGrpcError,
  ClientClosedError,
  EtcdLeaseInvalidError,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCInternalError,
  GRPCInvalidArgumentError,
  GRPCResourceExhastedError,
  GRPCUnavailableError,
  GRPCUnknownError,
  GRPCUnauthenticatedError,
  EtcdPermissionDeniedError,
} from 'etcd3';
import { StorageError } from '../errors.js';

const COMPACTED = 'required revision has been compacted';
const FUTURE_REV = 'required revision is a future revision';
const TOO_LARGE = 'request is too large';

/** Messages etcd uses when it cannot serve now: a retry later may succeed. */
const UNAVAILABLE_MESSAGES = [
  'etcdserver: request timed out',
  'etcdserver: leader changed',
  'etcdserver: no leader',
  'etcdserver: not capable',
  'etcdserver: server stopped',
  'etcdserver: too many requests',
  'etcdserver: mvcc: database space exceeded',
  'etcdserver: request cancelled',
  'etcdserver: not leader',
  'etcdserver: raft: stopped',
  'circuit breaker is open', // the client's per-endpoint breaker after repeated failures
];

/** True when the failure is etcd saying a lease does not exist (expired or revoked). */
export function isLeaseNotFound(e: unknown): boolean {
  return e instanceof EtcdLeaseInvalidError || (e instanceof Error && e.message.includes('requested lease not found'));
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Maps any failure of an etcd call to a StorageError. `context` names the operation for the
 * message ("range /registry/pods"); `key` lands in the details.
 */
export function toStorageError(e: unknown, context: string, key?: string): StorageError {
  if (e instanceof StorageError) return e;
  // Stream errors reach us raw from grpc-js (a plain Error with a status code); unary call
  // errors come already cast by the client.
  if (e instanceof Error && e.constructor === Error && typeof (e as { code?: unknown }).code === 'number') e = castGrpcError(e);
  const msg = messageOf(e);
  const details = key === undefined ? {} : { key };
  const say = (what: string) => `etcd ${context}: ${what}`;
  if (msg.includes(COMPACTED)) return new StorageError('Compacted', say('the requested revision has been compacted'), details, { cause: e });
  if (msg.includes(FUTURE_REV)) return new StorageError('FutureRevision', say('the requested revision is newer than the store'), details, { cause: e });
  if (msg.includes(TOO_LARGE)) return new StorageError('ValueTooLarge', say('request too large for etcd (--max-request-bytes)'), details, { cause: e });
  if (msg.includes('etcdserver: key is not provided') || msg.includes('too many operations in txn')) {
    return new StorageError('InvalidArgument', say(msg), details, { cause: e });
  }
  if (
    e instanceof GRPCUnavailableError ||
    e instanceof GRPCDeadlineExceededError ||
    e instanceof GRPCCancelledError ||
    e instanceof GRPCResourceExhastedError ||
    e instanceof ClientClosedError ||
    UNAVAILABLE_MESSAGES.some((m) => msg.includes(m))
  ) {
    return new StorageError('Unavailable', say(`etcd unavailable: ${msg}`), details, { cause: e });
  }
  if (e instanceof GRPCUnauthenticatedError || e instanceof EtcdPermissionDeniedError) {
    return new StorageError('Unavailable', say(`etcd refused the request: ${msg}`), details, { cause: e });
  }
  if (e instanceof GRPCInvalidArgumentError) return new StorageError('InvalidArgument', say(msg), details, { cause: e });
  if (e instanceof GRPCInternalError || e instanceof GRPCUnknownError) {
    // Connection resets surface as Internal/Unknown from grpc-js ("Received RST_STREAM").
    if (/RST_STREAM|ECONNRESET|socket|connection/i.test(msg)) {
      return new StorageError('Unavailable', say(`etcd connection failed: ${msg}`), details, { cause: e });
    }
  }
  return new StorageError('Internal', say(msg), details, { cause: e });
}
