/**
 * The request target (`req.url`: path and query) as the chain reads it: the path exactly as the
 * WHATWG URL parser would give it, and the query parameters.
 *
 * Most targets are plain (`/api/v1/namespaces/ns/pods/p?x=y`): nothing for the URL parser to
 * normalize, so the path is the text before `?` and the query is parsed by URLSearchParams alone
 * — the same result as `new URL(target, base)` at a fraction of the cost. Anything the parser
 * would rewrite (percent escapes, dot segments, backslashes, `//`, fragments, characters it
 * escapes) takes the general path through `new URL`.
 */

export interface RequestTarget {
  readonly pathname: string;
  readonly searchParams: URLSearchParams;
}

/** 1: passes the URL parser unchanged in a path and a query; 2: in a query only ('?' and '%'). */
const PLAIN = (() => {
  const t = new Uint8Array(128);
  const both = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/";
  for (const c of both) t[c.charCodeAt(0)] = 1;
  t['?'.charCodeAt(0)] = 2;
  t['%'.charCodeAt(0)] = 2;
  return t;
})();

const BASE = 'https://apiserver.invalid';

/**
 * The index of the '?' ending a plain path (or the length when there is no query), or -1 when
 * the URL parser would rewrite something: a character outside PLAIN, '//' at the start, or a
 * '.'/'..' segment.
 */
function plainSplit(t: string): number {
  const n = t.length;
  if (n === 0 || t.charCodeAt(0) !== 47 || (n > 1 && t.charCodeAt(1) === 47)) return -1;
  let q = n;
  let segStart = 1;
  for (let i = 1; i < n; i++) {
    const c = t.charCodeAt(i);
    if (c === 63) { q = i; break; }
    if (c >= 128 || PLAIN[c] !== 1) return -1;
    if (c === 47) {
      if (isDotSegment(t, segStart, i)) return -1;
      segStart = i + 1;
    }
  }
  if (isDotSegment(t, segStart, q)) return -1;
  for (let i = q + 1; i < n; i++) {
    const c = t.charCodeAt(i);
    if (c >= 128 || PLAIN[c] === 0) return -1;
  }
  return q;
}

function isDotSegment(t: string, from: number, to: number): boolean {
  const len = to - from;
  return (len === 1 && t.charCodeAt(from) === 46) || (len === 2 && t.charCodeAt(from) === 46 && t.charCodeAt(from + 1) === 46);
}

/** Parses a request target; throws (as `new URL` does) when it cannot be parsed at all. */
export function parseRequestTarget(raw: string | undefined): RequestTarget {
  const target = raw || '/';
  const q = plainSplit(target);
  if (q >= 0) {
    return { pathname: q === target.length ? target : target.slice(0, q), searchParams: new URLSearchParams(q === target.length ? '' : target.slice(q + 1)) };
  }
  const url = new URL(target, BASE);
  return { pathname: url.pathname, searchParams: url.searchParams };
}
