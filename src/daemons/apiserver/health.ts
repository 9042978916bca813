/**
 * /healthz, /livez and /readyz. Each is a list of named checks: `GET /readyz` answers 200 "ok"
 * when all pass, else 500 with the list; `?verbose` always lists them (`[+]ping ok`);
 * `?exclude=name` (repeatable) skips one; `GET /readyz/<name>` runs one check. Failure reasons
 * are logged, never shown to clients.
 */
import type { Logger } from 'pino';
import type { ApiResponse } from './context.js';

export interface HealthCheck {
  readonly name: string;
  /** Resolves when healthy; throws (or rejects) with the reason otherwise. */
  check(): Promise<void> | void;
}

export type HealthEndpoint = 'healthz' | 'livez' | 'readyz';

const CHECK_TIMEOUT_MS = 5000;

async function runCheck(c: HealthCheck): Promise<Error | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(() => c.check()),
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('check timed out')), CHECK_TIMEOUT_MS); }),
    ]);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  } finally {
    clearTimeout(timer);
  }
}

export class HealthChecks {
  private shuttingDown = false;
  private readonly lists: Record<HealthEndpoint, HealthCheck[]>;
  private readonly log: Logger | undefined;

  constructor(opts: { storage?: () => Promise<void>; log?: Logger; extra?: Partial<Record<HealthEndpoint, HealthCheck[]>> }) {
    this.log = opts.log;
    const ping: HealthCheck = { name: 'ping', check: () => undefined };
    const log: HealthCheck = { name: 'log', check: () => undefined };
    const storage: HealthCheck[] = opts.storage ? [{ name: 'storage', check: opts.storage }] : [];
    const shutdown: HealthCheck = {
      name: 'shutdown',
      check: () => { if (this.shuttingDown) throw new Error('the server is shutting down'); },
    };
    this.lists = {
      healthz: [ping, log, ...storage, ...(opts.extra?.healthz ?? [])],
      livez: [ping, log, ...(opts.extra?.livez ?? [])],
      readyz: [ping, log, ...storage, shutdown, ...(opts.extra?.readyz ?? [])],
    };
  }

  /** Adds a check to the given endpoints (a post-start hook's, registered once serving started). */
  add(check: HealthCheck, endpoints: readonly HealthEndpoint[]): void {
    for (const e of endpoints) this.lists[e].push(check);
  }

  /** Whether every check of `endpoint` passes now (what a GET would answer, without HTTP). */
  async passing(endpoint: HealthEndpoint): Promise<boolean> {
    const results = await Promise.all(this.lists[endpoint].map((c) => runCheck(c)));
    return results.every((r) => r === undefined);
  }

  /** From now on /readyz fails, so load balancers drain this server. */
  markShuttingDown(): void { this.shuttingDown = true; }

  /** Whether `path` is one of ours (/healthz, /livez/ping ...). */
  handles(path: string): boolean {
    return /^\/(healthz|livez|readyz)(\/.*)?$/.test(path);
  }

  /** Serves a health path; `path` must satisfy `handles`. */
  async serve(method: string, path: string, query: URLSearchParams, res: ApiResponse): Promise<void> {
    // A check's name may hold slashes (poststarthook/rbac/bootstrap-roles).
    const m = /^\/(healthz|livez|readyz)(?:\/(.+?))?\/?$/.exec(path);
    const endpoint = (m?.[1] ?? 'healthz') as HealthEndpoint;
    const single = m?.[2];
    const checks = this.lists[endpoint];
    if (method !== 'GET' && method !== 'HEAD') {
      text(res, 405, 'method not allowed\n');
      return;
    }
    if (single !== undefined) {
      const c = checks.find((x) => x.name === single);
      if (!c) { text(res, 404, '404 page not found\n'); return; }
      const err = await runCheck(c);
      if (err) {
        this.log?.warn({ check: c.name, endpoint, err: err.message }, 'health check failed');
        text(res, 500, `internal server error: ${err.message}\n`);
      } else {
        text(res, 200, 'ok');
      }
      return;
    }
    const excluded = new Set(query.getAll('exclude'));
    const lines: string[] = [];
    let failed = false;
    const results = await Promise.all(checks.map(async (c) => excluded.has(c.name) ? 'excluded' : runCheck(c)));
    checks.forEach((c, i) => {
      const r = results[i];
      if (r === 'excluded') lines.push(`[+]${c.name} excluded: ok`);
      else if (r) {
        failed = true;
        this.log?.warn({ check: c.name, endpoint, err: r.message }, 'health check failed');
        lines.push(`[-]${c.name} failed: reason withheld`);
      } else lines.push(`[+]${c.name} ok`);
    });
    for (const name of excluded) {
      if (!checks.some((c) => c.name === name)) lines.push(`warn: some health checks cannot be excluded: no matches for "${name}"`);
    }
    if (failed) {
      text(res, 500, `${lines.join('\n')}\n${endpoint} check failed\n`);
    } else if (query.has('verbose')) {
      text(res, 200, `${lines.join('\n')}\n${endpoint} check passed\n`);
    } else {
      text(res, 200, 'ok');
    }
  }
}

function text(res: ApiResponse, code: number, body: string): void {
  res.statusCode = code;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'no-cache, private');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
