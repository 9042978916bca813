/**
 * Exact range counts without scanning LevelDB.
 *
 * A limited range must report how many keys the WHOLE range holds at the read revision. Counting
 * k/ in LevelDB reads every value in the range (~150k keys/s with 1 KiB values), and a paginated
 * LIST pays it on every page. Instead: count the keys of the in-memory index (which reflects every
 * DECIDED write, `decidedRevision`), then undo the creates and deletes decided after the read
 * revision, which this ring remembers. Updates do not change counts and are not recorded.
 *
 *   index at decided revision 120 holds /a /b /c;  ring: create /c @118, delete /d @119
 *   count('/', prefix) at revision 117 = 3 - 1 (create /c undone) + 1 (delete /d undone) = 3
 *
 * The ring keeps the last `capacity` creates/deletes; a revision older than what it covers
 * answers undefined and the caller falls back to LevelDB.
 */
import type { KeySpan } from './reads.js';

export class RangeCounter {
  private revs: number[] = [];
  private keys: string[] = [];
  private deltas: number[] = [];
  private head = 0;
  /** Every create/delete decided after this revision is in the ring. */
  private floor: number;

  constructor(decidedRevision: number, private readonly capacity = 100_000) {
    this.floor = decidedRevision;
  }

  /** A create (+1) or delete (-1) of `key` was decided at `rev`. */
  record(rev: number, key: string, delta: 1 | -1): void {
    this.revs.push(rev);
    this.keys.push(key);
    this.deltas.push(delta);
    if (this.revs.length - this.head > this.capacity) {
      this.floor = this.revs[this.head]!;
      this.head++;
      if (this.head > this.capacity) {
        this.revs = this.revs.slice(this.head);
        this.keys = this.keys.slice(this.head);
        this.deltas = this.deltas.slice(this.head);
        this.head = 0;
      }
    }
  }

  /**
   * The number of keys in `span` at revision `rev`, given the live keys as of the latest decided
   * write. Must be called synchronously with reading `liveKeys` (no write decided in between).
   */
  countAt(liveKeys: Iterable<string>, span: KeySpan, rev: number): number | undefined {
    if (rev < this.floor) return undefined;
    const inSpan = (k: string): boolean => k >= span.start && (span.end === undefined || k < span.end);
    let n = 0;
    for (const k of liveKeys) if (inSpan(k)) n++;
    for (let i = this.revs.length - 1; i >= this.head && this.revs[i]! > rev; i--) {
      if (inSpan(this.keys[i]!)) n -= this.deltas[i]!;
    }
    return n;
  }
}
