/**
 * From the state last applied and the state wanted to one `nft -f -` script (one atomic
 * transaction). A full sync rewrites every chain and map of ours and deletes the chains and
 * sets of ours the kernel has but we no longer want (their names come from the kernel); a
 * partial sync touches only what changed. Affinity sets are never flushed, so clients stay on
 * their endpoint across syncs.
 *
 * Order inside the transaction matters to the kernel: new sets and chains first, then chain
 * rules (flushed and re-added), then map elements, then deletions of chains and sets nothing
 * refers to any more.
 */
import { addrType, isBaseChain, mapTypes, type ChainSpec, type NftFamily, type NftState } from './nft-rules.js';

export interface KernelObjects {
  chains: Set<string>;
  sets: Set<string>;
}

function sameRules(a: ChainSpec | undefined, b: ChainSpec): boolean {
  if (a === b) return true;
  if (!a || a.hook !== b.hook || a.rules.length !== b.rules.length) return false;
  return a.rules.every((r, i) => r === b.rules[i]);
}

/**
 * The script taking the kernel from `applied` (undefined: unknown, do a full sync against
 * `kernel`, the names of our chains and sets found there) to `want`, in the table of `family`.
 */
export function transactionScript(table: string, want: NftState, applied: NftState | undefined, kernel: KernelObjects = { chains: new Set(), sets: new Set() }, family: NftFamily = 'ip'): string {
  const T = `${family} ${table}`;
  const head: string[] = [`add table ${T}`];
  const rules: string[] = [];
  const elements: string[] = [];
  const tail: string[] = [];
  const full = applied === undefined;
  // Sets: affinity sets are created once and kept (their timeout fixed at creation).
  for (const [name, timeout] of want.affinitySets) {
    if (full ? !kernel.sets.has(name) : !applied.affinitySets.has(name)) head.push(`add set ${T} ${name} { type ${addrType(family)}; flags dynamic,timeout; timeout ${timeout}s; }`);
  }
  for (const [name, type] of Object.entries(mapTypes(family))) {
    if (full || !applied.maps.has(name)) head.push(`add map ${T} ${name} { ${type} }`);
  }
  // Chains.
  for (const [name, spec] of want.chains) {
    const before = applied?.chains.get(name);
    if (!full && sameRules(before, spec)) continue;
    const exists = full ? kernel.chains.has(name) : before !== undefined;
    head.push(spec.hook ? `add chain ${T} ${name} ${spec.hook}` : `add chain ${T} ${name}`);
    if (exists) rules.push(`flush chain ${T} ${name}`);
    for (const r of spec.rules) rules.push(`add rule ${T} ${name} ${r}`);
  }
  const staleChains = full ? [...kernel.chains].filter((c) => !want.chains.has(c)) : [...(applied.chains.keys())].filter((c) => !want.chains.has(c));
  for (const c of staleChains) {
    rules.unshift(`flush chain ${T} ${c}`);
    tail.push(`delete chain ${T} ${c}`);
  }
  // Base chains go last among deletions: nothing refers to them.
  tail.sort((a, b) => Number(isBaseChain(a.split(' ').pop() ?? '')) - Number(isBaseChain(b.split(' ').pop() ?? '')));
  // Map elements.
  for (const [map, wanted] of want.maps) {
    if (full) {
      elements.push(`flush map ${T} ${map}`);
      if (wanted.size > 0) elements.push(`add element ${T} ${map} { ${[...wanted].map(([k, v]) => `${k} : ${v}`).join(', ')} }`);
      continue;
    }
    const had = applied.maps.get(map) ?? new Map<string, string>();
    const del = [...had].filter(([k, v]) => wanted.get(k) !== v).map(([k]) => k);
    const add = [...wanted].filter(([k, v]) => had.get(k) !== v);
    if (del.length > 0) elements.push(`delete element ${T} ${map} { ${del.join(', ')} }`);
    if (add.length > 0) elements.push(`add element ${T} ${map} { ${add.map(([k, v]) => `${k} : ${v}`).join(', ')} }`);
  }
  const staleSets = full ? [...kernel.sets].filter((s) => s.startsWith('aff_') && !want.affinitySets.has(s)) : [...applied.affinitySets.keys()].filter((s) => !want.affinitySets.has(s));
  for (const s of staleSets) tail.push(`delete set ${T} ${s}`);
  return [...head, ...rules, ...elements, ...tail].join('\n') + '\n';
}

/** True when the script changes nothing but (re)declaring the table. */
export function isNoop(script: string): boolean {
  return script.trim().split('\n').length <= 1;
}
