/**
 * The pull service and pull-secret matching without a runtime: registry QPS/burst, serialized
 * and parallel pulls, the progress deadline (cancels a stalled pull, spares a moving one),
 * credentials tried in turn, the keyring's matching rules, and --image-service-endpoint routing.
 */
import t from 'tap';
import { pino } from 'pino';
import { withImageService } from '../../../src/daemons/nodeagent/images/image-service.js';
import { credentialsFor, imageLocation, parseKey } from '../../../src/daemons/nodeagent/images/pull-secrets.js';
import { PullService } from '../../../src/daemons/nodeagent/images/pull-service.js';
import type { CallOptions, ImageAuth, RuntimeBackend } from '../../../src/daemons/nodeagent/runtime/runtime.js';

const log = pino({ level: 'silent' });

interface Call { image: string; auth?: ImageAuth; start: number; end?: number }

function stubRuntime(behave: (c: Call, signal?: AbortSignal) => Promise<string>): { rt: RuntimeBackend; calls: Call[] } {
  const calls: Call[] = [];
  const rt = {
    name: 'stub',
    pullImage: async (image: string, auth?: ImageAuth, _sb?: unknown, opts?: CallOptions) => {
      const c: Call = { image, ...(auth ? { auth } : {}), start: calls.length };
      calls.push(c);
      try { return await behave(c, opts?.signal); } finally { c.end = calls.length; }
    },
  } as unknown as RuntimeBackend;
  return { rt, calls };
}

const untilAborted = (signal?: AbortSignal): Promise<string> => new Promise((_r, reject) => signal?.addEventListener('abort', () => reject(new Error('context canceled')), { once: true }));

t.test('keyring matching: host, Docker Hub aliases, wildcards, path prefixes, most specific first', async (t) => {
  t.same(parseKey('https://index.docker.io/v1/'), { host: 'docker.io', path: '' });
  t.same(parseKey('http://reg.example:5000/team/'), { host: 'reg.example:5000', path: 'team' });
  t.same(imageLocation('busybox'), { host: 'docker.io', path: 'library/busybox' });
  t.same(imageLocation('reg.example:5000/team/app:1'), { host: 'reg.example:5000', path: 'team/app' });
  const json = (auths: Record<string, unknown>): Record<string, string> => ({ '.dockerconfigjson': JSON.stringify({ auths }) });
  const secrets = [
    json({ 'reg.example:5000': { username: 'host', password: 'p' }, 'reg.example:5000/team': { auth: Buffer.from('team:p').toString('base64') } }),
    { '.dockercfg': JSON.stringify({ '*.corp.example': { username: 'wild', password: 'p' }, 'https://index.docker.io/v1/': { username: 'hub', password: 'p' } }) },
  ];
  t.same(credentialsFor('reg.example:5000/team/app:1', secrets).map((a) => a.username), ['team', 'host']);
  t.same(credentialsFor('reg.example:5000/other/app', secrets).map((a) => a.username), ['host']);
  t.same(credentialsFor('reg.example:5001/team/app', secrets), [], 'another port is another registry');
  t.same(credentialsFor('r1.corp.example/x', secrets).map((a) => a.username), ['wild']);
  t.same(credentialsFor('a.b.corp.example/x', secrets), [], 'a wildcard stands for one label');
  t.same(credentialsFor('busybox', secrets).map((a) => [a.username, a.serverAddress]), [['hub', undefined]]);
  t.same(credentialsFor('reg.example:5000/team/app', secrets)[0]?.serverAddress, 'https://reg.example:5000');
  t.same(credentialsFor('x/y', [{ '.dockerconfigjson': '{broken' }]), [], 'a broken secret gives nothing');
});

t.test('--registry-qps/--registry-burst: a pull over the budget fails at once', async (t) => {
  const { rt } = stubRuntime(async (c) => `id-${c.image}`);
  const s = new PullService({ runtime: rt, qps: 1, burst: 2, serialize: false, progressDeadlineMs: 0, log });
  t.equal(await s.pull('a', []), 'id-a');
  t.equal(await s.pull('b', []), 'id-b');
  await t.rejects(s.pull('c', []), /^pull QPS exceeded$/);
  const unlimited = new PullService({ runtime: rt, qps: 0, burst: 1, serialize: false, progressDeadlineMs: 0, log });
  for (let i = 0; i < 20; i++) await unlimited.pull(`x${i}`, []);
});

