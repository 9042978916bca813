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
