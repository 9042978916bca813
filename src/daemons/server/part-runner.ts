/**
 * Runs one daemon (a "part") inside the server process: loads its main module, calls
 * `run(config, { log, signal })` with a signal of its own, and reports how it ended.
 *
 * Contract: `done` never rejects (a throw becomes exit code 1 with the message kept);
 * `stop()` aborts the part's signal and waits for `done` at most `graceMs`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { ServerPart } from '../../flags/server.js';

type PartRun = (config: unknown, ctx: { log: Logger; signal: AbortSignal }) => Promise<number | void>;

export interface PartExit {
  readonly code: number;
  /** Set when run() threw. */
  readonly error?: string;
}

export interface RunningPart {
  readonly name: ServerPart;
  readonly done: Promise<PartExit>;
  /** True once run() returned or threw. */
  readonly ended: boolean;
  /** Aborts the part and waits for it; resolves 'timeout' when it did not end within graceMs. */
  stop(graceMs: number): Promise<PartExit | 'timeout'>;
}

/** The URL of a part's main module (next to this daemon's folder). */
export function partModuleUrl(part: ServerPart): URL {
  return new URL(`../${part}/main.js`, import.meta.url);
}

/** Loads a part's run(); a string says why it cannot run. */
export async function loadPart(part: ServerPart, url: URL = partModuleUrl(part)): Promise<PartRun | string> {
  if (url.protocol === 'file:' && !existsSync(fileURLToPath(url))) return 'not in this build (its main module is missing)';
  let mod: { run?: unknown };
  try {
    mod = (await import(url.href)) as { run?: unknown };
  } catch (e) {
    return `cannot be loaded: ${(e as Error).message.split('\n')[0] ?? ''}`;
  }
  if (typeof mod.run !== 'function') return 'not implemented yet (its main module has no run())';
  return mod.run as PartRun;
}

export function startPart(name: ServerPart, run: PartRun, config: unknown, log: Logger): RunningPart {
  const controller = new AbortController();
  let ended = false;
  const done = (async (): Promise<PartExit> => {
    try {
      const code = await run(config, { log, signal: controller.signal });
      return { code: typeof code === 'number' ? code : 0 };
    } catch (e) {
      log.error({ err: e }, `${name} failed`);
      return { code: 1, error: (e as Error).message ?? String(e) };
    } finally {
      ended = true;
    }
  })();
  return {
    name,
    done,
    get ended() { return ended; },
    async stop(graceMs: number): Promise<PartExit | 'timeout'> {
      controller.abort(new Error('server stopping'));
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), graceMs); });
      try {
        return await Promise.race([done, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
