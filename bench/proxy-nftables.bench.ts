/**
 * The service proxy's nftables programming at size: 1000 ClusterIP services x 10 ready
 * endpoints (10 000 endpoint chains) programmed from empty, then one endpoint of one service
 * replaced (a partial sync), then a periodic full resync of the unchanged state. Each is one
 * `nft -f -` transaction in a private network namespace (root and nft needed). Times: building
 * the wanted state and script in JS, and the whole sync including nft.
 * Aims (issue 34): from empty under 2 s; one endpoint change under 100 ms.
 * Run: node dist/bench/proxy-nftables.bench.js   (about 10 s)
 */
import { pino } from 'pino';
import { NftCommand } from '../src/daemons/proxy/nft-command.js';
import { desiredState, type NftOptions } from '../src/daemons/proxy/nft-rules.js';
import { NftProxier } from '../src/daemons/proxy/proxier.js';
import { buildServicePorts, type EndpointSliceObject, type ServiceObject } from '../src/daemons/proxy/service-model.js';
import { transactionScript } from '../src/daemons/proxy/nft-transaction.js';
import { createNetns, netnsSkipReason } from '../test/helpers/netns.js';
import { service, slice } from '../test/proxy/fixtures.js';

const SERVICES = 1000;
const ENDPOINTS = 10;
const skip = netnsSkipReason();
if (skip) {
  console.log(`skipped: ${skip}`);
  process.exit(0);
}

const ip = (n: number): string => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
const services: ServiceObject[] = [];
let slices: EndpointSliceObject[] = [];
for (let s = 0; s < SERVICES; s++) {
  services.push(service(`svc-${s}`, ip((96 << 16) + s + 10)));
  slices.push(slice(`svc-${s}`, Array.from({ length: ENDPOINTS }, (_, e) => ({ ip: ip((200 << 16) + s * ENDPOINTS + e + 2) }))));
}
const rules: NftOptions = { table: 'corectl-proxy', masqueradeBit: 14, masqueradeAll: false, clusterCidrs: ['10.200.0.0/16'], nodePortCidrs: [] };

function line(name: string, ms: number, aim?: number): void {
  console.log(`${name.padEnd(58)} ${ms.toFixed(1).padStart(9)} ms${aim ? `   (aim < ${aim} ms: ${ms < aim ? 'met' : 'MISSED'})` : ''}`);
}

const ns = createNetns('cpxbench');
try {
  const nft = new NftCommand([...ns.exec, 'nft']);
  let t0 = performance.now();
  const want = desiredState(buildServicePorts(services, slices, 'node-a'), rules);
  const script = transactionScript(rules.table, want, undefined);
  line(`build state + script, ${SERVICES} x ${ENDPOINTS} (JS only, ${script.split('\n').length} lines)`, performance.now() - t0);

  const proxier = new NftProxier({
    nft, nodeName: 'node-a', log: pino({ level: 'silent' }), rules,
    services: () => services, slices: () => slices, minSyncPeriodMs: 0, syncPeriodMs: 3600_000,
  });
  t0 = performance.now();
  await proxier.syncOnce(true);
  line(`full sync from empty (${SERVICES} services x ${ENDPOINTS} endpoints)`, performance.now() - t0, 2000);

  slices = [...slices];
  const i = SERVICES >> 1;
  slices[i] = slice(`svc-${i}`, Array.from({ length: ENDPOINTS }, (_, e) => ({ ip: ip((200 << 16) + i * ENDPOINTS + e + (e === 0 ? 60_000 : 2)) })));
  const times: number[] = [];
  for (let round = 0; round < 5; round++) {
    // Alternate between two states so that every round changes one endpoint.
    const other = slices[i];
    slices = [...slices];
    slices[i] = round % 2 === 0 ? other as EndpointSliceObject : slice(`svc-${i}`, Array.from({ length: ENDPOINTS }, (_, e) => ({ ip: ip((200 << 16) + i * ENDPOINTS + e + (round % 4 === 1 ? 60_001 : 2)) })));
    t0 = performance.now();
    await proxier.syncOnce(false);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  line('one endpoint changed: partial sync (median of 5)', times[2] as number, 100);
  t0 = performance.now();
  await proxier.syncOnce(true);
  line('periodic full resync, nothing changed', performance.now() - t0);
  const chains = (ns.run('nft', 'list', 'chains', 'ip').match(/chain /g) ?? []).length;
  console.log(`chains in the table: ${chains}`);
} finally {
  ns.remove();
}
