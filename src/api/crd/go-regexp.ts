/**
 * Schema `pattern`s are Go (RE2) regular expressions. This compiles one into a JavaScript RegExp:
 * RE2-only syntax is translated (leading `(?i)`-style flags, `(?P<name>`, `\A`, `\z`, POSIX
 * classes) and what RE2 refuses (look-arounds, back-references) is refused with RE2's words, so
 * a CRD that Kubernetes rejects is rejected here too.
 */

export type CompiledPattern = { re: RegExp; error?: undefined } | { re?: undefined; error: string };

const POSIX_CLASSES: Record<string, string> = {
  alpha: 'A-Za-z', digit: '0-9', alnum: '0-9A-Za-z', upper: 'A-Z', lower: 'a-z', space: '\\t\\n\\v\\f\\r ',
  xdigit: '0-9A-Fa-f', word: '0-9A-Za-z_', blank: '\\t ', punct: '!-\\/:-@\\[-`{-~', cntrl: '\\x00-\\x1f\\x7f',
};

type Translated = { source: string; flags: string } | { error: string };

function translate(p: string): Translated {
  let flags = '';
  let i = 0;
  const lead = /^\(\?([imsU]+)\)/.exec(p);
  if (lead) {
    for (const f of lead[1]!) if (f !== 'U' && !flags.includes(f)) flags += f;
    i = lead[0].length;
  }
  let out = '';
  let inClass = false;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '\\') {
      const n = p[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(n)) return { error: `invalid escape sequence: \`\\${n}\`` };
      if (!inClass && n === 'z') out += '$';
      else if (!inClass && n === 'A') out += '^';
      else out += c + n;
      i += 2;
      continue;
    }
    if (inClass) {
      if (c === '[' && p[i + 1] === ':') {
        const end = p.indexOf(':]', i + 2);
        const cls = end > 0 ? POSIX_CLASSES[p.slice(i + 2, end)] : undefined;
        if (cls !== undefined) { out += cls; i = end + 2; continue; }
      }
      if (c === ']') inClass = false;
      out += c;
      i++;
      continue;
    }
    if (c === '[') {
      inClass = true;
      out += c;
      i++;
      if (p[i] === '^') { out += '^'; i++; }
      // RE2 (like POSIX) reads a ']' right after '[' or '[^' as a literal.
      if (p[i] === ']') { out += '\\]'; i++; }
      continue;
    }
    if (c === '(' && p[i + 1] === '?') {
      const look = /^\(\?(=|!|<=|<!)/.exec(p.slice(i));
      if (look) return { error: `invalid or unsupported Perl syntax: \`${look[0]}\`` };
      if (p.startsWith('(?P<', i)) { out += '(?<'; i += 4; continue; }
    }
    out += c;
    i++;
  }
  return { source: out, flags };
}

const cache = new Map<string, CompiledPattern>();
const CACHE_LIMIT = 2000;

/** Compiles a Go regular expression; `error` reads like Go's regexp error text. */
export function compileGoRegexp(pattern: string): CompiledPattern {
  const hit = cache.get(pattern);
  if (hit) return hit;
  let result: CompiledPattern;
  const t = translate(pattern);
  if ('error' in t) {
    result = { error: `error parsing regexp: ${t.error}` };
  } else {
    // Unicode mode first (\p{L} needs it); it refuses some escapes RE2 accepts, so fall back.
    try {
      result = { re: new RegExp(t.source, `${t.flags}u`) };
    } catch {
      try {
        result = { re: new RegExp(t.source, t.flags) };
      } catch (e) {
        result = { error: `error parsing regexp: ${(e as Error).message}` };
      }
    }
  }
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(pattern, result);
  return result;
}
