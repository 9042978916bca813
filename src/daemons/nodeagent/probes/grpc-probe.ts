/**
 * The gRPC probe: grpc.health.v1.Health/Check over plaintext HTTP/2 to the pod IP, as
 * kubelet's prober does (no TLS, the probe's `service` in the request, SERVING is healthy).
 * gRPC framing by hand: a 5-byte prefix (compressed flag, big-endian length) before each
 * protobuf message, the outcome in the grpc-status trailer (or header, for trailers-only
 * answers). Result messages are kubelet's.
 */
import { connect, constants, type ClientHttp2Session } from 'node:http2';
import protobuf from 'protobufjs/minimal.js';
import type { ActionResult } from './handlers.js';

/** grpc.health.v1.HealthCheckResponse.ServingStatus. */
const SERVING_STATUS = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];
/** gRPC status codes kubelet words differently. */
const UNIMPLEMENTED = 12;
const DEADLINE_EXCEEDED = 4;

/** HealthCheckRequest { string service = 1; } in a gRPC frame. */
export function healthCheckRequest(service: string): Buffer {
  const w = protobuf.Writer.create();
  if (service) w.uint32(10).string(service);
  const msg = Buffer.from(w.finish());
  const frame = Buffer.alloc(5 + msg.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(msg.length, 1);
  msg.copy(frame, 5);
  return frame;
}

/** The status (field 1) of the first HealthCheckResponse in a gRPC body; undefined when there is none. */
export function healthCheckStatus(body: Buffer): number | undefined {
  if (body.length < 5 || body.readUInt8(0) !== 0) return undefined;
  const len = body.readUInt32BE(1);
  if (body.length < 5 + len) return undefined;
  const r = protobuf.Reader.create(body.subarray(5, 5 + len));
  let status = 0; // proto3: an absent enum is its zero, UNKNOWN
  while (r.pos < r.len) {
    const tag = r.uint32();
    if (tag >>> 3 === 1 && (tag & 7) === 0) status = r.int32();
    else r.skipType(tag & 7);
  }
  return status;
}

export function grpcProbe(host: string, port: number, service: string, timeoutMs: number): Promise<ActionResult> {
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const secs = `${timeoutMs / 1000}s`;
  return new Promise((resolve) => {
    let session: ClientHttp2Session | undefined;
    let done = false;
    const finish = (r: ActionResult): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      session?.destroy();
      resolve(r);
    };
    let connected = false;
    const timer = setTimeout(() => finish({
      ok: false,
      output: connected ? `timeout: health rpc did not complete within ${secs}` : `timeout: failed to connect service "${target}" within ${secs}: context deadline exceeded`,
    }), timeoutMs);
    session = connect(`http://${target}`);
    const failed = (e: Error): void => finish({ ok: false, output: connected ? `error: health rpc probe failed: ${e.message}` : `timeout: failed to connect service "${target}" within ${secs}: ${e.message}` });
    session.on('error', failed);
    session.once('connect', () => { connected = true; });
    const req = session.request({
      [constants.HTTP2_HEADER_METHOD]: 'POST', [constants.HTTP2_HEADER_PATH]: '/grpc.health.v1.Health/Check',
      'content-type': 'application/grpc', te: 'trailers', 'user-agent': 'kube-probe/1.33', 'grpc-timeout': `${Math.max(1, timeoutMs)}m`,
    });
    const chunks: Buffer[] = [];
    let grpcStatus: number | undefined;
    let grpcMessage = '';
    const note = (h: Record<string, unknown>): void => {
      if (h['grpc-status'] !== undefined) grpcStatus = Number(h['grpc-status']);
      if (typeof h['grpc-message'] === 'string') grpcMessage = decodeURIComponent(h['grpc-message']);
    };
    req.on('response', (h) => {
      const code = Number(h[':status']);
      if (code !== 200) finish({ ok: false, output: `error: health rpc probe failed: rpc error: code = Unknown desc = unexpected HTTP status code received from server: ${code}` });
      note(h);
    });
    req.on('trailers', note);
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('error', failed);
    req.on('end', () => {
      if (grpcStatus === UNIMPLEMENTED) { finish({ ok: false, output: `this server does not implement the grpc health protocol (grpc.health.v1.Health): ${grpcMessage}` }); return; }
      if (grpcStatus === DEADLINE_EXCEEDED) { finish({ ok: false, output: `timeout: health rpc did not complete within ${secs}` }); return; }
      if (grpcStatus !== 0) { finish({ ok: false, output: `error: health rpc probe failed: rpc error: code = ${grpcStatus ?? 'Unknown'} desc = ${grpcMessage}` }); return; }
      const status = healthCheckStatus(Buffer.concat(chunks));
      if (status === 1) finish({ ok: true, output: 'service healthy' });
      else finish({ ok: false, output: `service unhealthy (responded with "${SERVING_STATUS[status ?? 0] ?? String(status)}")` });
    });
    req.end(healthCheckRequest(service));
  });
}
