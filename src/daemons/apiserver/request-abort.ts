/**
 * A request's abort switch whose AbortSignal is made only when somebody asks for it. Most
 * requests finish without anyone listening for an abort, and an AbortController (an EventTarget)
 * is one of the dearer objects a request would otherwise allocate.
 *
 * Contract: `abort()` before the first `signal` read is remembered, and the signal handed out
 * later is already aborted with that reason; after a read, `abort()` aborts that signal. The
 * first abort wins, as with AbortController.
 */
export class RequestAbort {
  private controller: AbortController | undefined;
  private aborted = false;
  private reason: unknown;
  /** @internal Links of the OpenRequests list this request is on. */
  listPrev: RequestAbort | undefined;
  /** @internal */
  listNext: RequestAbort | undefined;
  /** @internal */
  listed = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/**
 * The requests not yet closed, so shutdown can abort them: a list threaded through their
 * RequestAbort objects. Adding and removing allocate nothing, and a removed request keeps no
 * link. (A Set would do, but as requests come and go its table is rehashed again and again, and
 * each table left behind keeps the requests it held reachable for young-generation GCs; see
 * util/h2-stream-table.ts.)
 *
 * Contract: a RequestAbort is on at most one list; delete of one not on the list does nothing.
 */
export class OpenRequests {
  private head: RequestAbort | undefined;
  private count = 0;

  get size(): number { return this.count; }

  add(a: RequestAbort): void {
    if (a.listed) return;
    a.listed = true;
    a.listNext = this.head;
    if (this.head) this.head.listPrev = a;
    this.head = a;
    this.count++;
  }

  delete(a: RequestAbort): void {
    if (!a.listed) return;
    a.listed = false;
    if (a.listPrev) a.listPrev.listNext = a.listNext; else this.head = a.listNext;
    if (a.listNext) a.listNext.listPrev = a.listPrev;
    a.listPrev = a.listNext = undefined;
    this.count--;
  }

  /** Aborts every request on the list with `reason` and empties it. */
  abortAll(reason: unknown): void {
    let a = this.head;
    this.head = undefined;
    this.count = 0;
    while (a) {
      const next = a.listNext;
      a.listed = false;
      a.listPrev = a.listNext = undefined;
      a.abort(reason);
      a = next;
    }
  }
}
