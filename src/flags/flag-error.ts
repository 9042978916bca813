/** A command-line problem: one line for stderr, naming the option; the CLI exits with code 2. */
export class FlagError extends Error {
  /** Option name without dashes, when the problem belongs to one option. */
  readonly option: string | undefined;

  constructor(message: string, option?: string) {
    super(message);
    this.name = 'FlagError';
    this.option = option;
  }
}
