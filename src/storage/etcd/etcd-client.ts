/**
 * Builds the etcd3 client for a list of endpoints: TLS credentials from files, unlimited
 * message sizes (a large list can exceed gRPC's 4 MiB default), and fault handling that
 * never silently re-sends a request.
 *
 * Why no global retry: the etcd3 default retries any "recoverable" failure up to three times
 * with no backoff. Every write here is conditional (create-if-absent, compare-and-swap), so
 * a blind re-send after a lost reply reports a spurious KeyExists/Conflict for our own
 * write. Reads are retried by the backend itself (bounded, with backoff); writes fail with
 * Unavailable and the caller decides. The per-endpoint circuit breaker stays: after repeated
 * failures it steers calls to the other endpoints for a few seconds.
 */
import { readFile } from 'node:fs/promises';
import { Etcd3, type IOptions } from 'etcd3';
import { StorageError } from '../errors.js';

export interface EtcdTlsOptions {
  /** CA bundle that signs etcd's serving certificate (absent: the system roots). */
  readonly caFile?: string;
  /** Client certificate and key for etcd's client-certificate authentication. */
  readonly certFile?: string;
  readonly keyFile?: string;
}

type Policy = NonNullable<NonNullable<IOptions['faultHandling']>['global']>;

/** A fault-handling policy that runs the call once and passes its outcome through. */
function passThroughPolicy(): Policy {
  const noEvent = () => ({ dispose() {} });
  const policy = {
    onSuccess: noEvent,
    onFailure: noEvent,
    execute<T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T, signal?: AbortSignal): Promise<T> {
      return Promise.resolve().then(() => fn({ signal: signal ?? new AbortController().signal }));
    },
  };
  return policy as unknown as Policy;
}

/** Checks endpoint URLs: http or https, all the same, with host and port. */
export function parseEndpoints(endpoints: readonly string[]): { secure: boolean } {
  if (endpoints.length === 0) throw new StorageError('InvalidArgument', 'etcd: no endpoints given');
  let secure: boolean | undefined;
  for (const ep of endpoints) {
    let url: URL;
    try {
      url = new URL(ep);
    } catch {
      throw new StorageError('InvalidArgument', `etcd: invalid endpoint ${JSON.stringify(ep)}: want scheme://host:port`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new StorageError('InvalidArgument', `etcd: endpoint ${ep} must use http:// or https://`);
    }
    if (!url.hostname || !url.port) {
      throw new StorageError('InvalidArgument', `etcd: endpoint ${ep} needs a host and a port`);
    }
    const isSecure = url.protocol === 'https:';
    if (secure !== undefined && secure !== isSecure) {
      throw new StorageError('InvalidArgument', `etcd: endpoints mix http:// and https:// (${endpoints.join(', ')})`);
    }
    secure = isSecure;
  }
  return { secure: secure === true };
}

async function readPem(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (e) {
    throw new StorageError('InvalidArgument', `etcd: cannot read ${what} ${file}: ${(e as Error).message}`, {}, { cause: e });
  }
}

/** Creates the client. TLS files are only used for https:// endpoints, as Kubernetes does. */
export async function createEtcdClient(endpoints: readonly string[], tls: EtcdTlsOptions | undefined): Promise<Etcd3> {
  const { secure } = parseEndpoints(endpoints);
  if (tls && (tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new StorageError('InvalidArgument', 'etcd: a client certificate file needs its key file and the other way round');
  }
  const options: IOptions = {
    hosts: [...endpoints],
    grpcOptions: {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      // Notice a dead connection within seconds instead of at the OS timeout.
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    },
    faultHandling: { global: passThroughPolicy() },
  };
  if (secure && tls && (tls.caFile || tls.certFile)) {
    const rootCertificate = tls.caFile ? await readPem(tls.caFile, 'CA file') : undefined;
    const certChain = tls.certFile ? await readPem(tls.certFile, 'certificate file') : undefined;
    const privateKey = tls.keyFile ? await readPem(tls.keyFile, 'key file') : undefined;
    // etcd3 types the CA as required; grpc-js falls back to the system roots without one.
    options.credentials = { rootCertificate: rootCertificate as Buffer, certChain, privateKey };
  }
  return new Etcd3(options);
}
