/**
 * The gRPC probe against our own grpc.health.v1 server on loopback: healthy while SERVING,
 * failing with kubelet's messages for NOT_SERVING, an unknown service, a server without the
 * health service, a closed port and a server that never answers (the probe's timeout); the
 * probe's `service` reaches the server. The same through runAction, as the prober calls it.
 */
import { createServer } from 'node:net';
import t from 'tap';
import { grpcProbe, healthCheckRequest, healthCheckStatus } from '../../../src/daemons/nodeagent/probes/grpc-probe.js';
import { runAction } from '../../../src/daemons/nodeagent/probes/handlers.js';
import type { RuntimeBackend } from '../../../src/daemons/nodeagent/runtime/runtime.js';
import { startHealthServer } from '../../helpers/grpc-health-server.js';

const server = await startHealthServer('127.0.0.1', { '': 'SERVING', db: 'NOT_SERVING' });
t.teardown(() => server.close());

t.test('framing', async (t) => {
  t.same([...healthCheckRequest('')], [0, 0, 0, 0, 0], 'an empty request is an empty message');
  t.same([...healthCheckRequest('ab')], [0, 0, 0, 0, 4, 10, 2, 97, 98]);
  t.equal(healthCheckStatus(Buffer.from([0, 0, 0, 0, 2, 8, 2])), 2);
  t.equal(healthCheckStatus(Buffer.from([0, 0, 0, 0, 0])), 0, 'an absent status is UNKNOWN');
  t.equal(healthCheckStatus(Buffer.from([0, 0])), undefined);
});

t.test('passes and fails as the server answers', async (t) => {
  t.same(await grpcProbe('127.0.0.1', server.port, '', 2000), { ok: true, output: 'service healthy' });
  t.same(await grpcProbe('127.0.0.1', server.port, 'db', 2000), { ok: false, output: 'service unhealthy (responded with "NOT_SERVING")' });
  t.equal(server.asked.at(-1), 'db', 'the service field reaches the server');
  server.set('db', 'SERVING');
  t.equal((await grpcProbe('127.0.0.1', server.port, 'db', 2000)).ok, true);
  server.set('', 'NOT_SERVING');
  t.equal((await grpcProbe('127.0.0.1', server.port, '', 2000)).ok, false);
  server.set('', 'SERVING');
  const unknown = await grpcProbe('127.0.0.1', server.port, 'nope', 2000);
  t.equal(unknown.ok, false);
  t.match(unknown.output, /^error: health rpc probe failed: rpc error: code = 5 desc = unknown service$/);
});

t.test('servers that cannot answer', async (t) => {
  // A port with nothing listening.
  const free = createServer();
  await new Promise<void>((r) => free.listen(0, '127.0.0.1', () => r()));
  const port = (free.address() as { port: number }).port;
  await new Promise<void>((r) => free.close(() => r()));
  const refused = await grpcProbe('127.0.0.1', port, '', 2000);
  t.equal(refused.ok, false);
  t.match(refused.output, `timeout: failed to connect service "127.0.0.1:${port}" within 2s`);
  server.hang = true;
  const hung = await grpcProbe('127.0.0.1', server.port, '', 1000);
  server.hang = false;
  t.same(hung, { ok: false, output: 'timeout: health rpc did not complete within 1s' });
});

t.test('a server without the health service', async (t) => {
  const { createServer: h2 } = await import('node:http2');
  const other = h2();
  other.on('stream', (s) => s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown service grpc.health.v1.Health' }, { endStream: true }));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  const r = await grpcProbe('127.0.0.1', (other.address() as { port: number }).port, '', 2000);
  t.same(r, { ok: false, output: 'this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health' });
});

t.test('runAction runs a grpc probe at the pod IP', async (t) => {
  const target = { runtime: {} as RuntimeBackend, containerId: 'x', container: { name: 'c' }, podIp: '127.0.0.1' };
  t.same(await runAction({ grpc: { port: server.port } }, target, 1), { ok: true, output: 'service healthy' });
  t.equal((await runAction({ grpc: { port: server.port, service: 'missing' } }, target, 1)).ok, false);
});
