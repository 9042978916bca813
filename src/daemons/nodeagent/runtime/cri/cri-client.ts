/**
 * A small CRI v1 gRPC client: loads our own `cri.proto`, connects both services to one
 * endpoint (`unix:///path/to.sock`, or `tcp://host:port`), and offers one `call` primitive with
 * a deadline, AbortSignal cancellation and errors mapped to `RuntimeError`.
 *
 * Messages are plain objects with camelCase field names (proto-loader's conversion); int64
 * fields arrive as decimal strings (never lossy), enums as their names, bytes as Buffers.
 * Contract: one client is shared by all callers; grpc-js multiplexes calls on one channel and
 * reconnects on its own; `close()` ends the channel and fails later calls with UNAVAILABLE.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { RuntimeError, runtimeErrorCodeFromGrpc } from '../runtime-errors.js';

/** 16 MiB, the kubelet's and containerd's message size cap. */
export const CRI_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export type CriServiceName = 'RuntimeService' | 'ImageService';

export interface CriClientOptions {
  /** `unix:///run/containerd/containerd.sock`, a bare absolute path, or `tcp://host:port`. */
  readonly endpoint: string;
  /** Deadline for calls that give none; default 2 minutes (--runtime-request-timeout). */
  readonly defaultTimeoutMs?: number;
}

export interface CriCallOptions {
  readonly signal?: AbortSignal;
  /** Deadline in ms; 0 means none; undefined means the client's default. */
  readonly timeoutMs?: number;
}

type Unary = (
  req: object,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res?: object) => void,
) => grpc.ClientUnaryCall;

let cachedDefinition: grpc.GrpcObject | undefined;

/** Where cri.proto is: next to this module (when the build copied it) or in the source tree. */
export function criProtoPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, 'cri.proto');
  if (existsSync(beside)) return beside;
  // Compiled into dist*/src/daemons/nodeagent/runtime/cri: find the package root above it.
  let dir = here;
  for (let i = 0; i < 10; i++) {
    const candidate = join(dir, 'src', 'daemons', 'nodeagent', 'runtime', 'cri', 'cri.proto');
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(`cri.proto not found next to ${here} or in a source tree above it`);
}

function loadDefinition(): grpc.GrpcObject {
  if (!cachedDefinition) {
    const pkg = protoLoader.loadSync(criProtoPath(), {
      keepCase: false,
      longs: String,
      enums: String,
      defaults: true,
      arrays: true,
      objects: false,
      oneofs: false,
    });
    cachedDefinition = grpc.loadPackageDefinition(pkg);
  }
  return cachedDefinition;
}

/** Turns `unix:///x`, `/x` or `tcp://h:p` into a grpc-js target. */
export function grpcTarget(endpoint: string): string {
  if (endpoint.startsWith('unix://')) return endpoint;
  if (endpoint.startsWith('/')) return `unix://${endpoint}`;
  if (endpoint.startsWith('tcp://')) return endpoint.slice('tcp://'.length);
  throw new RuntimeError('INVALID_ARGUMENT', 'connect', `unsupported runtime endpoint ${JSON.stringify(endpoint)} (want unix:///path or tcp://host:port)`);
}

export class CriClient {
  private readonly services: Record<CriServiceName, grpc.Client>;
  private readonly defaultTimeoutMs: number;
  private closed = false;

  constructor(readonly options: CriClientOptions) {
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 120_000;
    const def = loadDefinition();
    const v1 = (def['runtime'] as grpc.GrpcObject)['v1'] as grpc.GrpcObject;
    const target = grpcTarget(options.endpoint);
    const channelOptions: grpc.ChannelOptions = {
      'grpc.max_receive_message_length': CRI_MAX_MESSAGE_BYTES,
      'grpc.max_send_message_length': CRI_MAX_MESSAGE_BYTES,
    };
    const RuntimeCtor = v1['RuntimeService'] as grpc.ServiceClientConstructor;
    const ImageCtor = v1['ImageService'] as grpc.ServiceClientConstructor;
    const runtime = new RuntimeCtor(target, grpc.credentials.createInsecure(), channelOptions);
    // The image client shares the runtime client's channel: one connection per endpoint.
    const image = new ImageCtor(target, grpc.credentials.createInsecure(), {
      ...channelOptions,
      channelOverride: runtime.getChannel(),
    });
    this.services = { RuntimeService: runtime, ImageService: image };
  }

  /** One unary call. Rejects with RuntimeError (code from the gRPC status). */
  call<Res extends object>(service: CriServiceName, method: string, request: object, opts: CriCallOptions = {}): Promise<Res> {
    if (this.closed) return Promise.reject(new RuntimeError('UNAVAILABLE', method, 'CRI client is closed'));
    const client = this.services[service] as unknown as Record<string, Unary | undefined>;
    const fn = client[method];
    if (typeof fn !== 'function') {
      return Promise.reject(new RuntimeError('UNIMPLEMENTED', method, `not declared in cri.proto (${service})`));
    }
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(new RuntimeError('CANCELLED', method, 'aborted before the call', { cause: signal.reason }));
    const timeoutMs = opts.timeoutMs ?? this.defaultTimeoutMs;
    const callOptions: grpc.CallOptions = timeoutMs > 0 ? { deadline: new Date(Date.now() + timeoutMs) } : {};
    return new Promise<Res>((resolve, reject) => {
      const onAbort = (): void => { call.cancel(); };
      const call = fn.call(client, request, new grpc.Metadata(), callOptions, (err, res) => {
        signal?.removeEventListener('abort', onAbort);
        if (err) {
          const code = runtimeErrorCodeFromGrpc(err.code);
          const detail = err.details || err.message;
          reject(new RuntimeError(signal?.aborted ? 'CANCELLED' : code, method, detail, { cause: err }));
          return;
        }
        resolve((res ?? {}) as Res);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.services.ImageService.close();
    this.services.RuntimeService.close();
  }
}
