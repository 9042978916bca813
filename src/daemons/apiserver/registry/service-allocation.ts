/**
 * Service cluster IP and node port allocation on create/update/delete. Allocations are made
 * inside the write and registered on the WriteTxn: rolled back if the write fails, and the
 * values a successful update dropped are released on commit.
 */
import { errors, fieldErrors, type FieldError } from '../../../api/meta/status.js';
import type { KubeObject } from '../../../api/resources/types.js';
import { AlreadyAllocatedError, RangeFullError } from './bitmap-range.js';
import type { IpAllocator } from './ip-allocator.js';
import type { PortAllocator } from './port-allocator.js';
import type { WriteTxn } from './write-txn.js';

type Obj = Record<string, unknown>;
const rec = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Obj : {});
const ports = (o: KubeObject | undefined): Obj[] => (Array.isArray(rec(o?.spec).ports) ? (rec(o?.spec).ports as unknown[]).map(rec) : []);

function needsClusterIp(o: KubeObject): boolean { return rec(o.spec).type !== 'ExternalName'; }
function needsNodePorts(o: KubeObject): boolean {
  const s = rec(o.spec);
  return s.type === 'NodePort' || (s.type === 'LoadBalancer' && s.allocateLoadBalancerNodePorts !== false);
}

/** LoadBalancer services with externalTrafficPolicy Local get a health-check node port. */
function needsHealthCheckPort(o: KubeObject): boolean {
  const s = rec(o.spec);
  return s.type === 'LoadBalancer' && s.externalTrafficPolicy === 'Local';
}
function healthPort(o: KubeObject | undefined): number | undefined {
  const v = rec(o?.spec).healthCheckNodePort;
  return typeof v === 'number' && v > 0 ? v : undefined;
}

export class ServiceAllocation {
  constructor(private readonly ips: IpAllocator, private readonly nodePorts: PortAllocator) {}

  private invalid(o: KubeObject, errs: FieldError[]): never {
    throw errors.invalid('Service', '', o.metadata?.name ?? '', errs);
  }

  private async takeIp(o: KubeObject, ip: string | undefined, txn: WriteTxn, dryRun: boolean): Promise<string> {
    try {
      if (ip === undefined) {
        const got = await this.ips.allocateNext();
        if (dryRun) await this.ips.release(got); else txn.onRollback(() => this.ips.release(got));
        return got;
      }
      await this.ips.allocate(ip);
      if (dryRun) await this.ips.release(ip); else txn.onRollback(() => this.ips.release(ip));
      return ip;
    } catch (e) {
      if (e instanceof RangeError) this.invalid(o, [fieldErrors.invalid('spec.clusterIPs', [ip], `failed to allocate IP ${ip}: provided IP is not in the valid range. The range of valid IPs is ${this.ips.cidr.text}`)]);
      if (e instanceof AlreadyAllocatedError) this.invalid(o, [fieldErrors.invalid('spec.clusterIPs', [ip], `failed to allocate IP ${ip}: provided IP is already allocated`)]);
      if (e instanceof RangeFullError) throw errors.internal('failed to allocate a serviceIP: range is full');
      throw e;
    }
  }

  private async takePort(o: KubeObject, i: number, port: number | undefined, txn: WriteTxn, dryRun: boolean): Promise<number> {
    try {
      const got = port === undefined ? await this.nodePorts.allocateNext() : (await this.nodePorts.allocate(port), port);
      if (dryRun) await this.nodePorts.release(got); else txn.onRollback(() => this.nodePorts.release(got));
      return got;
    } catch (e) {
      if (e instanceof RangeError) this.invalid(o, [fieldErrors.invalid(`spec.ports[${i}].nodePort`, port, `provided port is not in the valid range. The range of valid ports is ${this.nodePorts.rangeText()}`)]);
      if (e instanceof AlreadyAllocatedError) this.invalid(o, [fieldErrors.invalid(`spec.ports[${i}].nodePort`, port, 'provided port is already allocated')]);
      if (e instanceof RangeFullError) throw errors.internal('failed to allocate a nodePort: range is full');
      throw e;
    }
  }

