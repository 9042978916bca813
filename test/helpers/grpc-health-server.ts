/**
 * A small grpc.health.v1 Health server for probe tests, on plaintext HTTP/2 (node:http2) with
 * gRPC framing by hand: Check answers the status set per service (SERVING, NOT_SERVING, ...;
 * an unknown service gets grpc-status 5 NOT_FOUND as grpc-go's health server answers), other
 * methods grpc-status 12 UNIMPLEMENTED; `hang` makes Check never answer. (Not a test file.)
 */
import { createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs/minimal.js';

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
const CODES: Record<ServingStatus, number> = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };

export interface HealthServer {
  readonly port: number;
  /** Services asked for, in order (the request's `service` field). */
  readonly asked: string[];
  set(service: string, status: ServingStatus | undefined): void;
  hang: boolean;
  close(): Promise<void>;
}

function frame(msg: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + msg.length);
  b.writeUInt32BE(msg.length, 1);
  Buffer.from(msg).copy(b, 5);
  return b;
}

function requestedService(body: Buffer): string {
  if (body.length < 5) return '';
  const r = protobuf.Reader.create(body.subarray(5, 5 + body.readUInt32BE(1)));
  let service = '';
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) service = r.string();
    else r.skipType(tag & 7);
  }
  return service;
}

export async function startHealthServer(host = '127.0.0.1', initial: Record<string, ServingStatus> = { '': 'SERVING' }): Promise<HealthServer> {
  const statuses = new Map<string, ServingStatus>(Object.entries(initial));
  const asked: string[] = [];
  const sessions = new Set<{ destroy(): void }>();
  const server: Http2Server = createServer();
  const api: HealthServer = {
    port: 0, asked, hang: false,
    set(service, status) { if (status) statuses.set(service, status); else statuses.delete(service); },
    close: () => new Promise<void>((r) => { for (const s of sessions) s.destroy(); server.close(() => r()); }),
  };
  server.on('session', (s) => { sessions.add(s); s.on('close', () => sessions.delete(s)); });
  server.on('stream', (stream: ServerHttp2Stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('error', () => undefined);
    stream.on('end', () => {
      if (headers[':path'] !== '/grpc.health.v1.Health/Check') {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown service' }, { endStream: true });
        return;
      }
      const service = requestedService(Buffer.concat(chunks));
      asked.push(service);
      if (api.hang) return;
      const status = statuses.get(service);
      if (!status) {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '5', 'grpc-message': 'unknown service' }, { endStream: true });
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const w = protobuf.Writer.create();
      if (CODES[status]) w.uint32(8).int32(CODES[status]);
      stream.end(frame(w.finish()));
    });
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  (api as { port: number }).port = (server.address() as AddressInfo).port;
  return api;
}
