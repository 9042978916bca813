/** The filters in the order they run; a node's reasons come from the first that rejects it. */
import type { Filter } from './filter.js';
import { nodeAffinity } from './node-affinity.js';
import { nodePorts } from './node-ports.js';
import { nodeReady } from './node-ready.js';
import { nodeResourcesFit } from './node-resources-fit.js';
import { nodeUnschedulable } from './node-unschedulable.js';
import { taintToleration } from './taint-toleration.js';

export type { Filter } from './filter.js';

export const DEFAULT_FILTERS: readonly Filter[] = [nodeReady, nodeUnschedulable, taintToleration, nodeAffinity, nodePorts, nodeResourcesFit];
