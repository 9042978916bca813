/**
 * When a CronJob is due: which unmet fire time to start now, how many were missed, and when
 * to look again. Pure: the controller passes the clock's `now`.
 *
 * Contract: fire times are taken after `earliest` (status.lastScheduleTime, else the
 * CronJob's creation time) up to and including `now`; only the most recent one is ever
 * started. With spec.startingDeadlineSeconds only fire times after `now - deadline` count:
 * a most recent fire time older than that is reported as `skipped` (the controller records a
 * MissSchedule event and starts nothing), and the missed count covers the window only, so a
 * deadline keeps a long outage from counting as "too many missed". Counting stops at
 * TOO_MANY_MISSED + 1: more than TOO_MANY_MISSED only earns a warning, the most recent time
 * still starts (as in Kubernetes since 1.27).
 */
import type { Schedule } from '../../../../api/resources/batch/cron-schedule.js';

export const TOO_MANY_MISSED = 100;
/** Requeue margin after a fire time, so a slightly early timer does not find it still ahead. */
export const NEXT_SCHEDULE_MARGIN_MS = 100;

export interface DueInput {
  /** status.lastScheduleTime, else metadata.creationTimestamp (ms since the epoch). */
  earliest: number;
  now: number;
  startingDeadlineSeconds?: number;
}

export interface Due {
  /** The most recent unmet fire time within the deadline window: the one to start. */
  scheduled?: number;
  /** Unmet fire times within the window, counted up to TOO_MANY_MISSED + 1. */
  missed: number;
  /** Set when the most recent unmet fire time lies before the deadline window (not started). */
  skipped?: number;
}

export function dueTime(schedule: Schedule, { earliest, now, startingDeadlineSeconds }: DueInput): Due {
  const latest = schedule.latest(now, earliest);
  if (latest === undefined || latest <= earliest) return { missed: 0 };
  const windowStart = startingDeadlineSeconds === undefined ? earliest : Math.max(earliest, now - startingDeadlineSeconds * 1000);
  if (latest <= windowStart) return { missed: 0, skipped: latest };
  let missed = 0;
  for (let t = schedule.next(windowStart, earliest); t !== undefined && t <= now && missed <= TOO_MANY_MISSED; t = schedule.next(t, earliest)) missed++;
  return { scheduled: latest, missed: Math.max(missed, 1) };
}

/** When to sync again: just after the first fire time after `now`; undefined when it never fires again. */
export function nextSyncAt(schedule: Schedule, earliest: number, now: number): number | undefined {
  const next = schedule.next(now, earliest);
  return next === undefined ? undefined : next + NEXT_SCHEDULE_MARGIN_MS;
}
