/**
 * The iptables mode, applied in a private network namespace and read back with iptables-save:
 * ClusterIP (random choice by statistic), NodePort, no endpoints (REJECT), ClientIP affinity
 * (recent), Local policy, headless (nothing), the jumps from the built-in chains, stale
 * chains deleted, and cleanup leaving nothing of ours (another chain untouched).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { pino } from 'pino';
import { IptablesWriter } from '../../src/daemons/proxy/iptables-writer.js';
import { Proxier } from '../../src/daemons/proxy/proxier.js';
import type { EndpointSliceObject, ServiceObject } from '../../src/daemons/proxy/service-model.js';
import { createNetns, netnsSkipReason } from '../helpers/netns.js';
import { service, slice } from './fixtures.js';

const skip = netnsSkipReason() ?? (spawnSync('iptables-restore', ['--version'], { stdio: 'ignore' }).status === 0 ? undefined : 'needs iptables-restore');
if (skip) {
  t.plan(0, `iptables mode: ${skip}`);
} else {
  const ns = createNetns('cpxipt');
  t.teardown(() => ns.remove());
  let services: ServiceObject[] = [];
  let slices: EndpointSliceObject[] = [];
  const writer = new IptablesWriter({ masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.88.0.0/16'], nodePortCidrs: [] }, 'node-a', ns.exec);
  const proxier = new Proxier({ writer, nodeName: 'node-a', log: pino({ level: 'silent' }), services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000 });
  const save = (table: string): string[] => ns.run('iptables-save', '-t', table).split('\n');
  /** The rules of the chain a rule with this comment and target prefix jumps to. */
  const chainFor = (lines: string[], comment: string, prefix: string): string => {
    const line = lines.find((l) => l.startsWith('-A CPX-SERVICES') && l.includes(`"${comment}"`) && l.includes(`-j ${prefix}`)) ?? lines.find((l) => l.includes(`"${comment}"`) && l.includes(`-j ${prefix}`));
    return /-j (\S+)$/.exec(line ?? '')?.[1] ?? '';
  };
  const rulesOf = (lines: string[], chain: string): string[] => lines.filter((l) => l.startsWith(`-A ${chain} `));

  t.test('ClusterIP, NodePort, reject, headless, jumps', async (t) => {
    services = [
      service('web', '10.0.0.20', { type: 'NodePort', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30080 }] }),
      service('empty', '10.0.0.21'),
      service('headless', 'None'),
    ];
    slices = [slice('web', [{ ip: '10.88.0.2' }, { ip: '10.88.0.3' }, { ip: '10.88.0.4', ready: false }]), slice('headless', [{ ip: '10.88.0.9' }])];
    await proxier.syncOnce(true);
    const nat = save('nat');
    const svc = chainFor(nat, 'default/web/tcp/http', 'CPX-SVC-');
    t.match(svc, /^CPX-SVC-[A-Z0-9X]{16}$/);
    t.ok(svc.length <= 28, 'within iptables\' chain name limit');
    const svcRules = rulesOf(nat, svc);
    t.match(svcRules[0], /! -s 10\.88\.0\.0\/16 -d 10\.0\.0\.20\/32 -p tcp .*--dport 80 .*-j CPX-MARK-MASQ/, 'off-cluster clients masqueraded');
    t.match(svcRules[1], /-m statistic --mode random --probability 0\.50000000000 -j CPX-SEP-/);
    t.match(svcRules[2], /^-A \S+ -j CPX-SEP-/);
    t.equal(svcRules.length, 3, 'the not-ready endpoint is left out');
    const sep = /-j (CPX-SEP-\S+)/.exec(svcRules[1] ?? '')?.[1] ?? '';
    t.match(rulesOf(nat, sep).join('\n'), /-s 10\.88\.0\.2\/32 .*-j CPX-MARK-MASQ\n.*-j DNAT --to-destination 10\.88\.0\.2:8080/, 'hairpin marked, then DNAT');
    const ext = /-j (CPX-EXT-\S+)/.exec(nat.find((l) => l.startsWith('-A CPX-NODEPORTS') && l.includes('--dport 30080')) ?? '')?.[1] ?? '';
    t.match(ext, /^CPX-EXT-/, 'the NodePort jumps to the external chain');
    t.match(rulesOf(nat, ext)[0], /-j CPX-MARK-MASQ$/, 'external traffic masqueraded');
    t.match(nat.find((l) => l.startsWith('-A CPX-SERVICES') && l.includes('CPX-NODEPORTS')), /-m addrtype --dst-type LOCAL/);
    const filter = save('filter');
    t.ok(filter.some((l) => l.startsWith('-A CPX-SERVICES') && l.includes('-d 10.0.0.21/32') && l.includes('-j REJECT --reject-with icmp-port-unreachable')), 'no endpoints: REJECT');
    t.notOk([...nat, ...filter].some((l) => l.includes('headless')), 'nothing for a headless service');
    for (const [table, chain, target] of [['nat', 'PREROUTING', 'CPX-SERVICES'], ['nat', 'OUTPUT', 'CPX-SERVICES'], ['nat', 'POSTROUTING', 'CPX-POSTROUTING'], ['filter', 'INPUT', 'CPX-SERVICES'], ['filter', 'FORWARD', 'CPX-SERVICES'], ['filter', 'OUTPUT', 'CPX-SERVICES']]) {
      t.equal(save(table as string).filter((l) => l.startsWith(`-A ${chain} `) && l.endsWith(`-j ${target}`)).length, 1, `one jump ${table} ${chain} -> ${target}`);
    }
    await proxier.syncOnce(true);
    t.equal(save('nat').filter((l) => l.startsWith('-A PREROUTING ') && l.endsWith('-j CPX-SERVICES')).length, 1, 'a second full sync adds no second jump');
  });

  t.test('affinity and Local policies', async (t) => {
    services = [
      service('sticky', '10.0.0.28', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } }),
      service('elocal', '10.0.0.25', { type: 'NodePort', ports: [{ name: 'http', port: 80, protocol: 'TCP', nodePort: 30081 }], externalTrafficPolicy: 'Local' }),
      service('ilocal-none', '10.0.0.27', { internalTrafficPolicy: 'Local' }),
    ];
    slices = [
      slice('sticky', [{ ip: '10.88.0.15' }, { ip: '10.88.0.16' }]),
      slice('elocal', [{ ip: '10.88.0.10' }, { ip: '10.88.0.11', node: 'node-b' }]),
      slice('ilocal-none', [{ ip: '10.88.0.14', node: 'node-b' }]),
    ];
    await proxier.syncOnce(false);
    const nat = save('nat');
    const svc = rulesOf(nat, chainFor(nat, 'default/sticky/tcp/http', 'CPX-SVC-'));
    t.match(svc[1], /-m recent --rcheck --seconds 600 --reap --name CPX-SEP-\S+ --mask 255\.255\.255\.255 --rsource -j CPX-SEP-/, 'affinity checked first');
    const sep = /-j (CPX-SEP-\S+)$/.exec(svc[1] ?? '')?.[1] ?? '';
    t.match(rulesOf(nat, sep)[1], /-m recent --set --name CPX-SEP-\S+ --mask 255\.255\.255\.255 --rsource -j DNAT/, 'the endpoint remembers the client');
    const ext = /-j (CPX-EXT-\S+)/.exec(nat.find((l) => l.startsWith('-A CPX-NODEPORTS') && l.includes('--dport 30081')) ?? '')?.[1] ?? '';
    const extRules = rulesOf(nat, ext);
    t.match(extRules.at(-1), /-j CPX-SEP-/, 'one local endpoint');
    t.equal(extRules.filter((l) => /-j CPX-SEP-/.test(l)).length, 1, 'external: local endpoints only');
    t.notOk(extRules.some((l) => /-A \S+ -m comment --comment \S+ -j CPX-MARK-MASQ$/.test(l)), 'client address kept');
    t.ok(save('filter').some((l) => l.includes('-d 10.0.0.27/32') && l.endsWith('-j DROP')), 'Local with none here: dropped');
    t.notOk(nat.some((l) => l.includes('"default/web/')), 'the earlier service\'s chains are gone');
  });

  t.test('cleanup leaves nothing of ours', async (t) => {
    ns.run('iptables', '-t', 'nat', '-N', 'SOMEONE-ELSE');
    t.equal(await writer.cleanup(), true);
    const all = [...save('nat'), ...save('filter')];
    t.notOk(all.some((l) => l.includes('CPX-')), 'no chain or jump of ours');
    t.ok(all.includes(':SOMEONE-ELSE - [0:0]'), 'another chain untouched');
    t.equal(await writer.cleanup(), false, 'a second cleanup is a no-op');
  });
}
