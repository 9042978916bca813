import t, { type Test } from 'tap';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { KubeObject } from '../../src/api/resources/types.js';
import type { ResourceRef, RestClient } from '../../src/client/rest-client.js';
import { parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import type { Controller, ControllerContext } from '../../src/daemons/controller-manager/controller-registry.js';
import { run } from '../../src/daemons/controller-manager/main.js';
import { NodeIpamController, podCidrsOf } from '../../src/daemons/controller-manager/controllers/nodeipam.js';
import {
  CidrSet, ERR_NO_CIDRS_REMAINING, ERR_SUBNET_TOO_BIG, formatBigCidr, parseBigCidr, type BigCidr,
} from '../../src/daemons/controller-manager/controllers/nodeipam/cidr-set.js';
import { nodeIpamSettings } from '../../src/daemons/controller-manager/controllers/nodeipam/settings.js';
import { startApiserver } from '../helpers/apiserver.js';
import { assertSelectable, startControllers, waitFor } from './fixtures/controller-harness.js';

const NODES: ResourceRef = { group: '', version: 'v1', resource: 'nodes' };
const EVENTS: ResourceRef = { group: '', version: 'v1', resource: 'events', namespace: 'default' };

const cidr = (s: string): BigCidr => {
  const c = parseBigCidr(s);
  if (!c) throw new Error(`bad test CIDR ${s}`);
  return c;
};

function node(name: string, podCIDR?: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name }, ...(podCIDR ? { spec: { podCIDR, podCIDRs: [podCIDR] } } : {}) };
}

const specOf = (n: KubeObject): { podCIDR?: string; podCIDRs?: string[] } => (n.spec ?? {}) as { podCIDR?: string; podCIDRs?: string[] };

/** Waits for the node's pod CIDR and checks podCIDR and podCIDRs agree. */
async function podCidr(t: Test, client: RestClient, name: string): Promise<string> {
  const n = await waitFor(`pod CIDR of ${name}`, async () => {
    const got = await client.get(NODES, name);
    return specOf(got).podCIDR ? got : undefined;
  });
  t.same(specOf(n).podCIDRs, [specOf(n).podCIDR], `${name}: podCIDRs matches podCIDR`);
  return specOf(n).podCIDR ?? '';
}

/**
 * The controller, started only once `open()` is called (nodes created before that exist when
 * it starts), with its run's outcome kept.
 */
function gated(ctl: Controller): { ctl: Controller; open(): void; outcome: Promise<unknown> } {
  let open!: () => void;
  const gate = new Promise<void>((r) => { open = r; });
  let settle!: (v: unknown) => void;
  const outcome = new Promise<unknown>((r) => { settle = r; });
  return {
    ctl: {
      name: ctl.name,
      run: async (ctx: ControllerContext) => {
        await gate;
        try { await ctl.run(ctx); settle('returned'); } catch (e) { settle(e); throw e; }
      },
    },
    open, outcome,
  };
}

const config = (...args: string[]): ReturnType<typeof parseControllerManagerArgs>['config'] => parseControllerManagerArgs(args).config;

t.test('the CIDR set cuts the cluster CIDR into node blocks', async (t) => {
  const s = new CidrSet(cidr('10.244.0.0/16'), 24);
  t.equal(s.maxCidrs, 256);
  t.equal(formatBigCidr(s.allocateNext()), '10.244.0.0/24');
  s.occupy(cidr('10.244.1.0/24'));
  s.occupy(cidr('10.244.2.128/25'));
  t.equal(formatBigCidr(s.allocateNext()), '10.244.3.0/24', 'occupied blocks (whole or partly) are skipped');
  s.occupy(cidr('10.244.16.0/20'));
  t.equal(s.allocatedCount, 4 + 16, 'a wider CIDR occupies every block it covers');
  s.release(cidr('10.244.0.0/24'));
  t.equal(formatBigCidr(s.allocateNext()), '10.244.4.0/24', 'round robin: a released block is not next');
  t.throws(() => s.occupy(cidr('10.0.0.0/24')), /cidr 10\.0\.0\.0\/24 is out the range of cluster cidr 10\.244\.0\.0\/16/);
  s.occupy(cidr('10.0.0.0/8'));
  t.equal(s.allocatedCount, 256, 'a CIDR containing the cluster CIDR occupies all of it');
  t.throws(() => s.allocateNext(), { message: ERR_NO_CIDRS_REMAINING });

  const tiny = new CidrSet(cidr('10.1.0.0/23'), 24);
  t.equal(formatBigCidr(tiny.allocateNext()), '10.1.0.0/24');
  t.equal(formatBigCidr(tiny.allocateNext()), '10.1.1.0/24');
  tiny.release(cidr('10.1.0.0/24'));
  t.equal(formatBigCidr(tiny.allocateNext()), '10.1.0.0/24', 'the search wraps around to a freed block');

  const v6 = new CidrSet(cidr('fd00:10::/48'), 64);
  t.equal(formatBigCidr(v6.allocateNext()), 'fd00:10::/64');
  t.equal(formatBigCidr(v6.allocateNext()), 'fd00:10:0:1::/64');
  t.throws(() => new CidrSet(cidr('fd00::/32'), 64), { message: ERR_SUBNET_TOO_BIG }, 'IPv6: at most 16 bits between the prefixes');
});

