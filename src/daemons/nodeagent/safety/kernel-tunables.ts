/**
 * --protect-kernel-defaults (the reference's error 8): the kernel tunables Kubernetes' node
 * agent expects, read from /proc/sys. With the option, any that differs stops the start with
 * one line naming each; without it, differences are only logged (Kubernetes would write its
 * values instead; we leave a shared host's panic settings to its operator).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The tunables and values of Kubernetes' setupKernelTunables. */
export const KERNEL_DEFAULTS: Readonly<Record<string, number>> = {
  'vm.overcommit_memory': 1,
  'vm.panic_on_oom': 0,
  'kernel.panic': 10,
  'kernel.panic_on_oops': 1,
  'kernel.keys.root_maxkeys': 1_000_000,
  'kernel.keys.root_maxbytes': 25_000_000,
};

export interface TunableMismatch { readonly name: string; readonly expected: number; readonly actual: string }

export async function kernelTunableMismatches(procSys = '/proc/sys'): Promise<TunableMismatch[]> {
  const out: TunableMismatch[] = [];
  for (const [name, expected] of Object.entries(KERNEL_DEFAULTS)) {
    let actual: string;
    try { actual = (await readFile(join(procSys, ...name.split('.')), 'utf8')).trim(); } catch (e) {
      actual = `unreadable (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    if (actual !== String(expected)) out.push({ name, expected, actual });
  }
  return out;
}

export function describeMismatches(list: readonly TunableMismatch[]): string {
  return list.map((m) => `invalid kernel flag: ${m.name}, expected value: ${m.expected}, actual value: ${m.actual}`).join('; ');
}
