/**
 * pino loggers for the daemons: JSON lines (default) or plain text, on stderr, written in the
 * background and flushed at least every flushFrequencyMs (--log-flush-frequency), and
 * synchronously when the process exits. Components take `log.child({ component: 'storage' })`.
 */
import { pino, type Level, type Logger } from 'pino';

export interface LoggerOptions {
  /** Explicit pino level; wins over verbosity. */
  level?: Level | 'silent';
  /** -v: 0-1 info, 2-5 debug, 6+ trace. @default 0 */
  verbosity?: number;
  /** @default 'json' */
  format?: 'json' | 'text';
  /** Longest time a line stays buffered. @default 5000 */
  flushFrequencyMs?: number;
  /** File descriptor or path. @default 2 (stderr) */
  destination?: number | string;
  /** Fields on every line, for example { daemon: 'apiserver' }. */
  base?: Record<string, unknown>;
}

export function levelForVerbosity(v: number): Level {
  if (v >= 6) return 'trace';
  if (v >= 2) return 'debug';
  return 'info';
}

const LEVEL_NAMES: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Turns one pino JSON line into "time LEVEL [component] msg key=value ...". */
export function jsonLineToText(line: string): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, component, pid: _pid, hostname: _host, ...rest } = rec;
  const when = typeof time === 'string' ? time : new Date(typeof time === 'number' ? time : Date.now()).toISOString();
  const lvl = LEVEL_NAMES[typeof level === 'number' ? level : 30] ?? String(level);
  const comp = typeof component === 'string' ? ` [${component}]` : '';
  const extras = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`);
  return `${when} ${lvl}${comp} ${typeof msg === 'string' ? msg : ''}${extras.length ? ' ' + extras.join(' ') : ''}\n`;
}

type Destination = ReturnType<typeof pino.destination>;

/** Destinations to flush synchronously at exit; one exit listener for all of them. */
const openDestinations = new Set<Destination>();
let exitHookInstalled = false;

function flushAllAtExit(): void {
  for (const dest of openDestinations) {
    try {
      dest.flushSync();
    } catch {
      // Nothing buffered or the stream never opened; nothing to save.
    }
  }
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? levelForVerbosity(opts.verbosity ?? 0);
  const flushMs = Math.max(10, opts.flushFrequencyMs ?? 5000);
  const dest = pino.destination({ dest: opts.destination ?? 2, sync: false, minLength: 4096 });
  const timer = setInterval(() => dest.flush(), flushMs);
  timer.unref();
  openDestinations.add(dest);
  dest.on('close', () => {
    clearInterval(timer);
    openDestinations.delete(dest);
  });
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', flushAllAtExit);
  }
  const options = {
    level,
    base: { pid: process.pid, ...opts.base },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ['authorization', 'token', '*.authorization', '*.token'], censor: '[redacted]' },
  };
  if (opts.format === 'text') {
    return pino(options, { write: (line: string) => { dest.write(jsonLineToText(line)); } });
  }
  return pino(options, dest);
}
