/** A small seeded PRNG (mulberry32), so a fuzz run is repeated exactly from its seed. */
export class Prng {
  private s: number;
  constructor(seed: number) { this.s = seed >>> 0; }
  /** [0, 1). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number { return Math.floor(this.next() * n); }
  chance(p: number): boolean { return this.next() < p; }
  pick<T>(list: readonly T[]): T { return list[this.int(list.length)]!; }
}
