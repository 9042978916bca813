/** Cross-option rules of the controller manager. */
import type { CrossRule } from './parser.js';
import type { ControllerManagerConfig } from './controller-manager.js';
import { leaderElectionTimes } from './rule-helpers.js';
import { canonicalCidr } from '../util/ip.js';

const needsAllocate = (option: 'cluster-cidr' | 'service-cluster-ip-range', key: 'clusterCidr' | 'serviceClusterIpRange'): CrossRule<ControllerManagerConfig> => ({
  option,
  check: (c) => {
    const v = c[key];
    if (v === '') return undefined;
    if (canonicalCidr(v) === undefined) return `invalid value "${v}" for --${option}: not a CIDR`;
    return c.allocateNodeCidrs ? undefined : `--${option} requires --allocate-node-cidrs=true`;
  },
});

export const CONTROLLER_MANAGER_RULES: readonly CrossRule<ControllerManagerConfig>[] = [
  leaderElectionTimes(),
  {
    option: 'attach-detach-reconcile-sync-period',
    check: (c) => (c.attachDetachReconcileSyncPeriod > 1000 ? undefined : '--attach-detach-reconcile-sync-period must be longer than 1s'),
  },
  needsAllocate('cluster-cidr', 'clusterCidr'),
  needsAllocate('service-cluster-ip-range', 'serviceClusterIpRange'),
];
