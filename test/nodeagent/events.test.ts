/**
 * The node agent's events through a real API server: a pod whose ConfigMap volume is missing
 * retries its mount every 2 s, and that is one FailedMount Event whose count grows (not one
 * Event per attempt); the recorder itself patches repeats, combines many messages of one
 * reason and stops at the spam filter's burst of 25 per pod.
 */
import t from 'tap';
import { pino } from 'pino';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { EventRecorder } from '../../src/daemons/nodeagent/events.js';
import { startNodeAgent, type NodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

interface Ev extends KubeObject { reason: string; message: string; count: number; involvedObject: { name: string; uid?: string; fieldPath?: string }; source: { component: string; host: string } }

const api = await startApiserver();
const client = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });
const dir = await mkdtemp(join(tmpdir(), 'corectl-agent-events-'));
let agent: NodeAgent | undefined;
t.teardown(async () => {
  await agent?.stop({ stopPods: true }).catch(() => undefined);
  client.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});
const EVENTS = { group: '', version: 'v1', resource: 'events', namespace: 'default' };
const events = async (pod: string): Promise<Ev[]> => (await client.list<Ev>(EVENTS)).items.filter((e) => e.involvedObject.name === pod);

t.test('the recorder: repeats patch one Event, many messages are combined, 25 per pod', async (t) => {
  const rec = new EventRecorder({ client, nodeName: 'rec-node', qps: 0, burst: 10, log: pino({ level: 'silent' }) });
  const pod = (name: string): Pod => ({ metadata: { name, namespace: 'default', uid: `uid-${name}` } });
  for (let i = 0; i < 4; i++) rec.emit(pod('rep'), 'Warning', 'FailedMount', 'MountVolume.SetUp failed: x', undefined);
  await rec.flush();
  const rep = await events('rep');
  t.equal(rep.length, 1, 'one Event');
  t.equal(rep[0]?.count, 4, 'count 4');
  t.equal(rep[0]?.source.host, 'rec-node');
  for (let i = 0; i < 12; i++) rec.emit(pod('many'), 'Warning', 'Unhealthy', `Readiness probe failed: ${i}`, 'spec.containers{main}');
  await rec.flush();
  const many = await events('many');
  t.equal(many.length, 10, '9 single Events and the combined one');
  const combined = many.find((e) => e.message.startsWith('(combined from similar events): '));
  t.equal(combined?.message, '(combined from similar events): Readiness probe failed: 11');
  t.equal(combined?.count, 3);
  for (let i = 0; i < 30; i++) rec.emit(pod('spam'), 'Normal', `Reason${i}`, 'm');
  await rec.flush();
  t.equal((await events('spam')).length, 25, 'the spam filter stops at 25');
  t.equal(rec.filtered, 5);
});

t.test('a FailedMount every 2 s is one Event with a growing count', async (t) => {
  const { config } = parseNodeagentArgs([
    '--container-runtime=fake', `--coreconfig=${api.coreconfigPath}`, '--hostname-override=ev-node', `--root-dir=${join(dir, 'root')}`,
    `--cert-dir=${join(dir, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
    '--address=127.0.0.1', '--node-ip=127.0.0.1', '--resolv-conf=', '--event-qps=0',
  ]);
  agent = await startNodeAgent(config, { podLogDir: join(dir, 'logs'), relistPeriodMs: 200, skipProcessTweaks: true });
  await client.create({ group: '', version: 'v1', resource: 'pods', namespace: 'default' }, {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: 'nomount' },
    spec: {
      nodeName: 'ev-node', volumes: [{ name: 'cfg', configMap: { name: 'does-not-exist' } }],
      containers: [{ name: 'main', image: 'busybox', volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }] }],
    },
  });
  const ev = await waitFor('FailedMount count 3', async () => {
    const list = (await events('nomount')).filter((e) => e.reason === 'FailedMount');
    return list.length === 1 && list[0]!.count >= 3 ? list : undefined;
  }, 30_000);
  t.equal(ev.length, 1, 'one FailedMount Event');
  t.match(ev[0]?.message, /MountVolume\.SetUp failed/);
  t.equal(ev[0]?.source.component, 'kubelet');
});
