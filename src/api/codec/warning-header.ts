/**
 * `Warning: 299 - "<text>"` response headers, encoded as Kubernetes' warning recorder and
 * NewWarningHeader do (k8s.io/apiserver endpoints/filters/warning.go, apimachinery util/net):
 *  - the text is quoted with only `"` and `\` escaped; anything else goes out as its UTF-8 bytes;
 *  - a text with a control character (C0, DEL, C1) is not sent at all;
 *  - texts are deduplicated, in order; once they pass 4096 characters in all, every text is cut
 *    to 256 characters and texts after the limit are dropped.
 * Node writes header strings byte per character (latin1) on HTTP/1.1 and HTTP/2 alike and refuses
 * characters above U+00FF, so the UTF-8 bytes are handed over as a latin1 string: the value can
 * never make setHeader throw, whatever the text holds (a field name from a request body, say).
 */

const TRUNCATE_AT_TOTAL = 4 * 1024;
const TRUNCATE_ITEM = 256;

/** C0 controls, DEL and C1 controls (Go's unicode.IsControl). */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** The quoted header value of one text, as a latin1 string of its UTF-8 bytes; undefined when Kubernetes would not send it. */
export function warningHeaderValue(text: string, agent = '-'): string | undefined {
  if (text === '' || CONTROL.test(text)) return undefined;
  const quoted = `299 ${agent} "${text.replace(/["\\]/g, '\\$&')}"`;
  // Pure ASCII (nearly every warning) is its own latin1 form. Lone surrogates (a JSON escape
  // like "\ud800" in a field name) become U+FFFD, as Go's JSON decoder makes them.
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(quoted) ? quoted : Buffer.from(quoted, 'utf8').toString('latin1');
}

/** Code points of a text (Go counts runes, not UTF-16 units). */
function runeLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function cut(text: string, runes: number): string {
  return Array.from(text).slice(0, runes).join('');
}

/** The Warning header values for a request's warning texts (see the file comment for the rules). */
export function warningHeaderValues(texts: readonly string[]): string[] {
  const seen = new Set<string>();
  const ordered: string[] = [];
  for (const t of texts) if (t !== '' && !seen.has(t)) { seen.add(t); ordered.push(t); }
  const out: string[] = [];
  let written = 0;
  let i = 0;
  for (; i < ordered.length; i++) {
    const text = ordered[i]!;
    const value = warningHeaderValue(text);
    if (value === undefined) continue;
    const len = runeLength(text);
    if (written + len > TRUNCATE_AT_TOTAL) break;
    written += len;
    out.push(value);
  }
  if (i === ordered.length) return out;
  // Past the limit: the texts so far and this one are sent again cut short; a later one only
  // while the total is below the limit (the recorder drops what comes after it).
  const overflowAt = i;
  out.length = 0;
  written = 0;
  for (let j = 0; j < ordered.length; j++) {
    if (j > overflowAt && written >= TRUNCATE_AT_TOTAL) break;
    const text = ordered[j]!;
    const short = runeLength(text) > TRUNCATE_ITEM ? cut(text, TRUNCATE_ITEM) : text;
    const value = warningHeaderValue(short);
    if (value === undefined) continue;
    written += runeLength(short);
    out.push(value);
  }
  return out;
}
