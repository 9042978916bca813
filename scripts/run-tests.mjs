#!/usr/bin/env node
// Runs the tap suite over the compiled tests and ends with the line "N passed, N failed".
// Usage: node scripts/run-tests.mjs [test files or folders under dist/test ...]
// Counting: every test point below file level (subtests and assertions) is counted once;
// a file that fails without reporting any failing point (crash, timeout) counts as one failure.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const targets = args.length ? args : ['dist/test'];
for (const t of targets) {
  if (!existsSync(t)) { console.error(`run-tests: no such test path: ${t}`); process.exit(2); }
}
// tap bakes its plugin set into node_modules when it is built; a fresh `npm ci` has the default
// set, whose TypeScript loader cannot run with TypeScript 7. Rebuild once whenever our plugin
// configuration (package.json "tap.plugin") is not what was last built.
// (`npm ci` puts the default set back, so the stamp also names the install it was made for.)
const installed = existsSync('node_modules/.package-lock.json') ? statSync('node_modules/.package-lock.json').mtimeMs : 0;
const wanted = JSON.stringify({ plugins: JSON.parse(readFileSync('package.json', 'utf8')).tap?.plugin ?? [], installed });
const stamp = '.tap/corectl-plugins.json';
if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== wanted) {
  const b = spawnSync(process.execPath, ['node_modules/tap/dist/esm/run.mjs', 'build'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (b.status !== 0) { console.error('run-tests: tap build failed'); console.log('0 passed, 1 failed'); process.exit(1); }
  mkdirSync('.tap', { recursive: true });
  writeFileSync(stamp, wanted);
}

// Folders expand to their *.test.js files, so shared helpers and fixtures are never run as tests.
function testFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).sort().flatMap((n) => {
    const p = join(path, n);
    return statSync(p).isDirectory() ? testFiles(p) : n.endsWith('.test.js') ? [p] : [];
  });
}
const files = targets.flatMap(testFiles);
if (files.length === 0) { console.error(`run-tests: no *.test.js files under ${targets.join(' ')}`); process.exit(2); }
const child = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', '--reporter=tap', ...files], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, FORCE_COLOR: '0' },
});
let passed = 0, failed = 0, fileFailedWithoutPoints = 0, pointFailuresInFile = 0, buf = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  buf += chunk.toString('utf8');
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    const m = /^( *)(not )?ok \d+/.exec(line);
    if (!m) continue;
    const skipped = /# (SKIP|TODO)\b/i.test(line);
    if (m[1].length === 0) { // file level
      if (m[2] && pointFailuresInFile === 0) fileFailedWithoutPoints++;
      pointFailuresInFile = 0;
      continue;
    }
    if (skipped) continue;
    if (m[2]) { failed++; pointFailuresInFile++; } else passed++;
  }
});
child.on('close', (code, signal) => {
  failed += fileFailedWithoutPoints;
  if ((code !== 0 || signal) && failed === 0) failed = 1;
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed > 0 ? 1 : 0);
});
