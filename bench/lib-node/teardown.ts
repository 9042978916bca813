/**
 * Teardown for node benches: cleanups registered as things start, run once in reverse order
 * at the end, on SIGINT/SIGTERM (then exit 130/143) and on an uncaught exception or unhandled
 * rejection (then exit 1). A second Ctrl-C while cleaning up does not cut the cleanup short;
 * the third forces an exit.
 */
export class Teardown {
  private readonly steps: Array<{ what: string; fn: () => Promise<void> | void }> = [];
  private running: Promise<void> | undefined;
  private interrupts = 0;

  constructor() {
    const onSignal = (sig: NodeJS.Signals): void => {
      this.interrupts++;
      if (this.interrupts >= 3) process.exit(sig === 'SIGINT' ? 130 : 143);
      if (this.interrupts > 1) return;
      console.error(`\n${sig}: tearing down (Ctrl-C twice more to force)`);
      void this.run().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const onFatal = (e: unknown): void => {
      console.error('fatal:', e instanceof Error ? e.stack ?? e.message : e);
      void this.run().finally(() => process.exit(1));
    };
    process.on('uncaughtException', onFatal);
    process.on('unhandledRejection', onFatal);
  }

  /** Registers a cleanup; cleanups run last-registered first. */
  add(what: string, fn: () => Promise<void> | void): void {
    this.steps.push({ what, fn });
  }

  /** Runs every cleanup once (later calls wait for the same run); failures are printed, not thrown. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const s of this.steps.splice(0).reverse()) {
        try {
          await s.fn();
        } catch (e) {
          console.error(`teardown: ${s.what} failed: ${(e as Error).message}`);
        }
      }
    })();
    return this.running;
  }
}