t.test('--serialize-image-pulls: one pull at a time, in order, a failure does not block the next', async (t) => {
  let active = 0;
  let most = 0;
  const { rt, calls } = stubRuntime(async (c) => {
    active++; most = Math.max(most, active);
    await new Promise((r) => setTimeout(r, 20));
    active--;
    if (c.image === 'bad') throw new Error('not found');
    return c.image;
  });
  const serial = new PullService({ runtime: rt, qps: 0, burst: 1, serialize: true, progressDeadlineMs: 0, log });
  const results = await Promise.allSettled(['a', 'bad', 'c'].map((i) => serial.pull(i, [])));
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.equal(most, 1);
  t.same(calls.map((c) => c.image), ['a', 'bad', 'c']);
  most = 0;
  const parallel = new PullService({ runtime: rt, qps: 0, burst: 1, serialize: false, progressDeadlineMs: 0, log });
  await Promise.all(['d', 'e', 'f'].map((i) => parallel.pull(i, [])));
  t.equal(most, 3);
});

t.test('--image-pull-progress-deadline: a pull without progress is cancelled, one with progress is not', async (t) => {
  const { rt } = stubRuntime(async (_c, signal) => untilAborted(signal));
  const stalled = new PullService({ runtime: rt, qps: 0, burst: 1, serialize: false, progressDeadlineMs: 200, sampleMs: 20, progress: async () => '10B in 1 downloads', log });
  await t.rejects(stalled.pull('reg/x:1', []), { message: 'Cancel pulling image "reg/x:1" because of no progress for 200ms, latest progress: "10B in 1 downloads"' });
  t.equal(stalled.cancelled, 1);
  let bytes = 0;
  const { rt: slow } = stubRuntime(async () => { await new Promise((r) => setTimeout(r, 600)); return 'done'; });
  const moving = new PullService({ runtime: slow, qps: 0, burst: 1, serialize: false, progressDeadlineMs: 200, sampleMs: 20, progress: async () => `${bytes++}B`, log });
  t.equal(await moving.pull('reg/y:1', []), 'done');
  t.equal(moving.cancelled, 0);
});

t.test('credentials are tried in turn; anonymous when there are none', async (t) => {
  const { rt, calls } = stubRuntime(async (c) => { if (c.auth?.username !== 'good') throw new Error(`unauthorized as ${c.auth?.username ?? 'anonymous'}`); return 'ok'; });
  const s = new PullService({ runtime: rt, qps: 0, burst: 1, serialize: false, progressDeadlineMs: 0, log });
  t.equal(await s.pull('i', [{ username: 'bad' }, { username: 'good' }]), 'ok');
  t.same(calls.map((c) => c.auth?.username), ['bad', 'good']);
  await t.rejects(s.pull('i', []), /unauthorized as anonymous/);
  await t.rejects(s.pull('i', [{ username: 'x' }, { username: 'y' }]), /^\[unauthorized as x, unauthorized as y\]$/);
});

t.test('--image-service-endpoint: image calls go to the image service, the rest to the runtime', async (t) => {
  const seen: string[] = [];
  const backend = (who: string): RuntimeBackend => new Proxy({}, { get: (_t, p) => (p === 'name' ? 'cri' : async () => { seen.push(`${who}.${String(p)}`); return []; }) }) as RuntimeBackend;
  const rt = withImageService(backend('runtime'), backend('images'));
  await rt.listImages();
  await rt.pullImage('x');
  await rt.imageStatus('x');
  await rt.removeImage('x');
  await rt.imageFsInfo();
  await rt.listContainers();
  await rt.version();
  await rt.close();
  t.same(seen, ['images.listImages', 'images.pullImage', 'images.imageStatus', 'images.removeImage', 'images.imageFsInfo', 'runtime.listContainers', 'runtime.version', 'images.close', 'runtime.close']);
});
