/**
 * Kubernetes resource quantities ("100Mi", "1.5G", "250m", "1e3"): syntax check and an
 * approximate numeric value. Exact arithmetic is not needed by the option layer.
 */

const QUANTITY = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$/;

const SUFFIX: Readonly<Record<string, number>> = {
  '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

export function isQuantity(text: string): boolean {
  return QUANTITY.test(text);
}

/** The quantity's value as a float; throws on bad syntax. */
export function parseQuantity(text: string): number {
  const m = QUANTITY.exec(text);
  if (!m) throw new Error(`"${text}" is not a quantity (for example 100Mi, 1G, 500m)`);
  const n = Number(m[1]);
  const suffix = m[2] ?? '';
  if (/^[eE]/.test(suffix)) return n * 10 ** Number(suffix.slice(1));
  return n * (SUFFIX[suffix] ?? 1);
}
