#!/usr/bin/env node
// make fuzz: the long fuzz run (FUZZ_REQUESTS, default 100 000; FUZZ_SEED to repeat one).
// Prints the counts and samples; exits non-zero when any of crashes, 5xx, non-Status errors,
// partial writes or hangs is not 0.
import { formatReport, fuzzRun } from '../dist/test/fuzz/fuzz-run.js';

const requests = Number(process.env.FUZZ_REQUESTS ?? 100000);
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const started = Date.now();
const r = await fuzzRun({ requests, seed, log: (line) => console.log(line), trace: process.env.FUZZ_TRACE === '1' });
console.log(formatReport(r));
console.log(`fuzz: ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(r.crashes + r.serverErrors + r.nonStatus + r.partialWrites + r.hangs === 0 ? 0 : 1);
