import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef } from '../../src/client/rest-client.js';
import { CONTROLLER_MANAGER_FLAGS, parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { formatHelp } from '../../src/flags/help.js';
import { CONTROLLER_NAMES, enabledControllers as flagEnabled } from '../../src/flags/known-names.js';
import {
  ALL_CONTROLLER_NAMES, IMPLEMENTED, enabledControllers, isControllerEnabled, unknownControllers, type ControllerContext,
} from '../../src/daemons/controller-manager/controller-registry.js';
import { selectControllers } from '../../src/daemons/controller-manager/main.js';
import {
  DESCRIPTION_ANNOTATION, ROOT_CA_CONFIG_MAP, RootCaPublisher,
} from '../../src/daemons/controller-manager/controllers/root-ca-publisher.js';
import { createCA } from '../../src/util/pki.js';
import { startCluster, waitFor } from './fixtures/cluster.js';

const NS: ResourceRef = { group: '', version: 'v1', resource: 'namespaces' };
const cms = (namespace: string): ResourceRef => ({ group: '', version: 'v1', resource: 'configmaps', namespace });
const NAME = 'root-ca-cert-publisher';

type Data = Record<string, string>;
const dataOf = (cm: KubeObject): Data => (cm.data as Data | undefined) ?? {};

const missing = async (f: () => Promise<unknown>): Promise<boolean> => {
  try { await f(); return false; } catch (e) { if ((e as { code?: number }).code === 404) return true; throw e; }
};

/** A controller context whose client and informers fail the test when touched. */
function inertContext(args: string[], signal: AbortSignal, lines: string[], apiServerCa?: Buffer): ControllerContext {
  const untouchable = new Proxy({}, { get: (_o, p) => { throw new Error(`touched ${String(p)}`); } });
  const sink = new Writable({ write: (chunk: Buffer, _e, cb) => { lines.push(chunk.toString('utf8')); cb(); } });
  return {
    client: untouchable as ControllerContext['client'], informers: untouchable as ControllerContext['informers'],
    config: parseControllerManagerArgs(args).config, log: pino({ level: 'info' }, sink), signal,
    ...(apiServerCa ? { apiServerCa } : {}),
  };
}

t.test('--controllers knows root-ca-cert-publisher (ours, on by default)', async (t) => {
  t.same(parseControllerManagerArgs([`--controllers=${NAME}`]).config.controllers, [NAME]);
  t.same(parseControllerManagerArgs([`--controllers=*,-${NAME}`]).config.controllers, ['*', `-${NAME}`]);
  t.throws(() => parseControllerManagerArgs([`--controllers=${NAME}x`]), /unknown controller "root-ca-cert-publisherx"/, 'unknown names still rejected');

  t.ok(isControllerEnabled(NAME, ['*']), 'on by default');
  t.notOk(isControllerEnabled(NAME, ['*', `-${NAME}`]));
  t.ok(isControllerEnabled(NAME, [NAME]));
  t.same(unknownControllers([NAME, `-${NAME}`, 'nosuch']), ['nosuch']);
  t.ok(enabledControllers(['*']).includes(NAME));
  t.notOk(enabledControllers(['*', `-${NAME}`]).includes(NAME));
  t.same(flagEnabled(['*']), enabledControllers(['*']), 'flags and registry resolve "*" alike');

  t.notOk(CONTROLLER_NAMES.includes(NAME), "not among the reference's names");
  t.same([...ALL_CONTROLLER_NAMES], [...CONTROLLER_NAMES, NAME, 'endpointslice'], 'registry = reference names + ours');
  t.ok(IMPLEMENTED[NAME], 'implemented');
  const { controllers, notImplemented } = await selectControllers([NAME]);
  t.same(controllers.map((c) => c.name), [NAME]);
  t.same(notImplemented, []);
  t.match(formatHelp(CONTROLLER_MANAGER_FLAGS), /root-ca-cert-publisher and endpointslice are ours, beyond the reference/);
});

t.test('without any CA it logs once and does nothing', async (t) => {
  const ac = new AbortController();
  const lines: string[] = [];
  const done = new RootCaPublisher().run(inertContext([], ac.signal, lines));
  await waitFor('warning', async () => lines.length > 0);
  ac.abort();
  await done;
  t.equal(lines.length, 1);
  t.match(JSON.parse(lines[0] ?? '{}'), { level: 40, msg: /kube-root-ca\.crt is not published/ });
});

t.test('a --root-ca-file without a certificate fails the controller with a clear error', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-rootca-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'bad.crt'), 'not a certificate\n');
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const ctx = inertContext([`--root-ca-file=${join(dir, 'bad.crt')}`], ac.signal, [], Buffer.from('unused'));
  await t.rejects(new RootCaPublisher().run(ctx), /--root-ca-file .*bad\.crt: no PEM certificate found/);
  const gone = inertContext([`--root-ca-file=${join(dir, 'absent.crt')}`], ac.signal, []);
  await t.rejects(new RootCaPublisher().run(gone), /--root-ca-file .*absent\.crt: cannot read: ENOENT/);
});

