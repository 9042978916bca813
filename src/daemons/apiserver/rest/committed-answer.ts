/**
 * The answer to a write the store has committed. From the commit on, the write happened: no
 * failure while answering (a header value, an encoding, a conversion) may tell the client it did
 * not, or a client would retry a create that exists and take every later answer for a failure.
 * As Kubernetes does once its store returned, the client gets the object that was written.
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { WrittenJson } from '../../../storage/object-store-types.js';
import type { OutputFormat } from './negotiate.js';
import { toServed, type Scope } from './scope.js';
import { respondWritten } from './served-json.js';
import { goJsonText } from '../../../api/codec/go-json.js';

/**
 * Test-only fault injection on the write path. Unarmed (always, outside tests) a hook costs one
 * property read; tests arm one and disarm it when done.
 */
export const writeFailpoints: {
  /** Runs after the store committed a create, update or patch, before the answer is written. */
  afterCommit?: (s: Scope) => void;
} = {};

/** Writes the answer to a committed write: as negotiated, else the written object as plain JSON. */
export function answerCommitted(s: Scope, code: number, object: KubeObject, fmt: OutputFormat, written: WrittenJson | undefined): void {
  answerAfterCommit(s, code, () => respondWritten(s, code, object, fmt, written), () => {
    try { return toServed(s, object); } catch { return object; } // the object as the registry returned it
  });
}

/**
 * Runs `answer` for a committed write (a subresource's: scale, binding, finalize, eviction);
 * when it fails, answers `code` with `plain()` as compact JSON, without anything that could
 * fail again (warnings, other encodings).
 */
export function answerAfterCommit(s: Scope, code: number, answer: () => void, plain: () => unknown): void {
  try {
    writeFailpoints.afterCommit?.(s);
    answer();
  } catch (e) {
    s.ctx.log.error({ err: e, path: s.ctx.info.path }, 'answering a committed write failed: the answer goes out as plain JSON');
    const res = s.res;
    if (res.headersSent) { if (!res.writableEnded) res.end(); return; }
    let body: Buffer;
    try { body = Buffer.from(goJsonText(plain()) + '\n', 'utf8'); } catch { body = Buffer.from('{}\n'); }
    for (const h of ['Warning', 'Content-Encoding', 'Vary']) res.removeHeader(h);
    res.statusCode = code;
    res.setHeader('Cache-Control', 'no-cache, private');
    res.setHeader('Content-Type', 'application/json');
    res.setHeader('Content-Length', String(body.length));
    res.end(body);
  }
}
