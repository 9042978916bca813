#!/usr/bin/env node
// Runs the compiled benchmarks one after another: every dist/bench/*.bench.js, or only those
// whose file name contains one of the arguments. Prints a header per bench; exits non-zero if
// any bench fails. Usage: node scripts/run-bench.mjs [name-fragment ...]
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const dir = join('dist', 'bench');
if (!existsSync(dir)) {
  console.error(`run-bench: ${dir} does not exist; build first (npx tsc -p tsconfig.json)`);
  process.exit(2);
}
const filters = process.argv.slice(2);
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.js'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (benches.length === 0) {
  console.error(`run-bench: no benchmark matches ${filters.join(' ') || '*'}`);
  process.exit(2);
}
const failed = [];
for (const file of benches) {
  console.log(`\n=== ${file.replace(/\.bench\.js$/, '')} ===`);
  const started = Date.now();
  const r = spawnSync(process.execPath, [join(dir, file)], { stdio: 'inherit' });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (r.status !== 0) {
    failed.push(file);
    console.log(`--- ${file} FAILED (exit ${r.status ?? r.signal}) after ${secs}s`);
  } else {
    console.log(`--- ${file} done in ${secs}s`);
  }
}
console.log(`\n${benches.length - failed.length} benchmarks ok, ${failed.length} failed${failed.length ? ': ' + failed.join(', ') : ''}`);
process.exit(failed.length ? 1 : 0);
