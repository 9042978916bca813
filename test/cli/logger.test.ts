// createLogger: JSON lines by default, text on request, child loggers, verbosity levels,
// periodic flushing to the destination.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, jsonLineToText, levelForVerbosity } from '../../src/util/logger.js';

async function waitFor(file: string, test: (s: string) => boolean): Promise<string> {
  const deadline = Date.now() + 5000;
  for (;;) {
    let text = '';
    try { text = readFileSync(file, 'utf8'); } catch { /* not created yet */ }
    if (test(text) || Date.now() > deadline) return text;
    await new Promise((r) => setTimeout(r, 20));
  }
}

t.test('verbosity maps to pino levels', async (t) => {
  t.equal(levelForVerbosity(0), 'info');
  t.equal(levelForVerbosity(1), 'info');
  t.equal(levelForVerbosity(2), 'debug');
  t.equal(levelForVerbosity(6), 'trace');
});

t.test('JSON lines with a component child, flushed within the flush frequency', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'corectl-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'log.jsonl');
  const log = createLogger({ destination: file, flushFrequencyMs: 50, verbosity: 2, base: { daemon: 'apiserver' } });
  log.child({ component: 'storage' }).debug({ key: '/registry/pods' }, 'opened');
  log.info({ token: 'secret' }, 'hello');
  const text = await waitFor(file, (s) => s.split('\n').length >= 3);
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(lines.length, 2);
  t.match(lines[0], { component: 'storage', msg: 'opened', daemon: 'apiserver', level: 20 });
  t.equal(lines[1]?.['token'], '[redacted]');
});

t.test('text format', async (t) => {
  t.match(jsonLineToText('{"level":30,"time":"2026-01-01T00:00:00.000Z","component":"x","msg":"hi","n":1}'), /^2026-01-01T00:00:00.000Z INFO \[x\] hi n=1\n$/);
  const dir = mkdtempSync(join(tmpdir(), 'corectl-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'log.txt');
  const log = createLogger({ destination: file, flushFrequencyMs: 50, format: 'text' });
  log.warn('careful');
  log.debug('hidden at verbosity 0');
  const text = await waitFor(file, (s) => s.includes('careful'));
  t.match(text, / WARN careful/);
  t.notMatch(text, /hidden/);
});
