/**
 * Scrapes every node agent once per --metric-resolution: GET https://<node address>:<agent
 * port>/metrics/resource (kubelet's resource metrics), or /stats/summary from an agent that
 * does not serve the former (404), with the metrics server's own client credentials. Nodes are
 * reached at the first address of --kubelet-preferred-address-types they have, on the port
 * they publish in status.daemonEndpoints. A failed node keeps its last points.
 */
import * as https from 'node:https';
import type { Logger } from 'pino';
import type { KubeObject } from '../../api/resources/types.js';
import type { RestClient } from '../../client/rest-client.js';
import { snapshotFromResourceMetrics, snapshotFromSummary, type NodeSnapshot } from './resource-metrics.js';
import type { MetricsStore } from './metrics-store.js';

export interface AgentTls { ca?: Buffer; cert?: Buffer; key?: Buffer; token?: string; insecure: boolean }

export interface ScraperOptions {
  client: RestClient;
  store: MetricsStore;
  tls: AgentTls;
  addressTypes: readonly string[];
  log: Logger;
  /** Per-node request timeout (default 10 s). */
  timeoutMs?: number;
}

type Obj = Record<string, unknown>;

/** Where a node's agent answers: its preferred address and its published port. */
export function agentAddress(node: KubeObject, addressTypes: readonly string[]): { host: string; port: number } | undefined {
  const status = (node.status ?? {}) as Obj;
  const addresses = (Array.isArray(status.addresses) ? status.addresses : []) as { type?: string; address?: string }[];
  const port = Number(((status.daemonEndpoints as Obj | undefined)?.kubeletEndpoint as Obj | undefined)?.Port ?? 10250) || 10250;
  for (const t of addressTypes) {
    const a = addresses.find((x) => x.type === t && x.address);
    if (a) return { host: a.address!, port };
  }
  return undefined;
}

function get(url: string, tls: AgentTls, accept: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, {
      rejectUnauthorized: !tls.insecure,
      ...(tls.ca ? { ca: tls.ca } : {}), ...(tls.cert && tls.key ? { cert: tls.cert, key: tls.key } : {}),
      headers: { accept, ...(tls.token ? { authorization: `Bearer ${tls.token}` } : {}) },
      timeout: timeoutMs,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs / 1000}s`)));
    req.on('error', reject);
  });
}

/** One node's snapshot from its agent. */
export async function scrapeNode(base: string, tls: AgentTls, timeoutMs = 10_000): Promise<NodeSnapshot> {
  const r = await get(`${base}/metrics/resource`, tls, 'text/plain', timeoutMs);
  if (r.status === 200) return snapshotFromResourceMetrics(r.body, Date.now());
  if (r.status !== 404) throw new Error(`GET ${base}/metrics/resource: ${r.status}`);
  const s = await get(`${base}/stats/summary`, tls, 'application/json', timeoutMs);
  if (s.status !== 200) throw new Error(`GET ${base}/stats/summary: ${s.status}`);
  return snapshotFromSummary(JSON.parse(s.body));
}

export class Scraper {
  /** The nodes and pods of the last scrape (their labels select metrics; gone ones have none). */
  readonly nodes = new Map<string, KubeObject>();
  readonly pods = new Map<string, KubeObject>();
  /** Set once the first scrape has finished. */
  scraped = false;

  constructor(private readonly o: ScraperOptions) {}

  /** Scrapes every node once; resolves when all have answered or failed. */
  async scrapeAll(signal?: AbortSignal): Promise<void> {
    const opts = signal ? { signal } : {};
    const [list, pods] = await Promise.all([
      this.o.client.list({ group: '', version: 'v1', resource: 'nodes' }, opts),
      this.o.client.list({ group: '', version: 'v1', resource: 'pods' }, opts),
    ]);
    this.nodes.clear();
    for (const n of list.items) this.nodes.set(n.metadata?.name ?? '', n);
    this.pods.clear();
    for (const p of pods.items) this.pods.set(`${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`, p);
    const names = new Set<string>();
    await Promise.all(list.items.map(async (node) => {
      const name = node.metadata?.name ?? '';
      names.add(name);
      const at = agentAddress(node, this.o.addressTypes);
      if (!at) { this.o.log.debug({ node: name }, 'node has no usable address'); return; }
      const host = at.host.includes(':') ? `[${at.host}]` : at.host;
      try {
        this.o.store.record(name, await scrapeNode(`https://${host}:${at.port}`, this.o.tls, this.o.timeoutMs));
      } catch (e) {
        this.o.log.warn({ node: name, err: (e as Error).message }, 'cannot scrape node');
      }
    }));
    this.o.store.retain(names);
    this.scraped = true;
  }
}
