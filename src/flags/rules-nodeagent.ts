/** Cross-option rules of the node agent. */
import type { CrossRule } from './parser.js';
import type { NodeagentConfig } from './nodeagent.js';
import { inRange, needsGate } from './rule-helpers.js';

export const NODEAGENT_RULES: readonly CrossRule<NodeagentConfig>[] = [
  needsGate('config', 'NodeagentConfigFile'),
  needsGate('dynamic-config-dir', 'DynamicNodeagentConfig'),
  inRange('oom-score-adj', -1000, 1000),
  inRange('iptables-drop-bit', 0, 31),
  inRange('iptables-masquerade-bit', 0, 31),
  inRange('image-gc-high-threshold', 0, 100),
  inRange('image-gc-low-threshold', 0, 100),
  {
    option: 'image-gc-high-threshold',
    check: (c) => (c.imageGcHighThreshold < c.imageGcLowThreshold
      ? `--image-gc-high-threshold (${c.imageGcHighThreshold}) must not be below --image-gc-low-threshold (${c.imageGcLowThreshold})`
      : undefined),
  },
  {
    option: 'runonce',
    check: (c) => (c.runonce && c.enableServer
      ? '--runonce cannot be combined with --enable-server; add --enable-server=false'
      : undefined),
  },
  {
    option: 'eviction-soft-grace-period',
    check: (c) => {
      const missing = Object.keys(c.evictionSoft).find((signal) => !(signal in c.evictionSoftGracePeriod));
      return missing === undefined ? undefined : `--eviction-soft-grace-period needs a grace period for soft threshold "${missing}"`;
    },
  },
  {
    option: 'enforce-node-allocatable',
    check: (c) => {
      if (c.enforceNodeAllocatable.includes('system-reserved') && c.systemReservedCgroup === '') {
        return '--enforce-node-allocatable=system-reserved requires --system-reserved-cgroup';
      }
      if (c.enforceNodeAllocatable.includes('core-reserved') && c.coreReservedCgroup === '') {
        return '--enforce-node-allocatable=core-reserved requires --core-reserved-cgroup';
      }
      return undefined;
    },
  },
];