  private setIp(spec: Obj, ip: string): void {
    spec.clusterIP = ip;
    spec.clusterIPs = [ip];
    const fam = ip === 'None' ? this.ips.family() : ip.includes(':') ? 6 : 4;
    spec.ipFamilies ??= [fam === 6 ? 'IPv6' : 'IPv4'];
    spec.ipFamilyPolicy ??= 'SingleStack';
  }

  async onCreate(o: KubeObject, txn: WriteTxn, dryRun: boolean): Promise<void> {
    const spec = rec(o.spec);
    if (needsClusterIp(o)) {
      const want = typeof spec.clusterIP === 'string' && spec.clusterIP !== '' ? spec.clusterIP
        : Array.isArray(spec.clusterIPs) && typeof spec.clusterIPs[0] === 'string' && spec.clusterIPs[0] !== '' ? spec.clusterIPs[0] : undefined;
      if (want === 'None') this.setIp(spec, 'None');
      else this.setIp(spec, await this.takeIp(o, want, txn, dryRun));
    }
    if (needsNodePorts(o)) {
      // Requested ports first, so a random pick never takes a port asked for later in the list.
      const list = ports(o);
      for (let i = 0; i < list.length; i++) {
        const p = list[i]!;
        if (typeof p.nodePort === 'number' && p.nodePort !== 0) p.nodePort = await this.takePort(o, i, p.nodePort, txn, dryRun);
      }
      for (let i = 0; i < list.length; i++) {
        const p = list[i]!;
        if (typeof p.nodePort !== 'number' || p.nodePort === 0) p.nodePort = await this.takePort(o, i, undefined, txn, dryRun);
      }
    }
    if (needsHealthCheckPort(o)) spec.healthCheckNodePort = await this.takeHealthPort(o, healthPort(o), txn, dryRun);
    else delete spec.healthCheckNodePort;
  }

  private async takeHealthPort(o: KubeObject, want: number | undefined, txn: WriteTxn, dryRun: boolean): Promise<number> {
    try {
      const got = want === undefined ? await this.nodePorts.allocateNext() : (await this.nodePorts.allocate(want), want);
      if (dryRun) await this.nodePorts.release(got); else txn.onRollback(() => this.nodePorts.release(got));
      return got;
    } catch (e) {
      if (e instanceof RangeError) this.invalid(o, [fieldErrors.invalid('spec.healthCheckNodePort', want, `provided port is not in the valid range. The range of valid ports is ${this.nodePorts.rangeText()}`)]);
      if (e instanceof AlreadyAllocatedError) this.invalid(o, [fieldErrors.invalid('spec.healthCheckNodePort', want, 'provided port is already allocated')]);
      if (e instanceof RangeFullError) throw errors.internal('failed to allocate a nodePort: range is full');
      throw e;
    }
  }

