// Slow HTTP/1.1 readers (issue 27): 500 connections that each GET a large list and never read
// must not grow the API server's memory without bound. Bodies go out only as the socket drains,
// each such request keeps its in-flight seat until its body is flushed (so later requests get
// 429 once the limit is full), and the server recovers when the slow clients go away.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import * as tls from 'node:tls';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';
import { waitFor } from '../helpers/wait-for.js';

const OBJECTS = 2000;
/** Bytes of data per object: a list of ~8 MiB, more than the kernel's buffers of a connection take. */
const OBJECT_BYTES = 4000;
const SLOW_CONNECTIONS = 500;
const INFLIGHT = 400; // --max-requests-inflight's default, named so the test reads on its own
/** The done-when: the slow-reader load stays under 500 MB RSS. */
const RSS_BOUND = 500 * 1000 * 1000;
const LIST_PATH = '/api/v1/namespaces/default/configmaps';

function rssOf(pid: number): Promise<number> {
  return readFile(`/proc/${pid}/status`, 'utf8').then((s) => {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(s);
    if (!m) throw new Error('no VmRSS');
    return Number(m[1]) * 1024;
  });
}

/** Samples a process's RSS until stopped; `exceeded` rejects as soon as it passes `bound`. */
function watchRss(pid: number, bound: number) {
  let peak = 0;
  let stopped = false;
  let fail!: (e: Error) => void;
  const exceeded = new Promise<never>((_, reject) => { fail = reject; });
  exceeded.catch(() => undefined);
  const tick = async (): Promise<void> => {
    while (!stopped) {
      const rss = await rssOf(pid).catch(() => 0);
      peak = Math.max(peak, rss);
      if (rss > bound) { fail(new Error(`server RSS ${(rss / 1e6).toFixed(0)} MB exceeds ${(bound / 1e6).toFixed(0)} MB`)); return; }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const done = tick();
  return { exceeded, peak: () => peak, stop: async () => { stopped = true; await done; } };
}

async function populate(c: RestClient): Promise<void> {
  const data = { blob: 'x'.repeat(OBJECT_BYTES) };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < OBJECTS) {
      const i = next++;
      const r = await c.request('POST', LIST_PATH, { body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data } });
      if (r.status !== 201) throw new Error(`create cm-${i}: ${r.status} ${r.body.toString()}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** Opens an HTTP/1.1 connection, sends the GET and never reads the answer. */
function slowReader(a: StartedApiserver, creds: { ca: Buffer; cert: Buffer; key: Buffer }): Promise<tls.TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: a.port, ...creds, ALPNProtocols: ['http/1.1'], servername: 'localhost' }, () => {
      s.write(`GET ${LIST_PATH} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n`);
      // Paused (no 'data' listener): TLS reads stop once its small buffer is full.
      resolve(s);
    });
    s.on('error', reject);
  });
}

t.test('slow HTTP/1.1 readers of large lists: bounded memory, 429 once the seats are taken, recovery', async (t) => {
  const a = await startApiserver({ process: true, args: [`--max-requests-inflight=${INFLIGHT}`] });
  t.teardown(() => a.stop());
  const pid = a.child!.pid!;
  const [ca, cert, key] = await Promise.all([readFile(a.caFile), readFile(a.clientCertFile), readFile(a.clientKeyFile)]);
  const c = await connectClient(a);
  t.teardown(() => c.close());

  await populate(c);
  const list = await c.request('GET', LIST_PATH);
  t.equal(list.status, 200);
  t.ok(list.body.length > 6 * 1024 * 1024, `a list is ${(list.body.length / 2 ** 20).toFixed(1)} MiB`);
  const baseRss = await rssOf(pid);
  t.comment(`server RSS before the load: ${(baseRss / 1e6).toFixed(0)} MB`);

  const rss = watchRss(pid, RSS_BOUND);
  t.teardown(() => rss.stop());
  const sockets: tls.TLSSocket[] = [];
  t.teardown(() => { for (const s of sockets) s.destroy(); });
  const load = (async () => {
    for (let i = 0; i < SLOW_CONNECTIONS; i += 50) {
      sockets.push(...await Promise.all(Array.from({ length: Math.min(50, SLOW_CONNECTIONS - i) }, () => slowReader(a, { ca, cert, key }))));
    }
    // Every seat is held by a slow reader: a later read waits its turn and is then refused.
    return waitFor('a 429 while the slow readers hold the seats', async () => {
      const r = await c.request('GET', `${LIST_PATH}/cm-1`);
      return r.status === 429 ? r : false;
    }, 60_000);
  })();
  const refused = await Promise.race([load, rss.exceeded]);
  t.equal(refused.json?.kind, 'Status');
  t.equal(refused.json?.reason, 'TooManyRequests');
  t.equal(refused.json?.code, 429);
  t.equal(refused.headers['retry-after'], '1', 'Retry-After: 1');
  // The seats stay taken (the load is steady); the memory bound holds meanwhile.
  await Promise.race([new Promise((r) => setTimeout(r, 1000)), rss.exceeded]);
  await rss.stop();
  t.ok(rss.peak() < RSS_BOUND, `peak server RSS under the slow readers: ${(rss.peak() / 1e6).toFixed(0)} MB`);

  // The slow clients go away: their seats come back and the server answers again.
  for (const s of sockets) s.destroy();
  const ok = await waitFor('a full list once the slow readers are gone', async () => {
    const r = await c.request('GET', LIST_PATH);
    return r.status === 200 ? r : false;
  }, 30_000);
  t.equal(ok.json?.items?.length, OBJECTS, 'the whole list');
});
