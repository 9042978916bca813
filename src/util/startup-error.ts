/** A start-up failure caused by one option: printed as one line naming it. */
export class StartupError extends Error {
  override readonly name = 'StartupError';
  constructor(readonly option: string, message: string, options?: { cause?: unknown }) {
    super(`${option}: ${message}`, options);
  }
}
