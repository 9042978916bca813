/**
 * CORS, as Kubernetes' generic server does it with --cors-allowed-origins (regular expressions,
 * any of which may match anywhere in the Origin header; an empty list leaves CORS off):
 *  - a request with an allowed Origin gets Access-Control-Allow-Origin (that origin), the
 *    allowed methods and headers, Date exposed, and credentials allowed;
 *  - a preflight (OPTIONS) from an allowed origin is answered 204 here, before authentication;
 *  - no Origin, or one no pattern matches: the request passes on untouched (the browser then
 *    refuses the answer).
 */
import type { Exchange, Filter } from './filter.js';

const ALLOW_METHODS = 'POST, GET, OPTIONS, PUT, DELETE, PATCH';
const ALLOW_HEADERS = 'Content-Type, Content-Length, Accept-Encoding, X-CSRF-Token, Authorization, X-Requested-With, If-Modified-Since';
const EXPOSE_HEADERS = 'Date';

/** Compiles the patterns; throws naming the first that is not a regular expression. */
export function corsPatterns(origins: readonly string[]): RegExp[] {
  return origins.map((o) => {
    try {
      return new RegExp(o);
    } catch (e) {
      throw new Error(`invalid CORS allowed origin "${o}": ${(e as Error).message}`, { cause: e });
    }
  });
}

/** The filter; undefined when no origin is allowed (CORS off, nothing to run). */
export function cors(patterns: readonly RegExp[]): Filter | undefined {
  if (patterns.length === 0) return undefined;
  return {
    name: 'cors',
    run(x: Exchange, next: () => Promise<void>): Promise<void> {
      const raw = x.req.headers['origin'];
      const origin = Array.isArray(raw) ? raw[0] : raw;
      const res = x.res;
      if (!origin || !res || !patterns.some((p) => p.test(origin))) return next();
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-methods', ALLOW_METHODS);
      res.setHeader('access-control-allow-headers', ALLOW_HEADERS);
      res.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
      res.setHeader('access-control-allow-credentials', 'true');
      if (x.req.method === 'OPTIONS') {
        res.writeHead(204);
        res.end();
        return Promise.resolve();
      }
      return next();
    },
  };
}
