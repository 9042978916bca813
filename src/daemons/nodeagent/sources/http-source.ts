/**
 * --manifest-url: polled every --http-check-frequency with the --manifest-url-header headers.
 * The body is a Pod, a List/PodList of pods, or several YAML documents. A failed fetch keeps the
 * last good set (as Kubernetes does: a flaky URL must not kill running pods).
 */
import type { Logger } from 'pino';
import type { PodSet } from '../pod-set.js';
import type { Pod } from '../pod-types.js';
import { parseManifestText, staticPodFrom } from './static-pod.js';
import { abortableSleep } from '../../../util/abort.js';

export interface HttpSourceOptions {
  readonly url: string;
  /** --manifest-url-header: "name:value" entries, comma-separated. */
  readonly header: string;
  readonly nodeName: string;
  readonly periodMs: number;
  readonly podSet: PodSet;
  readonly log: Logger;
}

/** Parses the --manifest-url-header value into header pairs (same names repeat, in order). */
export function parseManifestHeaders(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const part of text.split(',')) {
    const t = part.trim();
    if (!t) continue;
    const i = t.indexOf(':');
    if (i <= 0) continue;
    out.push([t.slice(0, i).trim(), t.slice(i + 1).trim()]);
  }
  return out;
}

/** One fetch (for --runonce): the pods at the URL; a 404 means none. Throws on other failures. */
export async function fetchManifestUrl(url: string, header: string, nodeName: string, signal: AbortSignal): Promise<Pod[]> {
  const headers = new Headers();
  for (const [k, v] of parseManifestHeaders(header)) headers.append(k, v);
  const res = await fetch(url, { headers, signal });
  if (res.status === 404) return [];
  if (!res.ok) throw new Error(`--manifest-url ${url}: HTTP ${res.status}`);
  return parseManifestText(await res.text(), url).map((m) => staticPodFrom(m, 'http', nodeName, url));
}

export async function runHttpSource(o: HttpSourceOptions, signal: AbortSignal): Promise<void> {
  const headers = new Headers();
  for (const [k, v] of parseManifestHeaders(o.header)) headers.append(k, v);
  while (!signal.aborted) {
    try {
      const res = await fetch(o.url, { headers, signal: AbortSignal.any([signal, AbortSignal.timeout(Math.max(5000, o.periodMs))]) });
      if (res.status === 404) {
        o.podSet.replace('http', []);
      } else if (!res.ok) {
        o.log.warn({ url: o.url, status: res.status }, 'manifest URL answered with an error; keeping the last pods');
      } else {
        const text = await res.text();
        o.podSet.replace('http', parseManifestText(text, o.url).map((m) => staticPodFrom(m, 'http', o.nodeName, o.url)));
      }
    } catch (e) {
      if (signal.aborted) return;
      o.log.warn({ url: o.url, err: (e as Error).message }, 'reading --manifest-url failed; keeping the last pods');
    }
    await abortableSleep(o.periodMs, signal);
  }
}
