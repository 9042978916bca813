/** CPU sets in the kernel's list syntax ("0-3,6,8-9"), as sorted arrays of CPU numbers. */

export function parseCpuSet(text: string): number[] {
  const out = new Set<number>();
  for (const part of text.trim().split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`"${text}" is not a CPU list (for example 0-3,6)`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`"${text}" is not a CPU list: ${part} runs backwards`);
    for (let i = lo; i <= hi; i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

export function formatCpuSet(cpus: Iterable<number>): string {
  const xs = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < xs.length;) {
    let j = i;
    while (j + 1 < xs.length && xs[j + 1] === (xs[j] ?? 0) + 1) j++;
    parts.push(i === j ? String(xs[i]) : `${xs[i]}-${xs[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

export function without(a: readonly number[], b: readonly number[]): number[] {
  const drop = new Set(b);
  return a.filter((x) => !drop.has(x));
}
