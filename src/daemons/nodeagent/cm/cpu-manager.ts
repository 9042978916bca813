/**
 * The CPU manager (--cpu-manager-policy). "none" leaves every container on all CPUs. "static",
 * as Kubernetes' static policy: a container of a Guaranteed pod with a whole-number cpu
 * request gets that many CPUs for itself; every other container runs on the shared pool, which
 * is all CPUs minus those handed out. The reserved CPUs (the lowest-numbered
 * ceil(--system-reserved cpu + --core-reserved cpu) ones) stay in the shared pool and are never
 * handed out; the static policy refuses to start without any.
 *
 * Assignments are made at admission (a pod that cannot get its CPUs is rejected with
 * UnexpectedAdmissionError) and kept in <root-dir>/cpu_manager_state in Kubernetes' layout
 * ({"policyName","defaultCpuSet","entries":{podUID:{container:cpuset}},"checksum"}), so a
 * restarted agent keeps them. Our checksum is FNV-32a of the JSON without it; Kubernetes
 * hashes its Go value, so a Kubernetes state file is read without checking its checksum.
 * Every --cpu-manager-reconcile-period the cpusets of running containers are compared with
 * what they should be and updated through CRI (the shared pool shrinks and grows as
 * exclusive CPUs are taken and given back); assignments of pods no longer active are released.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parseQuantity } from '../../../util/quantity.js';
import type { Container, Pod } from '../pod-types.js';
import { formatCpuSet, parseCpuSet, without } from './cpuset.js';
import { containerAmounts, podQos } from './pod-resources.js';

export const CPU_MANAGER_STATE_FILE = 'cpu_manager_state';

export interface CpuManagerConfig {
  readonly policy: 'none' | 'static';
  readonly rootDir: string;
  /** All CPUs of the node, e.g. [0, 1]. */
  readonly cpus: readonly number[];
  /** --system-reserved and --core-reserved cpu, in millicores. */
  readonly reservedMilli: number;
  readonly log: Logger;
}

interface StateFile {
  policyName: string;
  defaultCpuSet: string;
  entries?: Record<string, Record<string, string>>;
  checksum?: number;
}

export class CpuManagerError extends Error {
  override readonly name = 'CpuManagerError';
}

