/**
 * Side effects of one write (IP/port allocations) that must be undone when the write fails and
 * finished (old values released) when it succeeds. Hooks register them; the registry runs them.
 */
export class WriteTxn {
  private rollbacks: Array<() => Promise<void>> = [];
  private commits: Array<() => Promise<void>> = [];

  onRollback(fn: () => Promise<void>): void { this.rollbacks.push(fn); }
  onCommit(fn: () => Promise<void>): void { this.commits.push(fn); }

  async rollback(): Promise<void> {
    const fns = this.rollbacks.reverse();
    this.rollbacks = []; this.commits = [];
    for (const fn of fns) await fn().catch(() => undefined);
  }

  async commit(): Promise<void> {
    const fns = this.commits;
    this.rollbacks = []; this.commits = [];
    for (const fn of fns) await fn().catch(() => undefined);
  }
}
