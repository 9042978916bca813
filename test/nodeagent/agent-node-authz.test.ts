/**
 * The node agent as a node (`system:node:node-z` in `system:nodes`) against an API server whose
 * only authorizer is Node, with NodeRestriction on: nothing else grants it anything, so this
 * proves the node rules, the graph and the admission plugin allow what the agent needs. It
 * registers its Node, heartbeats its Lease, mirrors a static pod, runs a pod mounting a Secret
 * and a ConfigMap and a projected service-account token, reports the pod's status, records
 * the pod's events, and is told no when it reaches for a secret no pod of its names.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { KubeObject } from '../../src/api/resources/types.js';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { RestClient } from '../../src/client/rest-client.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { startNodeAgent } from '../../src/daemons/nodeagent/main.js';
import type { Pod } from '../../src/daemons/nodeagent/pod-types.js';
import { startApiserver } from '../helpers/apiserver.js';
import { waitFor } from '../helpers/wait-for.js';

const NODE = 'node-z';
const dir = await mkdtemp(join(tmpdir(), 'corectl-node-authz-agent-'));
const keyFile = join(dir, 'sa.key');
await writeFile(keyFile, generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), { mode: 0o600 });
const api = await startApiserver({
  args: ['--authorization-mode=Node', '--enable-admission-plugins=NodeRestriction', '--disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection',
    '--feature-gates=TokenRequest=true', `--service-account-signing-key-file=${keyFile}`],
});
const admin = new RestClient({ connection: await loadCoreconfig({ path: api.coreconfigPath }), contentType: 'application/json' });

// The agent's own coreconfig: a node client certificate from the cluster CA.
const pair = await api.issueClient(`system:node:${NODE}`, ['system:nodes']);
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const nodeConfig = join(dir, 'node.coreconfig');
await writeFile(nodeConfig, [
  'apiVersion: v1', 'kind: Config', 'current-context: node',
  'clusters:', '- name: c', '  cluster:', `    server: ${api.url}`, `    certificate-authority-data: ${b64(await readFile(api.caFile))}`,
  'users:', '- name: node', '  user:', `    client-certificate-data: ${b64(pair.certPem)}`, `    client-key-data: ${b64(pair.keyPem)}`,
  'contexts:', '- name: node', '  context:', '    cluster: c', '    user: node', '',
].join('\n'), { mode: 0o600 });

// Refusals the agent met (a 403 in its log means the authorizer or NodeRestriction is too tight).
const forbidden: string[] = [];
const log = pino({ level: 'warn' }, { write: (line: string) => { if (/403|[Ff]orbidden/.test(line)) forbidden.push(line); } });

const root = join(dir, 'node');
const manifests = join(dir, 'manifests');
await mkdir(manifests, { recursive: true });
await writeFile(join(manifests, 'static.json'), JSON.stringify({
  apiVersion: 'v1', kind: 'Pod', metadata: { name: 'static-web', namespace: 'default' },
  spec: { containers: [{ name: 'web', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent' }] },
}));
const { config } = parseNodeagentArgs([
  '--container-runtime=fake', `--coreconfig=${nodeConfig}`, `--hostname-override=${NODE}`, `--root-dir=${root}`,
  `--cert-dir=${join(root, 'pki')}`, '--port=0', '--read-only-port=0', '--healthz-port=0', '--fail-swap-on=false',
  '--address=127.0.0.1', '--resolv-conf=', '--node-status-update-frequency=1s', `--pod-manifest-path=${manifests}`, '--file-check-frequency=1s',
]);
const agent = await startNodeAgent(config, { podLogDir: join(root, 'logs'), relistPeriodMs: 100, skipProcessTweaks: true, log });
t.teardown(async () => {
  await agent.stop({ stopPods: true }).catch(() => undefined);
  admin.close();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

const core = (resource: string, namespace = 'default'): { group: string; version: string; resource: string; namespace?: string } =>
  ({ group: '', version: 'v1', resource, ...(namespace ? { namespace } : {}) });
const LEASES = { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', namespace: 'kube-node-lease' };

t.test('registers its Node and heartbeats its Lease', async (t) => {
  const node = await waitFor('the Node', async () => {
    const n = await admin.get<KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }>(core('nodes', ''), NODE);
    return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? n : undefined;
  });
  t.equal(node.metadata?.labels?.['kubernetes.io/hostname'], NODE);
  const first = await waitFor('the Lease', () => admin.get<KubeObject & { spec?: { renewTime?: string } }>(LEASES, NODE));
  await waitFor('a renewal', async () => {
    const l = await admin.get<KubeObject & { spec?: { renewTime?: string } }>(LEASES, NODE);
    return l.metadata?.resourceVersion !== first.metadata?.resourceVersion ? l : undefined;
  });
  t.pass('the Lease is renewed');
});

t.test('mirrors its static pod', async (t) => {
  const mirror = await waitFor('the mirror pod', () => admin.get<Pod>(core('pods'), `static-web-${NODE}`));
  t.equal(mirror.spec?.nodeName, NODE);
  t.equal(mirror.metadata?.ownerReferences?.[0]?.kind, 'Node');
});

t.test('runs a pod with a Secret, a ConfigMap and a projected token, and reports its status', async (t) => {
  await admin.create(core('serviceaccounts'), { metadata: { name: 'robot' } });
  await admin.create(core('configmaps'), { metadata: { name: 'cfg' }, data: { MODE: 'fast', 'app.conf': 'x=1' } });
  await admin.create(core('secrets'), { metadata: { name: 'sec' }, data: { password: b64('hunter2') } });
  await admin.create(core('secrets'), { metadata: { name: 'elsewhere' }, data: { password: b64('nope') } });
  await admin.create(core('pods'), {
    metadata: { name: 'worker' },
    spec: {
      nodeName: NODE, serviceAccountName: 'robot', terminationGracePeriodSeconds: 1,
      containers: [{
        name: 'main', image: 'localhost/busybox:latest', imagePullPolicy: 'IfNotPresent',
        env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'MODE' } } }],
        volumeMounts: [{ name: 'sec', mountPath: '/sec' }, { name: 'cfg', mountPath: '/cfg' }, { name: 'tok', mountPath: '/tok' }],
      }],
      volumes: [
        { name: 'sec', secret: { secretName: 'sec' } },
        { name: 'cfg', configMap: { name: 'cfg' } },
        { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 900 } }] } },
      ],
    },
  });
  const pod = await waitFor('Running', async () => { const p = await admin.get<Pod>(core('pods'), 'worker'); return p.status?.phase === 'Running' ? p : undefined; }, 30_000);
  t.ok(pod.status?.containerStatuses?.[0]?.ready, 'status reported by the node');
  const vols = join(root, 'pods', pod.metadata?.uid ?? '', 'volumes');
  t.equal(await readFile(join(vols, 'kubernetes.io~secret', 'sec', 'password'), 'utf8'), 'hunter2');
  t.equal(await readFile(join(vols, 'kubernetes.io~configmap', 'cfg', 'app.conf'), 'utf8'), 'x=1');
  // The atomic writer's ..data and version directory are hidden names, as on Kubernetes.
  t.same((await readdir(join(vols, 'kubernetes.io~projected', 'tok'))).filter((n) => !n.startsWith('..')), ['token']);
  const token = await readFile(join(vols, 'kubernetes.io~projected', 'tok', 'token'), 'utf8');
  const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: string };
  t.equal(claims.sub, 'system:serviceaccount:default:robot');
  t.same(forbidden, [], 'the agent was refused nothing');
  const events = await waitFor('the pod\'s events', async () => {
    const list = await admin.list<KubeObject & { reason?: string; source?: { host?: string }; involvedObject?: { name?: string } }>(core('events'));
    const mine = list.items.filter((e) => e.involvedObject?.name === 'worker' && e.source?.host === NODE);
    return mine.some((e) => e.reason === 'Started') ? mine : undefined;
  });
  t.ok(events.length > 0, 'the node recorded events');

  // The agent's own identity cannot read a secret no pod of this node names.
  const client = new RestClient({ connection: await loadCoreconfig({ path: nodeConfig }), contentType: 'application/json' });
  t.teardown(() => client.close());
  await t.rejects(client.get(core('secrets'), 'elsewhere'), { message: /no relationship found between node 'node-z' and this object/ });

  await admin.delete(core('pods'), 'worker');
  await waitFor('the pod to be gone (the node deletes it finally)', async () => { try { await admin.get(core('pods'), 'worker'); return false; } catch { return true; } }, 30_000);
  t.same(forbidden, [], 'nor when it finished the pod');
});
