/**
 * A CSI client for one driver's unix socket: the Node service (and Identity's GetPluginInfo)
 * of csi.proto (ours: the spec's v1 messages the node agent uses, with the spec's field
 * numbers). Messages are plain objects with camelCase fields; enums as names. Calls have a
 * deadline, so a driver that does not answer fails the mount instead of hanging the pod.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const CALL_TIMEOUT_MS = 120_000;

/** Where csi.proto is: next to this module (when the build copied it) or in the source tree. */
export function csiProtoPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(here, 'csi.proto'))) return join(here, 'csi.proto');
  let dir = here;
  for (let i = 0; i < 10; i++) {
    const candidate = join(dir, 'src', 'daemons', 'nodeagent', 'volumes', 'csi', 'csi.proto');
    if (existsSync(join(dir, 'package.json')) && existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error(`csi.proto not found next to ${here} or in a source tree above it`);
}

let cached: grpc.GrpcObject | undefined;

/** The csi.v1 package (services and message types), loaded once. */
export function csiPackage(): grpc.GrpcObject {
  if (!cached) {
    const def = protoLoader.loadSync(csiProtoPath(), { keepCase: false, longs: String, enums: String, defaults: true, arrays: true, oneofs: true });
    cached = (grpc.loadPackageDefinition(def)['csi'] as grpc.GrpcObject)['v1'] as grpc.GrpcObject;
  }
  return cached;
}

export class CsiError extends Error {
  override readonly name = 'CsiError';
  constructor(readonly method: string, readonly code: number, message: string) { super(`rpc error: code = ${grpc.status[code] ?? code} desc = ${message}`); }
}

type Unary = (req: object, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: object) => void) => grpc.ClientUnaryCall;

export class CsiClient {
  private readonly node: grpc.Client;
  private readonly identity: grpc.Client;

  constructor(readonly socket: string) {
    const pkg = csiPackage();
    const target = `unix://${socket}`;
    this.node = new (pkg['Node'] as grpc.ServiceClientConstructor)(target, grpc.credentials.createInsecure());
    this.identity = new (pkg['Identity'] as grpc.ServiceClientConstructor)(target, grpc.credentials.createInsecure(), { channelOverride: this.node.getChannel() });
  }

  call<T extends object>(method: string, request: object): Promise<T> {
    const client = (method === 'GetPluginInfo' ? this.identity : this.node) as unknown as Record<string, Unary>;
    const fn = client[method];
    if (typeof fn !== 'function') return Promise.reject(new CsiError(method, grpc.status.UNIMPLEMENTED, `${method} is not in csi.proto`));
    return new Promise<T>((resolve, reject) => {
      fn.call(client, request, new grpc.Metadata(), { deadline: new Date(Date.now() + CALL_TIMEOUT_MS) }, (err, res) => {
        if (err) reject(new CsiError(method, err.code, err.details || err.message));
        else resolve((res ?? {}) as T);
      });
    });
  }

  close(): void {
    this.identity.close();
    this.node.close();
  }
}
