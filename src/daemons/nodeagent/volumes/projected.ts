/**
 * Projected volumes: one directory assembled from several sources — serviceAccountToken,
 * configMap, secret and downwardAPI (the last three read as volumes.ts reads them) — written
 * with the volume's defaultMode (item modes win), each file atomically (atomic-files.ts).
 *
 * A serviceAccountToken source gets a TokenRequest for the pod's service account, bound to the
 * pod, for its audience (none: the API audiences) and expirationSeconds (default 3600). Like the
 * kubelet's token manager, a token is refreshed once 80 % of its lifetime has passed: the whole
 * volume is rendered again and rewritten. A failed refresh retries with backoff (10 s doubling,
 * at most 5 min) while the old token is still valid. Refreshing stops when the volume directory
 * is gone (the pod was torn down) or the agent stops (`signal`).
 *
 * Contract: `setUp` throws (VolumeError) when a source cannot be read or no token can be had,
 * so the pod worker retries; refreshes run in the background and never throw.
 */
import { existsSync } from 'node:fs';
import { pino, type Logger } from 'pino';
import { isApiError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import type { Dict, Pod } from '../pod-types.js';
import { VolumePathError, writeVolumeFiles } from './atomic-files.js';
import { downwardFiles, objectFiles, VolumeError, type FileEntry, type ProjectedVolumeHandler, type VolumeContext } from './volumes.js';

export interface IssuedToken {
  readonly token: string;
  /** Epoch milliseconds. */
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export interface TokenRequestSpec {
  readonly namespace: string;
  readonly serviceAccount: string;
  readonly audience?: string;
  readonly expirationSeconds: number;
  readonly pod: { readonly name: string; readonly uid: string };
}

/** Asks the API server for a token; undefined when it does not serve TokenRequest. */
export type TokenRequester = (spec: TokenRequestSpec, signal?: AbortSignal) => Promise<IssuedToken | undefined>;

type CreateFn = (ref: { group: string; version: string; resource: string; namespace?: string }, obj: KubeObject, opts: { name: string; subresource: string; signal?: AbortSignal }) => Promise<KubeObject>;

/** The issued-at time of a JWT, when it says (else undefined). */
function jwtIssuedAt(token: string): number | undefined {
  try {
    const c = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { iat?: unknown };
    return typeof c.iat === 'number' ? c.iat * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** TokenRequest through the agent's client (pass `client.create.bind(client)`). */
export function clientTokenRequester(create: CreateFn, now: () => number = Date.now): TokenRequester {
  return async (s, signal) => {
    const asked = now();
    let tr: KubeObject & { status?: { token?: string; expirationTimestamp?: string } };
    try {
      tr = await create({ group: '', version: 'v1', resource: 'serviceaccounts', namespace: s.namespace }, {
        apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest',
        spec: {
          audiences: s.audience ? [s.audience] : [], expirationSeconds: s.expirationSeconds,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: s.pod.name, uid: s.pod.uid },
        },
      }, { name: s.serviceAccount, subresource: 'token', ...(signal ? { signal } : {}) });
    } catch (e) {
      // 404 about the account itself is a real error; any other 404/405 means no TokenRequest.
      if (isApiError(e) && (e.code === 405 || (e.code === 404 && e.status.details?.name !== s.serviceAccount))) return undefined;
      throw e;
    }
    const token = tr.status?.token;
    if (!token) throw new Error('TokenRequest answered without a token');
    const exp = Date.parse(tr.status?.expirationTimestamp ?? '');
    const issuedAt = jwtIssuedAt(token) ?? asked;
    return { token, issuedAt, expiresAt: Number.isNaN(exp) ? asked + s.expirationSeconds * 1000 : exp };
  };
}

export interface ProjectedVolumesOptions {
  readonly requester?: TokenRequester;
  /** The agent's lifetime: stops every refresh timer. */
  readonly signal: AbortSignal;
  readonly log?: Logger;
  readonly now?: () => number;
  /** Fraction of a token's lifetime after which it is refreshed. @default 0.8 */
  readonly refreshFraction?: number;
  /** Retry delays of a failed refresh. @default 10 s .. 5 min */
  readonly retryInitialMs?: number;
  readonly retryMaxMs?: number;
}

interface Tracked {
  readonly pod: Pod;
  readonly source: Dict;
  readonly dir: string;
  readonly ctx: VolumeContext;
  timer?: NodeJS.Timeout;
  retryMs: number;
}

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

export class ProjectedVolumes implements ProjectedVolumeHandler {
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly tracked = new Map<string, Tracked>();
  private warnedNoTokenRequest = false;

  constructor(private readonly o: ProjectedVolumesOptions) {
    this.log = o.log ?? pino({ level: 'silent' });
    this.now = o.now ?? Date.now;
    o.signal.addEventListener('abort', () => this.stopAll(), { once: true });
  }

  /** Volumes with a token source being kept fresh (tests). */
  get refreshing(): number { return this.tracked.size; }

  async setUp(pod: Pod, source: Dict, dir: string, ctx: VolumeContext): Promise<void> {
    const { refreshAt } = await this.write(pod, source, dir, ctx);
    const old = this.tracked.get(dir);
    if (old?.timer) clearTimeout(old.timer);
    this.tracked.delete(dir);
    if (refreshAt !== undefined && !this.o.signal.aborted) {
      const t: Tracked = { pod, source, dir, ctx, retryMs: this.o.retryInitialMs ?? 10_000 };
      this.tracked.set(dir, t);
      this.schedule(t, refreshAt - this.now());
    }
  }

  /** Renders and writes the volume; `refreshAt` is when its earliest token is due (epoch ms). */
  private async write(pod: Pod, source: Dict, dir: string, ctx: VolumeContext): Promise<{ refreshAt?: number; expiresAt?: number }> {
    const files: FileEntry[] = [];
    let refreshAt: number | undefined;
    let expiresAt: number | undefined;
    const fraction = this.o.refreshFraction ?? 0.8;
    for (const s of Array.isArray(source.sources) ? source.sources : []) {
      if (!isDict(s)) continue;
      if (isDict(s.configMap)) files.push(...await objectFiles('configMap', s.configMap, pod, ctx));
      else if (isDict(s.secret)) files.push(...await objectFiles('secret', s.secret, pod, ctx));
      else if (isDict(s.downwardAPI)) files.push(...downwardFiles(s.downwardAPI, pod, ctx));
      else if (isDict(s.serviceAccountToken)) {
        const t = s.serviceAccountToken;
        const spec: TokenRequestSpec = {
          namespace: pod.metadata?.namespace ?? 'default', serviceAccount: pod.spec?.serviceAccountName || 'default',
          ...(typeof t.audience === 'string' && t.audience ? { audience: t.audience } : {}),
          expirationSeconds: typeof t.expirationSeconds === 'number' ? t.expirationSeconds : 3600,
          pod: { name: pod.metadata?.name ?? '', uid: pod.metadata?.uid ?? '' },
        };
        const issued = this.o.requester ? await this.o.requester(spec, this.o.signal) : undefined;
        if (!issued) {
          if (!this.warnedNoTokenRequest) this.log.warn({ pod: pod.metadata?.name }, 'service-account token not projected: the API server offers no TokenRequest');
          this.warnedNoTokenRequest = true;
          continue;
        }
        files.push({ path: String(t.path ?? 'token'), data: Buffer.from(issued.token) });
        const due = issued.issuedAt + (issued.expiresAt - issued.issuedAt) * fraction;
        refreshAt = Math.min(refreshAt ?? Infinity, due);
        expiresAt = Math.min(expiresAt ?? Infinity, issued.expiresAt);
      }
    }
    const defaultMode = typeof source.defaultMode === 'number' ? source.defaultMode : 0o644;
    try {
      await writeVolumeFiles(dir, files, defaultMode);
    } catch (e) {
      if (e instanceof VolumePathError) throw new VolumeError(e.message);
      throw e;
    }
    return { ...(refreshAt !== undefined ? { refreshAt } : {}), ...(expiresAt !== undefined ? { expiresAt } : {}) };
  }

  private schedule(t: Tracked, delayMs: number): void {
    // setTimeout's limit is about 24.8 days; a longer wait just re-arms.
    const wait = Math.max(0, Math.min(delayMs, 2 ** 31 - 1));
    t.timer = setTimeout(() => { void this.refresh(t); }, wait);
  }

  private async refresh(t: Tracked): Promise<void> {
    if (this.tracked.get(t.dir) !== t || this.o.signal.aborted) return;
    if (!existsSync(t.dir)) { this.tracked.delete(t.dir); return; }
    try {
      const { refreshAt } = await this.write(t.pod, t.source, t.dir, t.ctx);
      if (this.tracked.get(t.dir) !== t || this.o.signal.aborted) return;
      t.retryMs = this.o.retryInitialMs ?? 10_000;
      if (refreshAt === undefined) { this.tracked.delete(t.dir); return; }
      this.log.debug({ pod: t.pod.metadata?.name, dir: t.dir }, 'projected service-account token refreshed');
      this.schedule(t, refreshAt - this.now());
    } catch (e) {
      if (this.tracked.get(t.dir) !== t || this.o.signal.aborted) return;
      this.log.warn({ pod: t.pod.metadata?.name, err: (e as Error).message, retryMs: t.retryMs }, 'projected volume refresh failed; retrying');
      this.schedule(t, t.retryMs);
      t.retryMs = Math.min(t.retryMs * 2, this.o.retryMaxMs ?? 300_000);
    }
  }

  private stopAll(): void {
    for (const t of this.tracked.values()) if (t.timer) clearTimeout(t.timer);
    this.tracked.clear();
  }
}