t.test('publisher run by the controller manager, CA from its coreconfig', async (t) => {
  const c = await startCluster([`--controllers=${NAME}`]);
  t.teardown(() => c.stop());
  const pem = c.api.ca.certPem;
  const published = (namespace: string): Promise<KubeObject> => waitFor(`${ROOT_CA_CONFIG_MAP} in ${namespace}`, async () => {
    const cm = await c.client.get(cms(namespace), ROOT_CA_CONFIG_MAP);
    return dataOf(cm)['ca.crt'] === pem && cm;
  });

  await t.test('existing namespaces get the ConfigMap with the PEM and the description', async (t) => {
    for (const ns of ['default', 'kube-system', 'kube-public']) {
      const cm = await published(ns);
      t.same(dataOf(cm), { 'ca.crt': pem }, ns);
      t.match(cm.metadata?.annotations?.[DESCRIPTION_ANNOTATION], /kube-apiserver/);
    }
  });

  await t.test('a new namespace gets it; deleted, it comes back', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team' } });
    const first = await published('team');
    await c.client.delete(cms('team'), ROOT_CA_CONFIG_MAP);
    const again = await waitFor('re-created', async () => {
      const cm = await c.client.get(cms('team'), ROOT_CA_CONFIG_MAP);
      return cm.metadata?.uid !== first.metadata?.uid && cm;
    });
    t.same(dataOf(again), { 'ca.crt': pem });
  });

  await t.test('an edited ca.crt and a removed annotation are put back; other keys and labels stay', async (t) => {
    const cm = await published('team');
    const annotations = { ...cm.metadata?.annotations };
    delete annotations[DESCRIPTION_ANNOTATION];
    await c.client.update(cms('team'), {
      ...cm,
      metadata: { ...cm.metadata, labels: { owner: 'me' }, annotations: { ...annotations, note: 'mine' } },
      data: { 'ca.crt': 'tampered', extra: 'keep me' },
    });
    const fixed = await published('team');
    t.same(dataOf(fixed), { 'ca.crt': pem, extra: 'keep me' });
    t.equal(fixed.metadata?.labels?.['owner'], 'me');
    t.equal(fixed.metadata?.annotations?.['note'], 'mine');
    t.match(fixed.metadata?.annotations?.[DESCRIPTION_ANNOTATION], /kube-apiserver/);
  });

  await t.test('a terminating namespace is not given one', async (t) => {
    await c.client.create(NS, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'dying' } });
    await published('dying');
    // No namespace controller runs here: the namespace stays Terminating.
    const marked = await c.client.delete(NS, 'dying');
    t.equal((marked.status as { phase?: string } | undefined)?.phase, 'Terminating');
    await c.client.delete(cms('dying'), ROOT_CA_CONFIG_MAP);
    // Sentinel: one worker takes keys in order, and both deletions arrive on the same watch, so
    // once team's copy is back the sync of "dying" has run.
    const before = await published('team');
    await c.client.delete(cms('team'), ROOT_CA_CONFIG_MAP);
    await waitFor('team re-created', async () => (await c.client.get(cms('team'), ROOT_CA_CONFIG_MAP)).metadata?.uid !== before.metadata?.uid);
    t.ok(await missing(() => c.client.get(cms('dying'), ROOT_CA_CONFIG_MAP)), 'none in the terminating namespace');
    t.equal(((await c.client.get(NS, 'dying')).status as { phase?: string } | undefined)?.phase, 'Terminating');
  });
});

t.test('--root-ca-file wins over the coreconfig CA', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'corectl-rootca-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const other = await createCA({ commonName: 'published-root' });
  const bundle = other.certPem;
  await writeFile(join(dir, 'root.crt'), bundle);
  const c = await startCluster([`--controllers=${NAME}`, `--root-ca-file=${join(dir, 'root.crt')}`]);
  t.teardown(() => c.stop());
  const cm = await waitFor('published', () => c.client.get(cms('default'), ROOT_CA_CONFIG_MAP));
  t.equal(dataOf(cm)['ca.crt'], bundle);
  t.not(bundle, c.api.ca.certPem);
});
