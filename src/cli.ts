/**
 * The multi-call entry point. The daemon comes from the name the program was invoked by
 * (bin/apiserver -> apiserver) or from the first argument (corectl apiserver ...).
 * Options are parsed and checked before anything starts; a bad option prints one line to
 * stderr and returns 2. Option tables, pino and daemon code load lazily so that --help and
 * --version stay fast.
 */
import { basename } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { CORECTL_VERSION, GIT_VERSION, KUBE_MAJOR, KUBE_MINOR } from './version.js';
import type { DaemonFlagSet, ParseResult } from './flags/parser.js';
import { installLeanAsyncResourceBind } from './util/async-resource-bind.js';

/** What a daemon's run() receives besides its config. */
export interface DaemonContext {
  log: Logger;
  /** Aborted on SIGINT or SIGTERM. */
  signal: AbortSignal;
}

/** The export every src/daemons/<name>/main.ts provides. */
export type DaemonRun<C> = (config: C, ctx: DaemonContext) => Promise<number | void>;

type AnyFlagSet = DaemonFlagSet<unknown>;

/** Lazily loaded option tables, one per daemon. */
const DAEMONS: Readonly<Record<string, (() => Promise<AnyFlagSet>) | null>> = {
  apiserver: async () => (await import('./flags/apiserver.js')).APISERVER_FLAGS as unknown as AnyFlagSet,
  'controller-manager': async () => (await import('./flags/controller-manager.js')).CONTROLLER_MANAGER_FLAGS as unknown as AnyFlagSet,
  'metrics-server': async () => (await import('./flags/metrics-server.js')).METRICS_SERVER_FLAGS as unknown as AnyFlagSet,
  nodeagent: async () => (await import('./flags/nodeagent.js')).NODEAGENT_FLAGS as unknown as AnyFlagSet,
  proxy: async () => (await import('./flags/proxy.js')).PROXY_FLAGS as unknown as AnyFlagSet,
  scheduler: async () => (await import('./flags/scheduler.js')).SCHEDULER_FLAGS as unknown as AnyFlagSet,
  server: async () => (await import('./flags/server.js')).SERVER_FLAGS as unknown as AnyFlagSet,
};

const DAEMON_NAMES = Object.keys(DAEMONS);

function topLevelHelp(): string {
  return [
    'Usage: corectl <daemon> [options]   (or run a daemon through its own name: apiserver [options])',
    '',
    'A Kubernetes-compatible control plane in one program.',
    '',
    'Daemons:',
    '  apiserver            validates and stores API objects and serves the REST API',
    '  controller-manager   runs the core control loops',
    '  metrics-server       serves the metrics.k8s.io API (kubectl top) from the node agents\' resource metrics',
    '  nodeagent            runs the pods of one node',
    '  proxy                routes Service addresses to their endpoints (nftables)',
    '  scheduler            binds pending pods to nodes',
    '  server               all of the above in one process',
    '',
    'Commands:',
    '  token create         make a bootstrap token; --print-join-command prints the command that joins a node',
    '  join                 join this machine to a cluster as a node, with a bootstrap token (runs the node agent)',
    '',
    'Options:',
    '  -h, --help           print this help',
    '      --version        print the version',
    '',
    'Run "corectl <daemon> --help" for the options of a daemon.',
    '',
  ].join('\n');
}

function versionText(program: string, mode: unknown): string {
  if (mode === 'raw') {
    return JSON.stringify({
      major: KUBE_MAJOR, minor: KUBE_MINOR, gitVersion: GIT_VERSION, corectlVersion: CORECTL_VERSION,
      platform: `${process.platform}/${process.arch}`, nodeVersion: process.version,
    }, null, 2) + '\n';
  }
  return `${program} ${GIT_VERSION}\n`;
}

function fail(daemon: string, message: string): number {
  process.stderr.write(`${daemon}: ${message}\n`);
  return 2;
}