  async onUpdate(o: KubeObject, old: KubeObject, txn: WriteTxn, dryRun: boolean): Promise<void> {
    const spec = rec(o.spec), os = rec(old.spec);
    // Omitted allocated values carry over from the old object, as Kubernetes does.
    if (needsClusterIp(o) && needsClusterIp(old) && (spec.clusterIP === undefined || spec.clusterIP === '') && os.clusterIP) {
      spec.clusterIP = os.clusterIP; spec.clusterIPs = os.clusterIPs;
      spec.ipFamilies ??= os.ipFamilies; spec.ipFamilyPolicy ??= os.ipFamilyPolicy;
    }
    if (needsNodePorts(o)) for (const p of ports(o)) {
      if (p.nodePort === undefined || p.nodePort === 0) {
        const match = ports(old).find((q) => q.port === p.port && (q.protocol ?? 'TCP') === (p.protocol ?? 'TCP')) ?? ports(old).find((q) => q.name === p.name);
        if (match?.nodePort) p.nodePort = match.nodePort;
      }
    }
    // Cluster IP: allocate when it is newly needed; release when no longer used.
    const oldIp = needsClusterIp(old) && typeof os.clusterIP === 'string' && os.clusterIP !== 'None' ? os.clusterIP : undefined;
    if (needsClusterIp(o)) {
      if (!spec.clusterIP) this.setIp(spec, await this.takeIp(o, undefined, txn, dryRun));
      else if (spec.clusterIP !== 'None' && spec.clusterIP !== oldIp) this.setIp(spec, await this.takeIp(o, String(spec.clusterIP), txn, dryRun));
      else this.setIp(spec, String(spec.clusterIP));
    } else {
      delete spec.clusterIP; delete spec.clusterIPs; delete spec.ipFamilies; delete spec.ipFamilyPolicy;
    }
    const newIp = typeof spec.clusterIP === 'string' ? spec.clusterIP : undefined;
    if (oldIp && oldIp !== newIp && !dryRun) txn.onCommit(() => this.ips.release(oldIp));
    // Node ports.
    const oldPorts = new Set(needsNodePorts(old) ? ports(old).map((p) => p.nodePort).filter((n): n is number => typeof n === 'number' && n > 0) : []);
    const keep = new Set<number>();
    if (needsNodePorts(o)) {
      const list = ports(o);
      for (const pass of ['requested', 'random'] as const) {
        for (let i = 0; i < list.length; i++) {
          const p = list[i]!;
          const want = typeof p.nodePort === 'number' && p.nodePort !== 0 ? p.nodePort : undefined;
          if ((want === undefined) !== (pass === 'random')) continue;
          if (want !== undefined && oldPorts.has(want) && !keep.has(want)) { keep.add(want); continue; }
          p.nodePort = await this.takePort(o, i, want, txn, dryRun);
          keep.add(p.nodePort as number);
        }
      }
    } else {
      for (const p of ports(o)) delete p.nodePort;
    }
    if (!dryRun) for (const port of oldPorts) if (!keep.has(port)) txn.onCommit(() => this.nodePorts.release(port));
    // Health-check node port: kept while needed, allocated when newly needed, released after.
    const oldHealth = needsHealthCheckPort(old) ? healthPort(old) : undefined;
    if (needsHealthCheckPort(o)) {
      const want = healthPort(o) ?? oldHealth;
      spec.healthCheckNodePort = want !== undefined && want === oldHealth ? want : await this.takeHealthPort(o, want, txn, dryRun);
    } else delete spec.healthCheckNodePort;
    if (oldHealth !== undefined && oldHealth !== spec.healthCheckNodePort && !dryRun) txn.onCommit(() => this.nodePorts.release(oldHealth));
  }

  async onDelete(o: KubeObject): Promise<void> {
    const spec = rec(o.spec);
    if (needsClusterIp(o) && typeof spec.clusterIP === 'string' && spec.clusterIP && spec.clusterIP !== 'None') await this.ips.release(spec.clusterIP);
    if (needsNodePorts(o)) for (const p of ports(o)) if (typeof p.nodePort === 'number') await this.nodePorts.release(p.nodePort);
    const h = needsHealthCheckPort(o) ? healthPort(o) : undefined;
    if (h !== undefined) await this.nodePorts.release(h);
  }

  /** The cluster IPs and node ports (health-check ports included) these services hold. */
  static usedBy(services: KubeObject[]): { ips: string[]; nodePorts: number[] } {
    const ips: string[] = [], nodePorts: number[] = [];
    for (const s of services) {
      const spec = rec(s.spec);
      if (needsClusterIp(s) && typeof spec.clusterIP === 'string' && spec.clusterIP !== 'None') ips.push(spec.clusterIP);
      if (needsNodePorts(s)) for (const p of ports(s)) if (typeof p.nodePort === 'number') nodePorts.push(p.nodePort);
      const h = needsHealthCheckPort(s) ? healthPort(s) : undefined;
      if (h !== undefined) nodePorts.push(h);
    }
    return { ips, nodePorts };
  }

  /** Rebuilds both bitmaps from these services outright (a lone server; see allocation-repair.ts). */
  async repair(services: KubeObject[]): Promise<void> {
    const used = ServiceAllocation.usedBy(services);
    await this.ips.reset(used.ips);
    await this.nodePorts.reset(used.nodePorts);
  }
}
