/**
 * A CronJob's spec.schedule turned into fire times, in a time zone. Used by the API server (is a
 * schedule valid?) and the controller manager's cronjob controller (when does it fire?).
 *
 * Accepted (what Kubernetes' standard cron parser takes, so that a schedule means the same
 * here as there): five fields `minute hour day-of-month month day-of-week` with `*`, `?`,
 * lists, ranges, steps (`5/10` = from 5 to the end by 10) and month/weekday names (JAN..DEC,
 * SUN..SAT, any case; weekdays 0-6); the macros @yearly, @annually, @monthly, @weekly, @daily,
 * @midnight, @hourly and `@every <Go duration>` (e.g. `@every 1h30m`: whole seconds, at least
 * one); a leading `TZ=<zone>` or `CRON_TZ=<zone>` (the API server rejects it since
 * spec.timeZone exists; honoured for objects stored before). Anything else (six fields, `L`,
 * `#`, `H`, weekday 7, Feb 30) throws a ScheduleError.
 *
 * Day matching follows classic cron: when both day fields are restricted a day matching either
 * fires, except that a day field starting with `*` or `?` (a stepped wildcard) makes it "both".
 * cron-parser computes the calendar (including DST shifts: a wall time skipped by a
 * spring-forward fires at the shifted time, a repeated one fires once); this file adapts the
 * grammar and the day rule. An `@every` schedule fires every interval after an anchor (the
 * CronJob's last schedule time or creation time); cron schedules ignore the anchor.
 */
import { createRequire } from 'node:module';
import type { CronExpression, CronExpressionParser } from 'cron-parser';

let parser: typeof CronExpressionParser | undefined;
/** cron-parser (with luxon) takes ~90 ms to load: it is loaded with the first schedule parsed, not when a daemon starts. */
function cronParser(): typeof CronExpressionParser {
  parser ??= (createRequire(import.meta.url)('cron-parser') as { CronExpressionParser: typeof CronExpressionParser }).CronExpressionParser;
  return parser;
}

export class ScheduleError extends Error {
  override readonly name = 'ScheduleError';
}

/** Fire times in milliseconds since the epoch. */
export interface Schedule {
  /** The first fire time strictly after `after`; undefined when it never fires again. */
  next(after: number, anchor: number): number | undefined;
  /** The latest fire time at or before `at` (and after `anchor`); undefined when none. */
  latest(at: number, anchor: number): number | undefined;
}

const MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *', '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
};
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const FIELD_NAMES = ['minute', 'hour', 'day of month', 'month', 'day of week'];
/** How many candidates cron-parser may offer before a filtered search gives up. */
const SEARCH_LIMIT = 5000;

const formats = new Map<string, Intl.DateTimeFormat>();

/** The formatter of a zone (cached); throws RangeError for an unknown zone. */
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formats.set(timeZone, f);
  }
  return f;
}

/** An IANA zone name the runtime knows ("" and "Local" are not: Kubernetes rejects them too). */
export function isValidTimeZone(name: string): boolean {
  if (!/^[A-Za-z0-9_+\-/]+$/.test(name) || name === 'Local') return false;
  try { formatter(name); return true; } catch { return false; }
}

/** True when the schedule starts with a TZ= or CRON_TZ= prefix (the API server no longer accepts one). */
export function hasZonePrefix(schedule: string): boolean {
  return /^\s*(?:CRON_)?TZ=/.test(schedule);
}

/** The zone this process runs in (Kubernetes' controller manager schedules in its local zone). */
export function localTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

function pad(n: number, w = 2): string { return String(n).padStart(w, '0'); }