t.test('options are checked as Kubernetes checks them at start', async (t) => {
  t.equal(nodeIpamSettings(config()), undefined, 'off without --allocate-node-cidrs');
  t.throws(() => nodeIpamSettings(config('--allocate-node-cidrs')), /Must specify --cluster-cidr if --allocate-node-cidrs is set/);
  t.throws(() => nodeIpamSettings({ ...config('--allocate-node-cidrs'), clusterCidr: '10.244.0.0/33' }), /invalid --cluster-cidr "10\.244\.0\.0\/33"/);
  t.throws(() => parseControllerManagerArgs(['--allocate-node-cidrs', '--cluster-cidr=bogus']), /--cluster-cidr/, 'the option parser already rejects a non-CIDR');
  t.throws(() => nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=8')),
    /mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size/);
  t.equal(nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/24'))?.nodeMaskSize, 24, 'a mask equal to the prefix is allowed (one block), as in Kubernetes');
  t.throws(() => nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--node-cidr-mask-size=40')), /longer than an IPv4 address/);
  t.throws(() => nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--cidr-allocator-type=CloudAllocator')), /cloud provider is not configured/);
  t.throws(() => nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--cidr-allocator-type=Nope')), /Invalid CIDR allocator type: Nope/);
  const inside = nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--service-cluster-ip-range=10.244.1.0/24'));
  t.equal(inside?.serviceCidr && formatBigCidr(inside.serviceCidr), '10.244.1.0/24');
  const apart = nodeIpamSettings(config('--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--service-cluster-ip-range=10.96.0.0/12'));
  t.equal(apart?.serviceCidr, undefined, 'a service range apart from the cluster CIDR is not filtered');
  t.same(podCidrsOf(node('x', '10.1.2.0/24')), ['10.1.2.0/24']);
  t.same(podCidrsOf({ metadata: { name: 'old' }, spec: { podCIDR: '10.1.3.0/24' } }), ['10.1.3.0/24'], 'podCIDR alone counts');
});

t.test('nodeipam is selectable and on by default', async (t) => {
  await assertSelectable(t, 'nodeipam');
});

t.test('without --allocate-node-cidrs nothing is allocated', async (t) => {
  const g = gated(new NodeIpamController());
  const c = await startControllers(g.ctl);
  t.teardown(() => c.stop());
  g.open();
  t.equal(await g.outcome, 'returned', 'the controller returns at once');
  await c.client.create(NODES, node('plain'));
  t.same(podCidrsOf(await c.client.get(NODES, 'plain')), [], 'the node keeps no pod CIDR');
});

t.test('nodes get blocks of the cluster CIDR in order', async (t) => {
  const g = gated(new NodeIpamController());
  const c = await startControllers(g.ctl, { args: ['--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16'] });
  t.teardown(() => c.stop());
  await c.client.create(NODES, node('preset', '10.244.1.0/24'));
  g.open();
  for (const n of ['a', 'b', 'c']) await c.client.create(NODES, node(n));
  t.equal(await podCidr(t, c.client, 'a'), '10.244.0.0/24');
  t.equal(await podCidr(t, c.client, 'b'), '10.244.2.0/24', 'the preset block (occupied at start) is skipped');
  t.equal(await podCidr(t, c.client, 'c'), '10.244.3.0/24');
  t.equal(specOf(await c.client.get(NODES, 'preset')).podCIDR, '10.244.1.0/24', 'a preset pod CIDR is kept');

  await c.client.create(NODES, node('late-preset', '10.244.4.0/24'));
  await c.client.create(NODES, node('d'));
  t.equal(await podCidr(t, c.client, 'd'), '10.244.5.0/24', 'a preset block of a node added later is skipped too');

  await t.rejects(c.client.patch(NODES, 'a', 'merge', { spec: { podCIDR: '10.244.9.0/24' } }), { code: 422 }, 'the API server keeps podCIDR immutable');
});

t.test('an exhausted range: CIDRNotAvailable, and a freed block goes to the waiting node', async (t) => {
  const c = await startControllers(new NodeIpamController(), { args: ['--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/23'], recordEvents: true });
  t.teardown(() => c.stop());
  await c.client.create(NODES, node('x'));
  await c.client.create(NODES, node('y'));
  t.equal(await podCidr(t, c.client, 'x'), '10.244.0.0/24');
  t.equal(await podCidr(t, c.client, 'y'), '10.244.1.0/24');
  await c.client.create(NODES, node('z'));
  const ev = await waitFor('CIDRNotAvailable event', async () => (await c.client.list(EVENTS)).items.find((e) => e.reason === 'CIDRNotAvailable'));
  t.match(ev, { type: 'Normal', message: 'Node z status is now: CIDRNotAvailable', involvedObject: { kind: 'Node', name: 'z' }, source: { component: 'cidrAllocator' } });
  t.same(podCidrsOf(await c.client.get(NODES, 'z')), [], 'z has no pod CIDR');
  await c.client.delete(NODES, 'x');
  t.equal(await podCidr(t, c.client, 'z'), '10.244.0.0/24', 'the deleted node\'s block is reused');
});

t.test('a service range inside the cluster CIDR is never handed out', async (t) => {
  const c = await startControllers(new NodeIpamController(), {
    args: ['--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16', '--service-cluster-ip-range=10.244.1.0/24'],
  });
  t.teardown(() => c.stop());
  for (const n of ['s0', 's1', 's2']) await c.client.create(NODES, node(n));
  t.equal(await podCidr(t, c.client, 's0'), '10.244.0.0/24');
  t.equal(await podCidr(t, c.client, 's1'), '10.244.2.0/24');
  t.equal(await podCidr(t, c.client, 's2'), '10.244.3.0/24');
});

t.test('a node whose CIDR lies outside the cluster CIDR fails the start', async (t) => {
  const g = gated(new NodeIpamController());
  const c = await startControllers(g.ctl, { args: ['--allocate-node-cidrs', '--cluster-cidr=10.244.0.0/16'] });
  t.teardown(() => c.stop());
  await c.client.create(NODES, node('stray', '10.9.0.0/24'));
  g.open();
  const err = await g.outcome;
  t.type(err, Error);
  t.match((err as Error).message, /failed to mark cidr\[10\.9\.0\.0\/24\] at idx \[0\] as occupied for node: stray: cidr 10\.9\.0\.0\/24 is out the range of cluster cidr 10\.244\.0\.0\/16/);
});

t.test('the controller manager reports a start failure like any controller\'s', async (t) => {
  const api = await startApiserver();
  t.teardown(() => api.stop());
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write(chunk: Buffer, _enc, cb) { for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>); cb(); } });
  const ac = new AbortController();
  const args = [`--coreconfig=${api.coreconfigPath}`, '--leader-elect=false', '--port=0', '--controllers=nodeipam', '--allocate-node-cidrs'];
  const done = run(parseControllerManagerArgs(args).config, { log: pino({ level: 'info' }, sink), signal: ac.signal });
  const line = await waitFor('the start error in the log', async () => lines.find((l) => l.msg === 'controller stopped with an error'));
  t.match(line, { controller: 'nodeipam', err: /Must specify --cluster-cidr if --allocate-node-cidrs is set/ });
  ac.abort();
  t.equal(await done, 0, 'the controller manager itself keeps running until stopped');
});
