/**
 * Child process of the fake-nodes bench: many SimulatedNodes (the node agent's heartbeat parts
 * on one shared `fake` runtime) in one process, driven over the fork() IPC channel:
 *   parent → {type:'scale', n, spreadMs}  add nodes up to n, each starting at a random moment
 *                                         within spreadMs (so heartbeats are spread out as on
 *                                         independent machines)           → {type:'scaled', n}
 *   parent → {type:'stats'}               counters since the last stats   → {type:'stats', ...}
 *   parent → {type:'stop'}                stop every node, close clients  → {type:'stopped'}, exit
 * argv[2] is JSON: { coreconfig, agentArgs, nodesPerConnection } — agentArgs are `corectl nodeagent`
 * options, parsed with the agent's own parser so client limits, content type and frequencies are
 * its defaults unless given; nodesPerConnection (default 1, as real agents) lets k nodes share one
 * client (one HTTP/2 connection, k times the rate limits). The process exits when the parent
 * goes away.
 */
import { tmpdir } from 'node:os';
import tls from 'node:tls';
import { setMaxListeners } from 'node:events';
import { pino } from 'pino';
import { loadCoreconfig } from '../../src/client/coreconfig.js';
import { parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { readHostFacts } from '../../src/daemons/nodeagent/host-facts.js';
import { nodeResources } from '../../src/daemons/nodeagent/node-resources.js';
import { FakeRuntime } from '../../src/daemons/nodeagent/runtime/fake/fake-runtime.js';
import { SimStats, SimulatedNode, TimedRestClient } from './simulated-node.js';

export type SimRequest = { type: 'scale'; n: number; spreadMs: number } | { type: 'stats' } | { type: 'stop' };
export interface SimStatsReply {
  type: 'stats';
  nodes: number;
  registered: number;
  leaseOk: number; leaseFail: number; statusPosts: number; statusFail: number; otherWrites: number;
  leaseLatency: number[];
  loopDelayP99Ms: number; loopDelayMaxMs: number;
  rssMb: number;
}

function nodeName(i: number): string { return `fake-node-${String(i).padStart(5, '0')}`; }

/**
 * Every simulated node connects with the same CA, certificate and key; a real agent builds its
 * TLS context once in its own process, but thousands of nodes in this one would rebuild it per
 * connection (a few ms of CPU each, the biggest cost of a ramp). Reuse one context per
 * (ca, cert, key) — what an https.Agent does — so the simulator measures the API server, not
 * its own handshakes.
 */
function shareTlsContexts(): void {
  const original = tls.createSecureContext;
  const cache = new WeakMap<object, tls.SecureContext>();
  tls.createSecureContext = (options?: tls.SecureContextOptions): tls.SecureContext => {
    const key = options?.key;
    if (!key || typeof key !== 'object' || Array.isArray(key)) return original(options);
    const hit = cache.get(key);
    if (hit) return hit;
    const ctx = original(options);
    cache.set(key, ctx);
    return ctx;
  };
}

async function main(): Promise<void> {
  shareTlsContexts();
  const { coreconfig, agentArgs, nodesPerConnection } = JSON.parse(process.argv[2] ?? '{}') as { coreconfig: string; agentArgs: string[]; nodesPerConnection?: number };
  const perConn = Math.max(1, nodesPerConnection ?? 1);
  const { config } = parseNodeagentArgs(agentArgs);
  const connection = await loadCoreconfig({ path: coreconfig });
  const host = await readHostFacts({ hostnameOverride: 'fake', nodeIp: '127.0.0.1', rootDir: tmpdir() });
  const resources = nodeResources(host, {
    maxPods: config.maxPods, podsPerCore: config.podsPerCore, coreReserved: config.coreReserved, systemReserved: config.systemReserved,
    evictionHard: config.evictionHard, ignoreEviction: config.experimentalAllocatableIgnoreEviction,
  });
  const runtime = new FakeRuntime({ nodeIp: '127.0.0.1' });
  const stats = new SimStats();
  // The agent's client settings; a client shared by k nodes gets k times the rate limits.
  const clients: TimedRestClient[] = [];
  const clientFor = (i: number): TimedRestClient => {
    const k = Math.floor(i / perConn);
    clients[k] ??= new TimedRestClient({
      connection, contentType: config.coreApiContentType, qps: config.coreApiQps * perConn, burst: config.coreApiBurst * perConn,
      userAgent: perConn === 1 ? `nodeagent/${nodeName(i)}` : 'nodeagent/simulated', log,
    }, stats);
    return clients[k] as TimedRestClient;
  };
  // Event-loop lag: how late a 100 ms interval fires (a late simulator would delay heartbeats).
  let lagMax = 0;
  let lags: number[] = [];
  let lastTick = performance.now();
  const lagTimer = setInterval(() => {
    const now = performance.now();
    const lag = Math.max(0, now - lastTick - 100);
    lastTick = now;
    lags.push(lag);
    if (lag > lagMax) lagMax = lag;
  }, 100);
  const nodes: SimulatedNode[] = [];
  let planned = 0;
  const log = pino({ level: 'silent' });
  const ac = new AbortController();
  const controllers: AbortController[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const send = (m: object): void => { if (process.connected) process.send?.(m); };

  const stop = async (): Promise<void> => {
    ac.abort();
    for (const c of controllers) c.abort();
    for (const t of timers) clearTimeout(t);
    await Promise.allSettled(nodes.map((n) => n.stop()));
    for (const c of clients) c?.close();
    clearInterval(lagTimer);
    await runtime.close();
  };
  process.on('disconnect', () => { void stop().finally(() => process.exit(0)); });

  process.on('message', (m: SimRequest) => {
    if (m.type === 'scale') {
      // Each node is built when its start time comes, so a big step does not block the loop.
      for (let i = planned; i < m.n; i++) {
        const t = setTimeout(() => {
          timers.delete(t);
          if (ac.signal.aborted) return;
          const node = new SimulatedNode({
            name: nodeName(i), ip: `10.${100 + Math.floor(i / 65536)}.${Math.floor(i / 256) % 256}.${i % 256}`, client: clientFor(i),
            updateFrequencyMs: config.nodeStatusUpdateFrequency, host, resources, runtime, podWatch: true, log,
          });
          nodes.push(node);
          // One signal per node, as each real agent has its own: thousands of listeners on one
          // shared AbortSignal would make every addEventListener scan them all.
          const nodeAc = new AbortController();
          setMaxListeners(0, nodeAc.signal); // as main.ts does for the agent's signal
          controllers.push(nodeAc);
          node.start(nodeAc.signal);
        }, Math.random() * m.spreadMs);
        timers.add(t);
      }
      planned = Math.max(planned, m.n);
      send({ type: 'scaled', n: planned });
    } else if (m.type === 'stats') {
      const sorted = lags.sort((a, b) => a - b);
      const reply: SimStatsReply = {
        type: 'stats', nodes: nodes.length, registered: nodes.filter((n) => n.registered).length, ...stats.take(),
        loopDelayP99Ms: sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? 0, loopDelayMaxMs: lagMax, rssMb: process.memoryUsage().rss / 2 ** 20,
      };
      lags = [];
      lagMax = 0;
      send(reply);
    } else if (m.type === 'stop') {
      void stop().then(() => { send({ type: 'stopped' }); process.disconnect?.(); process.exit(0); });
    }
  });
  send({ type: 'ready' });
}

await main();
