/**
 * Options shared by every daemon: help, version and ours (beyond the reference) for logging.
 * Spread into each daemon table; the tables stay plain data.
 */
export const G = {
  generic: 'Generic',
  secure: 'Secure serving',
  insecure: 'Insecure serving',
  storage: 'Storage',
  authn: 'Authentication',
  authz: 'Authorization',
  admission: 'Admission',
  audit: 'Audit',
  api: 'API and versions',
  nodeagentClient: 'Node agent connections',
  client: 'API server client',
  leader: 'Leader election',
  controllers: 'Controllers',
  nodes: 'Node lifecycle',
  volumes: 'Volumes',
  autoscaler: 'Autoscaler',
  certs: 'Certificates',
  runtime: 'Container runtime',
  pods: 'Pods and sources',
  resources: 'Resources and eviction',
  network: 'Networking',
  cgroups: 'Cgroups',
  gates: 'Feature gates',
  logging: 'Logging',
  debug: 'Debugging',
  ours: 'Ours (beyond the reference)',
} as const;

const HELP = { name: 'help', short: 'h', type: 'bool', group: G.generic, description: 'Print this help and exit.' } as const;
const VERSION = { name: 'version', type: 'version', group: G.generic, description: 'Print the version and exit; --version=raw prints the full version record.' } as const;
const GATES = { name: 'feature-gates', type: 'mapStringBool', group: G.gates, description: 'Name=true|false pairs switching features; AllAlpha=true turns on every alpha gate (explicit settings win). Gates listed below.' } as const;
const LOG_FLUSH = { name: 'log-flush-frequency', type: 'duration', default: '5s', group: G.logging, description: 'Longest time buffered log lines wait before being written.' } as const;

/** The API server and the controller manager: reference rows. */
export const HELP_VERSION_GATES = [HELP, VERSION, GATES, LOG_FLUSH] as const;

/** The node agent's reference table lacks --help and --log-flush-frequency: ours there. */
export const NODEAGENT_HELP_VERSION_GATES = [
  { ...HELP, ours: true }, VERSION, GATES, { ...LOG_FLUSH, ours: true },
] as const;

/** In every daemon: ours. */
export const OURS_LOGGING = [
  { name: 'v', short: 'v', type: 'int', default: '0', group: G.ours, ours: true, description: 'Log verbosity: 0-1 info, 2-5 debug, 6 and above trace.' },
  { name: 'log-format', type: 'string', default: 'json', oneOf: ['json', 'text'], group: G.ours, ours: true, description: 'Log line format: json (one JSON object per line) or text.' },
] as const;
