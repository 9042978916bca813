/**
 * Copies of the extension servers' OpenAPI documents, as Kubernetes' aggregator keeps them: for
 * each available APIService, the backend's /openapi/v2 paths under /apis/<group>/<version> with
 * all its definitions, and its /openapi/v3 document of `apis/<group>/<version>`. A backend
 * without one of them simply adds nothing. `generation` moves when any copy changed, so the
 * API server's OpenAPI handler rebuilds its documents only then.
 */
import type * as https from 'node:https';
import type { ExternalOpenApi } from '../rest/openapi-handler.js';
import type { BackendTarget, IdentityHeaderNames } from './backend.js';
import { backendGet } from './backend-get.js';

type Obj = Record<string, unknown>;
interface Copy { key: string; text: string; v2?: { paths: Obj; definitions: Obj }; v3?: Buffer }

export class OpenApiCopies implements ExternalOpenApi {
  private readonly copies = new Map<string, Copy>();
  private gen = 0;

  generation(): number { return this.gen; }

  v2(): { paths: Obj; definitions: Obj }[] {
    return [...this.copies.values()].flatMap((c) => (c.v2 ? [c.v2] : []));
  }

  v3(): Map<string, Buffer> {
    const out = new Map<string, Buffer>();
    for (const c of this.copies.values()) if (c.v3) out.set(c.key, c.v3);
    return out;
  }

  /** Fetches the documents of APIService `name` (group/version) from its backend. */
  async refresh(name: string, group: string, version: string, agent: https.Agent, target: BackendTarget, names: IdentityHeaderNames): Promise<void> {
    const copy: Copy = { key: `apis/${group}/${version}`, text: '' };
    const prefix = `/apis/${group}/${version}`;
    try {
      const doc = JSON.parse((await backendGet(agent, target, '/openapi/v2', names)).toString('utf8')) as { paths?: Obj; definitions?: Obj };
      const paths = Object.fromEntries(Object.entries(doc.paths ?? {}).filter(([p]) => p === prefix || p.startsWith(`${prefix}/`)));
      copy.v2 = { paths, definitions: doc.definitions ?? {} };
    } catch { /* no v2 document */ }
    try {
      const index = JSON.parse((await backendGet(agent, target, '/openapi/v3', names)).toString('utf8')) as { paths?: Record<string, { serverRelativeURL?: string }> };
      const url = index.paths?.[`apis/${group}/${version}`]?.serverRelativeURL;
      if (url) copy.v3 = await backendGet(agent, target, url, names);
    } catch { /* no v3 document */ }
    copy.text = JSON.stringify(copy.v2 ?? null) + (copy.v3?.toString('utf8') ?? '');
    const had = this.copies.get(name);
    if (had && had.text === copy.text) return;
    this.copies.set(name, copy);
    this.gen++;
  }

  forget(name: string): void {
    if (this.copies.delete(name)) this.gen++;
  }
}
