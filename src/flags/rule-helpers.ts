/** Building blocks for cross-option rules shared by several daemons. */
import type { CrossRule } from './parser.js';
import { camelCase } from './option-spec.js';

interface WithGates {
  featureGates: Record<string, boolean>;
}

/** An explicitly given option requires a feature gate to be on. */
export function needsGate<C extends WithGates>(option: string, gate: string): CrossRule<C> {
  return {
    option,
    check: (c, ctx) => (ctx.explicit.has(option) && c.featureGates[gate] !== true
      ? `--${option} requires feature gate ${gate} (add --feature-gates=${gate}=true)`
      : undefined),
  };
}

function numberOf(config: object, option: string): number {
  return (config as Record<string, unknown>)[camelCase(option)] as number;
}

/** A numeric option must lie in [min, max]. */
export function inRange<C extends object>(option: string, min: number, max: number): CrossRule<C> {
  return {
    option,
    check: (c) => {
      const v = numberOf(c, option);
      return v >= min && v <= max ? undefined : `--${option} must be in [${min},${max}], got ${v}`;
    },
  };
}

/** Leader election: the renew deadline may not exceed the lease duration. */
export function leaderElectionTimes<C extends { leaderElectLeaseDuration: number; leaderElectRenewDeadline: number }>(): CrossRule<C> {
  return {
    option: 'leader-elect-renew-deadline',
    check: (c) => (c.leaderElectRenewDeadline > c.leaderElectLeaseDuration
      ? '--leader-elect-renew-deadline must not exceed --leader-elect-lease-duration'
      : undefined),
  };
}
