/**
 * Deadlines that all lie the same time after they are added (the server's request timeout):
 * they expire in the order they were added, so one timer for the oldest serves them all, and
 * adding or cancelling one is a few pointer moves instead of a Node timer per request.
 *
 * Contract: single-threaded. `expire` of an entry runs at most once, never after `cancel`,
 * and no earlier than `ms` after `add`. While entries are pending one timer is armed (keeping
 * the process alive, as a timer per request would); with none pending it stays armed unref'd.
 */
export interface DeadlineEntry {
  /** Stops the entry from expiring; later calls do nothing. */
  cancel(): void;
}

class Node implements DeadlineEntry {
  prev: Node | undefined;
  next: Node | undefined;
  linked = true;
  cancelled = false;
  constructor(readonly list: DeadlineList, readonly at: number, readonly expire: () => void) {}
  cancel(): void { this.cancelled = true; this.list.unlink(this); }
}

export class DeadlineList {
  private head: Node | undefined;
  private tail: Node | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (ms, performance.now()). */
  private timerAt = 0;
  /** The armed timer is unref'd: nothing is pending. */
  private idle = false;

  constructor(readonly ms: number) {}

  /** `expire` runs `ms` from now unless the returned entry is cancelled first. */
  add(expire: () => void): DeadlineEntry {
    const n = new Node(this, performance.now() + this.ms, expire);
    if (this.tail) { this.tail.next = n; n.prev = this.tail; this.tail = n; } else { this.head = this.tail = n; }
    if (!this.timer) this.arm(n.at);
    else if (this.idle) { this.timer.ref(); this.idle = false; }
    return n;
  }

  /** @internal (Node.cancel) */
  unlink(n: Node): void {
    if (!n.linked) return;
    n.linked = false;
    if (n.prev) n.prev.next = n.next; else this.head = n.next;
    if (n.next) n.next.prev = n.prev; else this.tail = n.prev;
    n.prev = n.next = undefined;
    // The timer stays armed for a cancelled head (it re-arms for the next one when it fires,
    // which is never later than any deadline added since). With nothing left to wait for it no
    // longer keeps the process alive, and is reused (not recreated) by the next add.
    if (!this.head && this.timer && !this.idle) { this.timer.unref(); this.idle = true; }
  }

  private arm(at: number): void {
    this.timerAt = at;
    this.timer = setTimeout(this.fire, Math.max(0, Math.ceil(at - performance.now())));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.idle = false;
    const now = performance.now();
    // Expired entries leave the list before any expire() runs, which may add or cancel others.
    const due: Node[] = [];
    while (this.head && this.head.at <= now) {
      const n = this.head;
      this.unlink(n);
      due.push(n);
    }
    if (this.head && !this.timer) this.arm(this.head.at);
    // An expire() may cancel another entry that is due in this same round.
    for (const n of due) if (!n.cancelled) n.expire();
  };

  /** Pending entries (tests). */
  get size(): number {
    let k = 0;
    for (let n = this.head; n; n = n.next) k++;
    return k;
  }

  /** When the armed timer fires, or undefined (tests); an idle (unref'd) timer counts. */
  get armedAt(): number | undefined { return this.timer ? this.timerAt : undefined; }

  /** Stops the timer (the owner is shutting down); pending entries then never expire. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.idle = false;
  }
}
