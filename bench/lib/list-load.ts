/**
 * Whole-collection LISTs as a cluster sees them: the first list after the objects were written
 * (a fresh server: its code not yet optimized, no item serialized yet) reported on its own, then
 * lists with churn in between, so each list serves mostly remembered items plus some changed ones.
 * Each list gives two times: to the response headers (the server builds a LIST whole before it
 * answers, so this is its own time: the "server time" of perf-anchors.md) and to the last byte
 * (adds moving the body to this client over TLS).
 */
import type * as http2 from 'node:http2';
import { runLoad, send } from './h2-load.js';

export interface ListTimes {
  /** The first list: to headers and to the last byte, ms. */
  first: { headersMs: number; totalMs: number };
  /** The later lists, one entry each, ms. */
  headers: Float64Array;
  total: Float64Array;
  /** Body size of the last list. */
  bytes: number;
  /** Objects changed before each later list. */
  churn: number;
  /** The server's mean CPU per later list in ms (NaN without ListLoadOptions.cpu). */
  listCpuMs: number;
}

export interface ListLoadOptions {
  sessions: http2.ClientHttp2Session[];
  /** The collection, e.g. /api/v1/namespaces/bench/pods. */
  path: string;
  accept: string;
  /** Lists after the first. */
  lists: number;
  /** Names of the objects in the collection (churn patches some of them). */
  names: readonly string[];
  /** Objects changed before each later list (default 1 % of them). */
  churn?: number;
  /** Skip the first-list measurement (when an earlier call already made the first list). */
  skipFirst?: boolean;
  /** The server's CPU seconds so far (e.g. from /proc): lets listCpuMs leave the churn out. */
  cpu?: () => number;
  /** Sees the first list's body (e.g. to count its items). */
  onFirstBody?: (body: Buffer) => void;
}

const MERGE = { 'content-type': 'application/merge-patch+json', accept: 'application/json' };

/** Runs the lists; throws when a list or a churn patch fails. */
export async function measureLists(o: ListLoadOptions): Promise<ListTimes> {
  const s = o.sessions[0]!;
  const churn = o.churn ?? Math.max(1, Math.round(o.names.length / 100));
  const list = async (firstBody?: (body: Buffer) => void): Promise<{ headersMs: number; totalMs: number; bytes: number }> => {
    const t = performance.now();
    const res = await send(s, { path: o.path, headers: { accept: o.accept } }, 60_000);
    if (res.status !== 200) throw new Error(`list answered ${res.status}: ${res.body.toString().slice(0, 200)}`);
    firstBody?.(res.body);
    return { headersMs: res.headersMs, totalMs: performance.now() - t, bytes: res.body.length };
  };
  const first = o.skipFirst ? { headersMs: Number.NaN, totalMs: Number.NaN, bytes: 0 } : await list(o.onFirstBody);
  const headers = new Float64Array(o.lists);
  const total = new Float64Array(o.lists);
  let bytes = first.bytes;
  let at = 0;
  let cpuSeconds = 0;
  for (let k = 0; k < o.lists; k++) {
    const start = at;
    const r = await runLoad({
      sessions: o.sessions, concurrency: 16, durationMs: 60_000, maxOps: churn,
      request: (i) => ({
        path: `${o.path}/${o.names[(start + i) % o.names.length]}`, method: 'PATCH', headers: MERGE,
        body: JSON.stringify({ metadata: { labels: { churn: String(k) } } }),
      }),
    });
    if (r.errors) throw new Error(`churn patch failed: ${r.firstError ?? ''}`);
    at += churn;
    const c0 = o.cpu?.() ?? Number.NaN;
    const l = await list();
    cpuSeconds += (o.cpu?.() ?? Number.NaN) - c0;
    headers[k] = l.headersMs;
    total[k] = l.totalMs;
    bytes = l.bytes;
  }
  return { first: { headersMs: first.headersMs, totalMs: first.totalMs }, headers, total, bytes, churn, listCpuMs: (1000 * cpuSeconds) / o.lists };
}

/** One page's time and its place in its pass (0: the page without a continue token). */
export interface PageTimes {
  /** Per page, ms from the request to the last byte. */
  ms: number[];
  /** Per page, its position in its pass. */
  pos: number[];
  /** The request paths of the first pass (continue tokens included), in order. */
  firstPass: string[];
}

/**
 * Reads `collection` in pages of `limit`, `passes` times over, one page at a time; `beforePage`
 * runs before each page (e.g. a write elsewhere, so continued pages read an earlier revision).
 */
export async function pagePasses(session: http2.ClientHttp2Session, collection: string, o: { limit: number; passes: number; beforePage?: (pass: number, page: number) => Promise<void> }): Promise<PageTimes> {
  const out: PageTimes = { ms: [], pos: [], firstPass: [] };
  for (let pass = 0; pass < o.passes; pass++) {
    let cont = '';
    let pos = 0;
    do {
      await o.beforePage?.(pass, out.ms.length);
      const path = `${collection}?limit=${o.limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
      if (pass === 0) out.firstPass.push(path);
      const t = performance.now();
      const res = await send(session, { path, headers: { accept: 'application/json' } });
      out.ms.push(performance.now() - t);
      out.pos.push(pos++);
      if (res.status !== 200) throw new Error(`paged list answered ${res.status}`);
      cont = /"continue":"([^"]*)"/.exec(res.body.toString())?.[1] ?? '';
      // A guard against a continue token that never ends.
      if (pos > 100_000) throw new Error(`${collection}: more than 100 000 pages in one pass`);
    } while (cont);
  }
  return out;
}
