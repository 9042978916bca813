/**
 * Finds the versioned kubectl binaries (kubectl.1.27 ... kubectl.1.33). They live next to the
 * real `kubectl` dispatcher (Google's Cloud SDK keeps them in its bin directory), which is not
 * necessarily on PATH; PATH is searched too.
 */
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

function searchDirs(): string[] {
  const path = (process.env['PATH'] ?? '').split(delimiter).filter(Boolean);
  const dirs = new Set<string>(path);
  for (const d of path) {
    const k = join(d, 'kubectl');
    if (existsSync(k)) { try { dirs.add(dirname(realpathSync(k))); } catch { /* dangling link */ } }
  }
  dirs.add('/usr/lib/google-cloud-sdk/bin');
  return [...dirs];
}

let cache: Map<number, string> | undefined;

/** Every versioned kubectl found, by minor version. */
export function kubectlBinaries(): Map<number, string> {
  if (cache) return cache;
  cache = new Map();
  for (const d of searchDirs()) {
    let names: string[] = [];
    try { names = readdirSync(d); } catch { continue; }
    for (const n of names) {
      const m = /^kubectl\.1\.(\d+)$/.exec(n);
      if (m && !cache.has(Number(m[1]))) cache.set(Number(m[1]), join(d, n));
    }
  }
  return cache;
}

/** The path of kubectl.1.<minor>, or undefined when it is not installed. */
export function kubectl(minor: number): string | undefined {
  return kubectlBinaries().get(minor);
}
