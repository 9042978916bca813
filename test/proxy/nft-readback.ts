/** Reads our table back with `nft -j list table` into plain data the tests compare. */
import { execFileSync } from 'node:child_process';

export interface TableView {
  exists: boolean;
  chains: Set<string>;
  sets: Map<string, { timeout?: number; flags?: string[] }>;
  /** map name -> "10.0.0.1 . tcp . 80" -> "goto svc_..." | "drop" */
  maps: Map<string, Map<string, string>>;
  /** chain -> its rules' expressions (JSON) */
  rules: Map<string, unknown[][]>;
}

type Json = Record<string, unknown>;

function keyText(k: unknown): string {
  if (k && typeof k === 'object' && 'concat' in (k as Json)) return ((k as { concat: unknown[] }).concat).map(String).join(' . ');
  return String(k);
}

function verdictText(v: unknown): string {
  const o = v as Json;
  if ('goto' in o) return `goto ${(o['goto'] as { target: string }).target}`;
  if ('jump' in o) return `jump ${(o['jump'] as { target: string }).target}`;
  return Object.keys(o)[0] ?? '?';
}

export function readTable(exec: readonly string[], table = 'corectl-proxy', family: 'ip' | 'ip6' = 'ip'): TableView {
  const view: TableView = { exists: false, chains: new Set(), sets: new Map(), maps: new Map(), rules: new Map() };
  let text: string;
  try {
    text = execFileSync(exec[0] as string, [...exec.slice(1), 'nft', '-j', 'list', 'table', family, table], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return view;
  }
  view.exists = true;
  for (const item of (JSON.parse(text) as { nftables: Json[] }).nftables) {
    if (item['chain']) view.chains.add((item['chain'] as { name: string }).name);
    if (item['set']) {
      const s = item['set'] as { name: string; timeout?: number; flags?: string[] };
      view.sets.set(s.name, { ...(s.timeout !== undefined ? { timeout: s.timeout } : {}), ...(s.flags ? { flags: s.flags } : {}) });
    }
    if (item['map']) {
      const m = item['map'] as { name: string; elem?: Array<[unknown, unknown]> };
      view.maps.set(m.name, new Map((m.elem ?? []).map(([k, v]) => [keyText(k), verdictText(v)])));
    }
    if (item['rule']) {
      const r = item['rule'] as { chain: string; expr: unknown[] };
      const list = view.rules.get(r.chain) ?? [];
      list.push(r.expr);
      view.rules.set(r.chain, list);
    }
  }
  return view;
}

/** The endpoints a chain's numgen vmap (or single goto) picks from: "ip:port" sorted. */
export function pickedEndpoints(view: TableView, chain: string): string[] {
  const out: string[] = [];
  for (const expr of view.rules.get(chain) ?? []) {
    const text = JSON.stringify(expr);
    if (text.includes('"numgen"') || (expr.length === 1 && text.includes('"goto"'))) {
      for (const m of text.matchAll(/"target":"sep_[^"]*__([0-9.]+)_(\d+)"/g)) out.push(`${m[1]}:${m[2]}`);
    }
  }
  return out.sort();
}
