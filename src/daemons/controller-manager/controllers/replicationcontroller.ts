/**
 * The replication controller controller: the replica set loop (replicaset.ts) applied to
 * core/v1 ReplicationControllers, whose selector is a plain label map.
 */
import { selectorFromSet } from '../../../api/meta/label-selector.js';
import type { Controller } from '../controller-registry.js';
import { ReplicaController, type ReplicaKind } from './replicaset.js';

export const REPLICATION_CONTROLLER_KIND: ReplicaKind = {
  controllerName: 'replicationcontroller',
  component: 'replication-controller',
  apiVersion: 'v1',
  kind: 'ReplicationController',
  ref: { group: '', version: 'v1', resource: 'replicationcontrollers' },
  selector(obj) {
    const sel = (obj.spec as Record<string, unknown> | undefined)?.selector as Record<string, string> | undefined;
    // An empty selector matches nothing (validation defaults it from the template labels).
    if (!sel || Object.keys(sel).length === 0) return undefined;
    const s = selectorFromSet(sel);
    return (labels) => s.matches(labels);
  },
  workers: (ctx) => ctx.config.concurrentRcSyncs,
};

export function newReplicationControllerController(): Controller {
  return new ReplicaController(REPLICATION_CONTROLLER_KIND);
}