/** Runs the program; resolves to the process exit code. */
export async function main(argv: string[]): Promise<number> {
  // Node 20's AsyncResource.bind keeps what it binds alive through young-generation GCs, and
  // its HTTP/2 client binds once per request (see util/async-resource-bind.ts).
  installLeanAsyncResourceBind();
  const invoked = basename(argv[1] ?? 'corectl').replace(/\.(c|m)?js$/, '');
  let daemon: string;
  let args: string[];
  if (invoked in DAEMONS) {
    daemon = invoked;
    args = argv.slice(2);
  } else {
    const first = argv[2];
    if (first === undefined) return fail('corectl', 'missing daemon name; see corectl --help');
    if (first === '--help' || first === '-h') {
      process.stdout.write(topLevelHelp());
      return 0;
    }
    if (first === '--version' || /^--version=(true|raw)$/.test(first)) {
      process.stdout.write(versionText('corectl', first.slice('--version='.length) || 'true'));
      return 0;
    }
    if (first === 'token') return (await import('./commands/token.js')).runTokenCommand(argv.slice(3));
    if (first === 'join') {
      // Token discovery, then the node agent in this process with what it found.
      const joined = await (await import('./commands/join.js')).runJoinCommand(argv.slice(3));
      if (typeof joined === 'number') return joined;
      daemon = 'nodeagent';
      args = joined.nodeagent;
    } else {
      if (!(first in DAEMONS)) {
        return fail('corectl', `unknown daemon "${first}" (one of ${DAEMON_NAMES.join(', ')}); see corectl --help`);
      }
      daemon = first;
      args = argv.slice(3);
    }
  }
  const load = DAEMONS[daemon];
  // Fast path: a lone --version needs no option table.
  const lone = args.length === 1 ? /^--version(?:=(true|raw))?$/.exec(args[0] ?? '') : null;
  if (load && lone) {
    process.stdout.write(versionText(daemon, lone[1] ?? 'true'));
    return 0;
  }
  if (!load) {
    process.stderr.write(`${daemon}: not implemented yet\n`);
    return 1;
  }
  const set = await load();
  const [{ parseDaemonArgs }, { FlagError }] = await Promise.all([import('./flags/parser.js'), import('./flags/flag-error.js')]);
  let parsed: ParseResult<unknown>;
  try {
    parsed = parseDaemonArgs(set, args);
  } catch (err) {
    if (err instanceof FlagError) return fail(daemon, err.message);
    throw err;
  }
  for (const w of parsed.warnings) process.stderr.write(`${daemon}: ${w}\n`);
  const config = parsed.config as Record<string, unknown>;
  if (config['help'] === true) {
    const { formatHelp } = await import('./flags/help.js');
    process.stdout.write(formatHelp(set));
    return 0;
  }
  if (config['version'] !== false && config['version'] !== undefined) {
    process.stdout.write(versionText(daemon, config['version']));
    return 0;
  }
  const code = await runDaemon(daemon, config);
  // run() has returned, so the daemon is done. A timer or socket it forgot must not keep the
  // process alive: exit anyway after a grace period (the timer itself holds nothing open).
  setTimeout(() => {
    process.stderr.write(`${daemon}: handles still open ${EXIT_GRACE_MS} ms after the daemon stopped; exiting\n`);
    process.exit(code);
  }, EXIT_GRACE_MS).unref();
  return code;
}

/** How long the process may linger after run() returned. */
const EXIT_GRACE_MS = 2000;

/**
 * Loads the daemon's main module and runs it with a logger and an AbortSignal tied to
 * SIGINT/SIGTERM. `mainUrl` is replaceable for tests.
 */
export async function runDaemon(
  daemon: string,
  config: Record<string, unknown>,
  mainUrl: URL = new URL(`./daemons/${daemon}/main.js`, import.meta.url),
): Promise<number> {
  if (!existsSync(fileURLToPath(mainUrl))) {
    process.stderr.write(`${daemon}: not implemented yet\n`);
    return 1;
  }
  const { createLogger } = await import('./util/logger.js');
  const log = createLogger({
    verbosity: typeof config['v'] === 'number' ? config['v'] : 0,
    format: config['logFormat'] === 'text' ? 'text' : 'json',
    flushFrequencyMs: typeof config['logFlushFrequency'] === 'number' ? config['logFlushFrequency'] : 5000,
    base: { daemon },
  });
  const controller = new AbortController();
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals): void => {
    signals++;
    if (signals === 1) {
      log.info({ signal: sig }, 'shutting down');
      controller.abort(new Error(`received ${sig}`));
    } else {
      // A second signal means the user will not wait for a graceful stop.
      process.stderr.write(`${daemon}: received ${sig} again, exiting now\n`);
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const mod = (await import(mainUrl.href)) as { run?: DaemonRun<unknown> };
    if (typeof mod.run !== 'function') {
      process.stderr.write(`${daemon}: not implemented yet\n`);
      return 1;
    }
    const code = await mod.run(config, { log, signal: controller.signal });
    return typeof code === 'number' ? code : 0;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log.fatal({ err }, 'daemon failed');
    process.stderr.write(`${daemon}: ${message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
