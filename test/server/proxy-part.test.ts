// The service proxy as a part of `corectl server`: on only as root, with nft and a CRI runtime
// (the fake runtime's servers never touch the host's ruleset), --disable-proxy, its own
// coreconfig as system:kube-proxy, its pass-through options checked by its parser.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseServerArgs } from '../../src/flags/server.js';
import { planServer } from '../../src/daemons/server/plan.js';
import { proxyDerivedArgs, proxyOffReason, type ProxyHostFacts } from '../../src/daemons/server/proxy-part.js';
import { bootstrapPki } from '../../src/daemons/server/pki-bootstrap.js';
import { writeServerCoreconfigs } from '../../src/daemons/server/admin-coreconfig.js';
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';

const dir = await mkdtemp(join(tmpdir(), 'corectl-server-proxy-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const facts = (f: Partial<ProxyHostFacts>) => (): ProxyHostFacts => ({ uid: 0, hasNft: true, bridgeNfCall: true, ...f });

t.test('when the proxy runs, and why not', async (t) => {
  t.equal(proxyOffReason({ disabled: false, runtime: 'remote' }, facts({})), undefined);
  t.equal(proxyOffReason({ disabled: true, runtime: 'remote' }, facts({})), '--disable-proxy');
  t.equal(proxyOffReason({ disabled: false, runtime: 'fake' }, facts({})), 'the fake runtime has no pods to route to');
  t.equal(proxyOffReason({ disabled: false, runtime: 'remote' }, facts({ uid: 1000 })), 'it programs nftables, which needs root');
  t.equal(proxyOffReason({ disabled: false, runtime: 'remote' }, facts({ hasNft: false })), 'the nft command is missing (Debian package nftables)');
});

t.test('derived options: own coreconfig, node name, listeners off, masquerade-all without br_netfilter', async (t) => {
  t.same(proxyDerivedArgs('/d/proxy.coreconfig', 'n1', facts({})), ['--coreconfig=/d/proxy.coreconfig', '--hostname-override=n1', '--healthz-bind-address=', '--metrics-bind-address=', '--cleanup-on-exit=true']);
  t.ok(proxyDerivedArgs('/d/p', 'n1', facts({ bridgeNfCall: false })).includes('--masquerade-all=true'));
});

t.test('the plan: fake runtime leaves it off; --disable-proxy; --proxy-arg checked', async (t) => {
  const fake = await planServer(parseServerArgs([`--data-dir=${join(dir, 'a')}`, '--node-name=n1']).config);
  t.equal(fake.proxyOff, 'the fake runtime has no pods to route to');
  t.notOk(fake.enabled.includes('proxy'));
  const off = await planServer(parseServerArgs([`--data-dir=${join(dir, 'b')}`, '--node-name=n1', '--container-runtime-endpoint=unix:///nonexistent.sock', '--disable-proxy']).config);
  t.equal(off.proxyOff, '--disable-proxy');
  const remote = await planServer(parseServerArgs([`--data-dir=${join(dir, 'c')}`, '--node-name=n1', '--container-runtime-endpoint=unix:///nonexistent.sock', '--proxy-arg=--cluster-cidr=10.42.0.0/16']).config);
  t.equal(remote.proxy.config.coreconfig, join(dir, 'c', 'coreconfig', 'proxy.coreconfig'));
  t.equal(remote.proxy.config.hostnameOverride, 'n1');
  t.equal(remote.proxy.config.clusterCidr, '10.42.0.0/16');
  t.equal(remote.proxy.config.healthzBindAddress, '');
  if (process.getuid?.() === 0 && remote.proxyOff === undefined) t.equal(remote.enabled.at(-1), 'proxy', 'started last, stopped first');
  t.throws(() => parseServerArgs(['--proxy-arg=--proxy-mode=ipvs']), /--proxy-arg: .*--proxy-mode/);
});

t.test('its coreconfig and certificate name system:kube-proxy', async (t) => {
  const pkiDir = join(dir, 'pki');
  const pki = await bootstrapPki({ dir: pkiDir, nodeName: 'n1', apiserverDnsNames: ['localhost'], apiserverIps: ['127.0.0.1'], nodeagentDnsNames: ['n1'], nodeagentIps: ['127.0.0.1'] });
  const paths = await writeServerCoreconfigs({ dataDir: dir, server: 'https://127.0.0.1:6443', pki: pki.paths, nodeName: 'n1' });
  t.match(await readFile(paths.proxy, 'utf8'), /name: system:kube-proxy/);
  t.match(new X509Certificate(await readFile(pki.paths.cert('proxy'))).subject, /CN=system:kube-proxy/);
});
