// The short fuzz run of `make test` (`make fuzz` runs the long one): random malformed and
// mutated requests against a real API server process, over HTTP/1.1 and HTTP/2. Each of
// crashes, 5xx answers, non-Status errors on API paths, partial writes and hangs must be 0.
// FUZZ_SEED repeats a run; the seed is printed either way.
import t from 'tap';
import { formatReport, fuzzRun } from './fuzz-run.js';

const seed = Number(process.env['FUZZ_SEED'] ?? Math.floor(Math.random() * 2 ** 31));

t.test('fuzz (short run)', { timeout: 240_000 }, async (t) => {
  const r = await fuzzRun({ requests: Number(process.env['FUZZ_REQUESTS'] ?? 1500), seed });
  t.comment(formatReport(r));
  t.ok(r.requests > 1000, `${r.requests} requests answered`);
  t.equal(r.crashes, 0, 'no crash');
  t.equal(r.serverErrors, 0, 'no 5xx answer');
  t.equal(r.nonStatus, 0, 'every error on an API path is a Status');
  t.equal(r.partialWrites, 0, 'no write answered with an error was stored');
  t.equal(r.hangs, 0, 'every request answered');
});
