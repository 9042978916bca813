/**
 * Our scheduler's options. The scheduler is not in the reference: it takes the controller
 * manager's connection, leader-election and serving options (with its own port) plus ours.
 */
import { G, HELP_VERSION_GATES, OURS_LOGGING } from './common-options.js';
import { CONNECTION_AND_ELECTION } from './controller-manager.js';
import { CONTROL_PLANE_GATES } from './feature-gates.js';
import { parseDaemonArgs, type DaemonFlagSet, type ParseResult } from './parser.js';
import type { ConfigOf, OptionSpec } from './option-spec.js';
import { leaderElectionTimes } from './rule-helpers.js';

export const SCHEDULER_OPTIONS = [
  ...HELP_VERSION_GATES,
  ...CONNECTION_AND_ELECTION,
  { name: 'port', type: 'int', default: '10251', group: G.insecure, description: 'Insecure HTTP port for health and metrics; 0 switches it off.' },
  { name: 'secure-port', type: 'int', group: G.secure, description: 'HTTPS port; 0 switches it off.' },
  ...OURS_LOGGING,
  { name: 'scheduler-name', type: 'string', default: 'default-scheduler', group: G.ours, ours: true, description: 'Pods whose spec.schedulerName equals this are scheduled here.' },
] as const satisfies readonly OptionSpec[];

export type SchedulerConfig = ConfigOf<typeof SCHEDULER_OPTIONS>;

export const SCHEDULER_FLAGS: DaemonFlagSet<SchedulerConfig> = {
  daemon: 'scheduler',
  summary: 'Binds pending pods to nodes (not in the reference).',
  options: SCHEDULER_OPTIONS,
  gates: CONTROL_PLANE_GATES,
  rules: [leaderElectionTimes()],
  groups: [G.generic, G.client, G.leader, G.secure, G.insecure, G.gates, G.logging, G.debug, G.ours],
};

export function parseSchedulerArgs(argv: readonly string[]): ParseResult<SchedulerConfig> {
  return parseDaemonArgs(SCHEDULER_FLAGS, argv);
}