export function fnv32a(text: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(text, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

/** The number of exclusive CPUs a container of this pod asks for, 0 when it shares the pool. */
export function exclusiveCpus(pod: Pod, c: Container): number {
  if (podQos(pod) !== 'Guaranteed') return 0;
  const a = containerAmounts(c);
  return a.cpuReq > 0 && a.cpuReq % 1000 === 0 ? a.cpuReq / 1000 : 0;
}

export class CpuManager {
  readonly reserved: readonly number[];
  private readonly assignments = new Map<string, Map<string, number[]>>();
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly c: CpuManagerConfig) {
    const n = Math.ceil(c.reservedMilli / 1000);
    this.reserved = c.policy === 'static' ? [...c.cpus].slice(0, n) : [];
    if (c.policy !== 'static') return;
    if (n === 0) throw new CpuManagerError('the static CPU manager policy needs reserved CPUs: set a cpu amount in --system-reserved or --core-reserved');
    if (n >= c.cpus.length) throw new CpuManagerError(`--system-reserved and --core-reserved reserve ${n} CPUs, the node has ${c.cpus.length}: none would be left for exclusive use`);
    this.load();
  }

  get enabled(): boolean { return this.c.policy === 'static'; }
  private get path(): string { return join(this.c.rootDir, CPU_MANAGER_STATE_FILE); }

  /** The shared pool: every CPU not assigned exclusively. */
  defaultSet(): number[] {
    const taken = [...this.assignments.values()].flatMap((m) => [...m.values()].flat());
    return without(this.c.cpus, taken);
  }

  private load(): void {
    if (!existsSync(this.path)) return;
    let s: StateFile;
    try { s = JSON.parse(readFileSync(this.path, 'utf8')) as StateFile; } catch (e) {
      throw new CpuManagerError(`${this.path}: ${(e as Error).message}`);
    }
    // As Kubernetes: a state file of another policy is an error the operator must clear.
    if (s.policyName !== this.c.policy) throw new CpuManagerError(`${this.path} was written by policy "${s.policyName}", configured "${this.c.policy}": remove the file to change the policy`);
    for (const [uid, cs] of Object.entries(s.entries ?? {})) {
      const m = new Map<string, number[]>();
      for (const [name, set] of Object.entries(cs)) m.set(name, parseCpuSet(set));
      this.assignments.set(uid, m);
    }
  }

  private save(): void {
    const entries: Record<string, Record<string, string>> = {};
    for (const [uid, m] of this.assignments) entries[uid] = Object.fromEntries([...m].map(([n, s]) => [n, formatCpuSet(s)]));
    const body: StateFile = { policyName: this.c.policy, defaultCpuSet: formatCpuSet(this.defaultSet()), entries };
    const text = JSON.stringify({ ...body, checksum: fnv32a(JSON.stringify(body)) });
    const tmp = `${this.path}.tmp`;
    this.writing = this.writing.then(() => writeFile(tmp, text)).then(() => rename(tmp, this.path))
      .catch((e: Error) => this.c.log.warn({ err: e.message }, 'could not write the CPU manager state'));
  }

  /** Waits for state writes in flight (tests, shutdown). */
  flushed(): Promise<void> { return this.writing; }

  /**
   * Hands out the exclusive CPUs of the pod's containers (lowest-numbered free ones outside the
   * reserved set). Throws when the pool has too few; then nothing is assigned.
   */
  allocate(pod: Pod): void {
    if (!this.enabled) return;
    const uid = pod.metadata?.uid ?? '';
    const existing = this.assignments.get(uid);
    const wanted = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
      .map((c) => ({ name: c.name, n: exclusiveCpus(pod, c) })).filter((x) => x.n > 0 && !existing?.has(x.name));
    if (wanted.length === 0) return;
    let free = without(this.defaultSet(), this.reserved);
    const m = existing ?? new Map<string, number[]>();
    const granted: [string, number[]][] = [];
    for (const w of wanted) {
      if (free.length < w.n) {
        throw new CpuManagerError(`not enough cpus available to satisfy request: requested=${w.n}, available=${free.length}`);
      }
      const take = free.slice(0, w.n);
      free = free.slice(w.n);
      granted.push([w.name, take]);
    }
    for (const [name, set] of granted) m.set(name, set);
    this.assignments.set(uid, m);
    this.save();
  }

  /** The cpuset a container runs on; undefined under the none policy. */
  cpusetFor(podUid: string, container: string): string | undefined {
    if (!this.enabled) return undefined;
    const own = this.assignments.get(podUid)?.get(container);
    return formatCpuSet(own ?? this.defaultSet());
  }

  /** Gives a pod's CPUs back to the shared pool. */
  release(podUid: string): boolean {
    if (!this.assignments.delete(podUid)) return false;
    this.save();
    return true;
  }

  /** Releases every assignment of a pod not in `activeUids`; true when the pool changed. */
  releaseStale(activeUids: ReadonlySet<string>): boolean {
    let changed = false;
    for (const uid of [...this.assignments.keys()]) if (!activeUids.has(uid)) changed = this.release(uid) || changed;
    return changed;
  }

  /** Writes the state once at start (Kubernetes does), so that the file shows the shared pool. */
  start(): void { if (this.enabled) this.save(); }
}

/** The node's CPUs as the cpuset controller sees them (our own cgroup's), else 0..n-1. */
export function onlineCpus(count: number, cpusetText?: string): number[] {
  if (cpusetText) { try { return parseCpuSet(cpusetText); } catch { /* fall through */ } }
  return Array.from({ length: count }, (_, i) => i);
}

/** --system-reserved cpu plus --core-reserved cpu, in millicores. */
export function reservedCpuMilli(...maps: readonly Readonly<Record<string, string>>[]): number {
  let m = 0;
  for (const r of maps) if (r.cpu) { try { m += Math.round(parseQuantity(r.cpu) * 1000); } catch { /* the parser refused it */ } }
  return m;
}
