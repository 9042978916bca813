/** The scores the scheduler adds up (each times its weight). */
import { balancedAllocation } from './balanced-allocation.js';
import { leastAllocated } from './least-allocated.js';
import { nodeAffinityPreferred } from './node-affinity-preferred.js';
import { ownerSpread } from './owner-spread.js';
import type { Score } from './score.js';
import { taintPreferNoSchedule } from './taint-prefer-no-schedule.js';

export type { Score } from './score.js';

export const DEFAULT_SCORES: readonly Score[] = [leastAllocated, balancedAllocation, ownerSpread, nodeAffinityPreferred, taintPreferNoSchedule];