/** RFC 3339 (whole seconds) of an instant as wall time in `timeZone`: "2024-05-01T09:00:00+09:00", or "Z" for offset 0. */
export function formatInZone(ms: number, timeZone: string): string {
  const secs = Math.floor(ms / 1000) * 1000;
  const p: Record<string, number> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(secs))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  const offsetMin = Math.round((wall - secs) / 60_000);
  const sign = offsetMin < 0 ? '-' : '+';
  const abs = Math.abs(offsetMin);
  const zone = offsetMin === 0 ? 'Z' : `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}T${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}${zone}`;
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A Go duration ("1h30m", "90s", "1.5h") in milliseconds. */
export function parseGoDuration(text: string): number {
  const m = /^([-+]?)(.+)$/.exec(text);
  const body = m?.[2] ?? '';
  if (body === '0') return 0;
  const re = /(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let ms = 0;
  let at = 0;
  while (at < body.length) {
    re.lastIndex = at;
    const part = re.exec(body);
    if (!part) throw new ScheduleError(`invalid duration ${JSON.stringify(text)}`);
    ms += Number(part[1]) * DURATION_UNITS[part[2]];
    at = re.lastIndex;
  }
  if (!body) throw new ScheduleError(`invalid duration ${JSON.stringify(text)}`);
  return m?.[1] === '-' ? -ms : ms;
}

/** Fires every `intervalMs` after the anchor (truncated to the second). */
function everySchedule(intervalMs: number): Schedule {
  const base = (anchor: number): number => Math.floor(anchor / 1000) * 1000;
  return {
    next(after, anchor) {
      const a = base(anchor);
      if (after < a) return a + intervalMs;
      return a + (Math.floor((after - a) / intervalMs) + 1) * intervalMs;
    },
    latest(at, anchor) {
      const a = base(anchor);
      const n = Math.floor((at - a) / intervalMs);
      return n >= 1 ? a + n * intervalMs : undefined;
    },
  };
}

function checkField(field: string, index: number): void {
  const names = index === 3 ? MONTHS : index === 4 ? WEEKDAYS : undefined;
  for (const part of field.split(',')) {
    const m = /^(\*|\?|([0-9a-z]+)(?:-([0-9a-z]+))?)(?:\/(\d+))?$/i.exec(part);
    if (!m) throw new ScheduleError(`invalid ${FIELD_NAMES[index]} field ${JSON.stringify(field)}`);
    for (const v of [m[2], m[3]]) {
      if (v === undefined) continue;
      if (/^\d+$/.test(v)) {
        if (index === 4 && Number(v) > 6) throw new ScheduleError(`day of week ${v} is above the maximum 6`);
        continue;
      }
      if (!names?.includes(v.toLowerCase())) throw new ScheduleError(`invalid ${FIELD_NAMES[index]} value ${JSON.stringify(v)}`);
    }
  }
}

const starts = (f: string): boolean => f.startsWith('*') || f.startsWith('?');
const wildcard = (f: string): boolean => f === '*' || f === '?';

function cronSchedule(fields: string[], timeZone: string): Schedule {
  let expr: CronExpression;
  try {
    expr = cronParser().parse(fields.join(' '), { tz: timeZone, currentDate: new Date(0) });
  } catch (e) {
    throw new ScheduleError((e as Error).message);
  }
  const [, , dom, , dow] = fields;
  // cron-parser treats `*/2` as restricted (either day matches); classic cron wants both.
  const both = (starts(dom) || starts(dow)) && !wildcard(dom) && !wildcard(dow);
  const days = new Set<number>(expr.fields.dayOfMonth.values as number[]);
  const weekdays = new Set<number>(expr.fields.dayOfWeek.values as number[]);
  const step = (from: number, forward: boolean): number | undefined => {
    expr.reset(new Date(from));
    for (let i = 0; i < SEARCH_LIMIT; i++) {
      let d;
      try { d = forward ? expr.next() : expr.prev(); } catch { return undefined; }
      if (!both || (days.has(d.getDate()) && weekdays.has(d.getDay()))) return d.getTime();
    }
    return undefined;
  };
  return {
    next: (after) => step(after, true),
    // prev() is strictly before its start: start one millisecond later to include `at`.
    latest: (at, anchor) => { const t = step(at + 1, false); return t !== undefined && t > anchor ? t : undefined; },
  };
}

/**
 * Parses a schedule for the CronJob's time zone (spec.timeZone, else the controller's
 * default). Throws ScheduleError for what Kubernetes would not parse.
 */
export function parseSchedule(schedule: string, timeZone: string): Schedule {
  let text = schedule.trim();
  let zone = timeZone;
  const tz = /^(?:CRON_)?TZ=(\S*)\s+(.*)$/.exec(text);
  if (tz) {
    zone = tz[1];
    text = tz[2].trim();
  }
  if (!isValidTimeZone(zone)) throw new ScheduleError(`unknown time zone ${JSON.stringify(zone)}`);
  if (text.startsWith('@every ')) {
    const ms = parseGoDuration(text.slice('@every '.length).trim());
    // Whole seconds, at least one (sub-second parts are dropped, shorter intervals become 1s).
    return everySchedule(Math.max(1000, Math.floor(ms / 1000) * 1000));
  }
  if (text.startsWith('@')) {
    const expanded = MACROS[text];
    if (!expanded) throw new ScheduleError(`unrecognized descriptor ${JSON.stringify(text)}`);
    text = expanded;
  }
  const fields = text.split(/\s+/);
  if (fields.length !== 5) throw new ScheduleError(`expected exactly 5 fields, found ${fields.length}: ${JSON.stringify(text)}`);
  fields.forEach(checkField);
  return cronSchedule(fields, zone);
}
