// The API server's list of options it parses but does not act on yet stays true: every option
// of the reference is either read somewhere outside src/flags and the other daemons' folders
// (its config field appears in the code) or listed with a reason, never both; a listed option
// set on the command line warns.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APISERVER_NOT_ACTED_ON, APISERVER_OPTIONS, parseApiserverArgs } from '../../src/flags/apiserver.js';

const root = fileURLToPath(new URL('../../../src/', import.meta.url));
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    // The other daemons' folders do not count: their own options may share a field name
    // (--enable-garbage-collector is both the API server's and the controller manager's).
    if (e.isDirectory()) return /\/(flags|controller-manager|nodeagent|scheduler)$/.test(p) ? [] : sources(p);
    return e.name.endsWith('.ts') ? [readFileSync(p, 'utf8')] : [];
  });
}
const code = sources(root).join('\n');
const camel = (name: string): string => name.replace(/[-_]([a-z0-9])/g, (_, c: string) => c.toUpperCase());
const used = (name: string): boolean => new RegExp(`\\b${camel(name)}\\b`).test(code);

t.test('every listed option exists and is unused; every unlisted option is read', async (t) => {
  const names = new Set<string>(APISERVER_OPTIONS.map((o) => o.name));
  for (const [name, why] of Object.entries(APISERVER_NOT_ACTED_ON)) {
    t.ok(names.has(name), `${name} is an API server option`);
    t.ok(why.length > 0, `${name} has a reason`);
    t.notOk(used(name), `--${name} is listed as not acted on, but the code reads ${camel(name)}: take it off the list`);
  }
  const unlisted = APISERVER_OPTIONS.filter((o) => !(o.name in APISERVER_NOT_ACTED_ON) && !used(o.name)).map((o) => o.name);
  t.same(unlisted, [], 'options nobody reads are listed as not acted on');
});

t.test('setting a listed option warns, naming it; defaults do not', async (t) => {
  const { warnings } = parseApiserverArgs(['--audit-log-path=/tmp/audit.log', '--target-ram-mb=100']);
  t.same(warnings, [
    'warning: --audit-log-path is accepted but not acted on yet: the audit backends are not built yet',
    'warning: --target-ram-mb is accepted but not acted on yet: cache sizes do not depend on it',
  ]);
  t.same(parseApiserverArgs([]).warnings, []);
  t.same(parseApiserverArgs(['--master-service-namespace=kube']).warnings.length, 1, 'a deprecated option warns once');
  t.match(parseApiserverArgs(['--master-service-namespace=kube']).warnings[0], /is deprecated: .*; it is not acted on: the kubernetes service always lives in default$/);
});
