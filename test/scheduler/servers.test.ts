import { request } from 'node:https';
import t from 'tap';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { startServers } from '../../src/daemons/scheduler/servers.js';
import { freePort } from '../helpers/apiserver.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => { body += d.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('secure port: health is open, metrics need a client certificate; readiness follows setReady', async (t) => {
  const ac = new AbortController();
  const registry = new Registry();
  const securePort = await freePort();
  const s = await startServers({ port: 0, securePort, bindAddress: '127.0.0.1', profiling: false }, registry, pino({ level: 'silent' }), ac.signal);
  t.teardown(async () => { ac.abort(); await s.close(); });
  t.equal(s.httpPort, 0);
  t.equal(s.httpsPort, securePort);
  t.same(await get(securePort, '/healthz'), { status: 200, body: 'ok' });
  t.equal((await get(securePort, '/readyz')).status, 500);
  s.setReady(true);
  t.equal((await get(securePort, '/readyz')).status, 200);
  t.equal((await get(securePort, '/metrics')).status, 401);
  t.equal((await get(securePort, '/debug/pprof/')).status, 401);
  s.setHealthy(false, 'leader election lost');
  const h = await get(securePort, '/livez');
  t.equal(h.status, 500);
  t.match(h.body, /leader election lost/);
});
