/**
 * A DaemonSet's template history in apps/v1 ControllerRevisions. Each revision is named
 * `<ds>-<hash>`, labelled `controller-revision-hash: <hash>`, controlled by the DaemonSet, and
 * holds in `data` the patch that restores the template (`{spec: {template: …, $patch: replace}}`)
 * with a revision number; the hash (of the template and status.collisionCount) is the label
 * stamped on the pods made from it.
 *
 * `current` finds the revision matching the live template (renumbering it newest when an old
 * template came back, dropping duplicates) or creates one. A name taken by a revision with
 * other data is a hash collision: status.collisionCount goes up and the sync is retried, which
 * changes the hash. `truncate` keeps spec.revisionHistoryLimit old revisions, never deleting
 * one a live pod still carries.
 *
 * Contract: writes go to the API server; cached objects are never modified.
 */
import type { Logger } from 'pino';
import { isApiError } from '../../../../api/meta/status.js';
import type { KubeObject } from '../../../../api/resources/types.js';
import { keyOf, type ResourceRef, type RestClient } from '../../deps.js';
import { canonicalJson, newControllerRef } from '../controller-utils.js';
import { podTemplateHash } from '../deployment/util.js';
import { REVISION_HASH_LABEL } from './placement.js';

type Dict = Record<string, unknown>;

export const REVISIONS: ResourceRef = { group: 'apps', version: 'v1', resource: 'controllerrevisions' };
export const DAEMONSETS: ResourceRef = { group: 'apps', version: 'v1', resource: 'daemonsets' };

function dsSpec(ds: KubeObject): Dict { return (ds.spec ?? {}) as Dict; }

export function collisionCountOf(ds: KubeObject): number | undefined {
  const c = ((ds.status ?? {}) as Dict).collisionCount;
  return typeof c === 'number' ? c : undefined;
}

/** The hash pods of the live template carry. */
export function templateHash(ds: KubeObject): string {
  return podTemplateHash(dsSpec(ds).template ?? {}, collisionCountOf(ds));
}

export function revisionData(ds: KubeObject): Dict {
  return { spec: { template: { ...structuredClone((dsSpec(ds).template ?? {}) as Dict), $patch: 'replace' } } };
}

export function revisionNumber(cr: KubeObject): number { return typeof cr.revision === 'number' ? cr.revision : 0; }

function byRevision(a: KubeObject, b: KubeObject): number {
  return revisionNumber(a) - revisionNumber(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

function sameData(cr: KubeObject, data: Dict): boolean { return canonicalJson(cr.data) === canonicalJson(data); }

export class CollisionError extends Error {}

export class RevisionHistory {
  constructor(private readonly client: RestClient, private readonly log: Logger) {}

  private ref(ds: KubeObject): ResourceRef { return { ...REVISIONS, namespace: ds.metadata?.namespace ?? '' }; }

  /** The revision of the live template (created when missing) and its hash. */
  async current(ds: KubeObject, owned: readonly KubeObject[]): Promise<{ revision: KubeObject; hash: string }> {
    const data = revisionData(ds);
    const sorted = [...owned].sort(byRevision);
    const max = sorted.length ? revisionNumber(sorted[sorted.length - 1] as KubeObject) : 0;
    const matching = sorted.filter((cr) => sameData(cr, data));
    if (matching.length) {
      let cur = matching[matching.length - 1] as KubeObject;
      for (const dup of matching.slice(0, -1)) await this.remove(ds, dup);
      if (revisionNumber(cur) < max) {
        cur = await this.client.update(this.ref(ds), { ...cur, revision: max + 1 });
      }
      return { revision: cur, hash: cur.metadata?.labels?.[REVISION_HASH_LABEL] ?? templateHash(ds) };
    }
    const hash = templateHash(ds);
    const name = `${ds.metadata?.name ?? ''}-${hash}`;
    const template = (dsSpec(ds).template ?? {}) as Dict;
    const labels = { ...(((template.metadata ?? {}) as Dict).labels as Record<string, string> | undefined ?? {}), [REVISION_HASH_LABEL]: hash };
    const cr: KubeObject = {
      apiVersion: 'apps/v1', kind: 'ControllerRevision',
      metadata: { name, namespace: ds.metadata?.namespace ?? '', labels, ownerReferences: [newControllerRef(ds, 'apps/v1', 'DaemonSet')] },
      data, revision: max + 1,
    };
    try {
      return { revision: await this.client.create(this.ref(ds), cr), hash };
    } catch (e) {
      if (!isApiError(e, 'AlreadyExists')) throw e;
    }
    const existing = await this.client.get(this.ref(ds), name);
    const mine = existing.metadata?.ownerReferences?.some((r) => r.controller && r.uid === ds.metadata?.uid);
    if (mine && sameData(existing, data)) return { revision: existing, hash };
    await this.bumpCollisionCount(ds);
    throw new CollisionError(`controller revision ${name} exists with other data; collisionCount raised`);
  }

  private async bumpCollisionCount(ds: KubeObject): Promise<void> {
    const ref = { ...DAEMONSETS, namespace: ds.metadata?.namespace ?? '' };
    const fresh = await this.client.get(ref, ds.metadata?.name ?? '');
    const status = { ...((fresh.status ?? {}) as Dict), collisionCount: (collisionCountOf(fresh) ?? 0) + 1 };
    await this.client.update(ref, { ...fresh, status }, { subresource: 'status' });
  }

  /** Deletes the oldest revisions beyond the history limit that no live pod uses. */
  async truncate(ds: KubeObject, owned: readonly KubeObject[], current: KubeObject, liveHashes: ReadonlySet<string>): Promise<void> {
    const limit = typeof dsSpec(ds).revisionHistoryLimit === 'number' ? dsSpec(ds).revisionHistoryLimit as number : 10;
    const old = owned.filter((cr) => cr.metadata?.uid !== current.metadata?.uid && cr.metadata?.name !== current.metadata?.name);
    const excess = old.length - limit;
    if (excess <= 0) return;
    const removable = old.filter((cr) => !liveHashes.has(cr.metadata?.labels?.[REVISION_HASH_LABEL] ?? '')).sort(byRevision);
    for (const cr of removable.slice(0, excess)) await this.remove(ds, cr);
  }

  private async remove(ds: KubeObject, cr: KubeObject): Promise<void> {
    try {
      await this.client.delete(this.ref(ds), cr.metadata?.name ?? '', { preconditions: { uid: cr.metadata?.uid ?? '' } });
      this.log.debug({ daemonset: keyOf(ds), revision: cr.metadata?.name }, 'deleted controller revision');
    } catch (e) {
      if (!(isApiError(e) && (e.code === 404 || e.code === 409))) throw e;
    }
  }
}
