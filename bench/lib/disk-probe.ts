/**
 * A probe of the disk under a bench's servers: a worker thread appends 512 bytes to a file and
 * fdatasyncs it every PROBE_MS, as a store's write-ahead log does, and records when each sync
 * started and how long it took. This VM's disk now and then holds every sync for 100–300 ms
 * (a bare append-and-fdatasync loop shows it with nothing else running); a durable write row's
 * p99 then says more about the disk than about the server. Each write row prints the probe's
 * syncs that started in the row's own time slices, so a stall and a tail can be told apart.
 *
 * The probe costs one small synced write per PROBE_MS on the client's core, next to the
 * thousands per second the servers issue.
 */
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMainThread, Worker, workerData } from 'node:worker_threads';
import { quantile } from './closed-loop.js';

/** How often the probe syncs, ms: often enough that any stall of 50 ms or more is hit. */
const PROBE_MS = 20;
/** Syncs the ring keeps (start time, duration): over 10 minutes at PROBE_MS. */
const CAPACITY = 32_768;
/** A sync this slow counts as a stall in the note. */
export const STALL_MS = 50;

/** A time slice, in the probe's clock (probeNow). */
export type Slice = readonly [from: number, to: number];

/** Milliseconds on a clock shared by the threads of this process (epoch based, fractional). */
export function probeNow(): number {
  return performance.timeOrigin + performance.now();
}

export interface DiskProbe {
  /** "disk: 150 syncs p50 0.21 max 182 ms, 2 ≥ 50 ms" over the syncs that started in `slices`. */
  note(slices: readonly Slice[]): string;
  stop(): Promise<void>;
}

/** Header slots (Float64): syncs recorded so far, and the start of the sync in progress (0 when none). */
const H_COUNT = 0;
const H_IN_FLIGHT = 1;
const HEADER = 2;

/** What the probe's worker gets (it runs this module; `diskProbe` tells it apart from other workers that import it). */
interface ProbeSetup { diskProbe: true; file: string; sab: SharedArrayBuffer; stopFlag: SharedArrayBuffer }

/** The worker's loop: append, fdatasync, record; PROBE_MS apart until told to stop. */
function probeLoop(o: ProbeSetup): void {
  const f = new Float64Array(o.sab);
  const stop = new Int32Array(o.stopFlag);
  const fd = openSync(o.file, 'w');
  const chunk = Buffer.alloc(512, 0x2e);
  try {
    while (Atomics.load(stop, 0) === 0) {
      const t = probeNow();
      f[H_IN_FLIGHT] = t;
      writeSync(fd, chunk);
      fdatasyncSync(fd);
      const n = f[H_COUNT]!;
      const at = HEADER + 2 * (n % CAPACITY);
      f[at] = t;
      f[at + 1] = probeNow() - t;
      f[H_IN_FLIGHT] = 0;
      f[H_COUNT] = n + 1;
      Atomics.wait(stop, 0, 0, PROBE_MS);
    }
  } finally {
    closeSync(fd);
    rmSync(o.file, { force: true });
  }
}

if (!isMainThread && (workerData as Partial<ProbeSetup> | undefined)?.diskProbe) probeLoop(workerData as ProbeSetup);

/** Starts the probe on `file` (put it on the servers' filesystem); a failed worker shows in the note. */
export function startDiskProbe(file: string): DiskProbe {
  const sab = new SharedArrayBuffer(8 * (HEADER + 2 * CAPACITY));
  const stopFlag = new SharedArrayBuffer(4);
  const f = new Float64Array(sab);
  const setup: ProbeSetup = { diskProbe: true, file, sab, stopFlag };
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: setup, execArgv: [] });
  let failed = '';
  worker.on('error', (e) => { failed = e.message; });
  const exited = new Promise<void>((r) => worker.once('exit', () => r()));
  return {
    note(slices: readonly Slice[]): string {
      if (failed) return `disk probe failed: ${failed}`;
      const inSlices = (t: number): boolean => slices.some(([a, b]) => t >= a && t <= b);
      const lat: number[] = [];
      const n = f[H_COUNT]!;
      for (let i = Math.max(0, n - CAPACITY); i < n; i++) {
        const at = HEADER + 2 * (i % CAPACITY);
        if (inSlices(f[at]!)) lat.push(f[at + 1]!);
      }
      // A sync still waiting now counts with the time it has waited so far.
      const pending = f[H_IN_FLIGHT]!;
      if (pending > 0 && inSlices(pending)) lat.push(probeNow() - pending);
      if (lat.length === 0) return '';
      lat.sort((a, b) => a - b);
      const stalls = lat.filter((x) => x >= STALL_MS).length;
      return `disk: ${lat.length} syncs p50 ${quantile(lat, 0.5).toFixed(2)} max ${lat[lat.length - 1]!.toFixed(0)} ms, ${stalls} ≥ ${STALL_MS} ms`;
    },
    async stop(): Promise<void> {
      const s = new Int32Array(stopFlag);
      Atomics.store(s, 0, 1);
      Atomics.notify(s, 0);
      await exited;
    },
  };
}
