/**
 * Facts about the host the node reports: name, addresses, capacity and system info. Read once
 * at start (capacity and addresses do not change under a running agent in practice).
 */
import { readFile, statfs } from 'node:fs/promises';
import { cpus, hostname, networkInterfaces, release, totalmem } from 'node:os';

export interface HostFacts {
  readonly nodeName: string;
  readonly hostname: string;
  readonly internalIp: string;
  readonly cpuCores: number;
  readonly memoryBytes: number;
  readonly ephemeralStorageBytes: number;
  readonly machineId: string;
  readonly bootId: string;
  readonly kernelVersion: string;
  readonly osImage: string;
  readonly architecture: string;
}

export function nodeNameFrom(hostnameOverride: string): string {
  return (hostnameOverride.trim() || hostname()).toLowerCase();
}

/** The first non-loopback IPv4 address of the host; 127.0.0.1 when there is none. */
export function firstHostIpv4(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

async function readTrim(path: string): Promise<string> {
  try { return (await readFile(path, 'utf8')).trim(); } catch { return ''; }
}

async function osImage(): Promise<string> {
  const text = await readTrim('/etc/os-release');
  const m = /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(text);
  return m?.[1] ?? 'Linux';
}

export function goArch(arch: string = process.arch): string {
  return ({ x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' } as Record<string, string>)[arch] ?? arch;
}

export async function readHostFacts(opts: { hostnameOverride: string; nodeIp: string; rootDir: string }): Promise<HostFacts> {
  let eph = 0;
  try {
    const s = await statfs(opts.rootDir);
    eph = s.blocks * s.bsize;
  } catch { /* root dir not there yet: reported as 0 */ }
  return {
    nodeName: nodeNameFrom(opts.hostnameOverride),
    hostname: nodeNameFrom(opts.hostnameOverride),
    internalIp: opts.nodeIp || firstHostIpv4(),
    cpuCores: cpus().length,
    memoryBytes: totalmem(),
    ephemeralStorageBytes: eph,
    machineId: await readTrim('/etc/machine-id'),
    bootId: await readTrim('/proc/sys/kernel/random/boot_id'),
    kernelVersion: release(),
    osImage: await osImage(),
    architecture: goArch(),
  };
}
