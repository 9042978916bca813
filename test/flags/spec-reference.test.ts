// Checks our option tables and gate lists against the reference: $CORECTL_REFERENCE if set, else
// /work/shared/spec/daemons-reference.md, else the copy in test/flags/fixtures/ (for CI machines
// without the shared folder): the same option names, types and defaults, nothing
// forgotten and nothing invented silently (our own options carry `ours: true` and are excluded).
//
// Mapping of the reference's default notation to our tables:
//   '-'                    no default: our row has no `default` (the type's zero value)
//   []                     no default (empty namedCertKey list)
//   [a,b]                  stringSlice default "a,b"
//   none                   for maps: no default (empty map); for strings: the literal "none"
//   ''                     the empty string, written as default: ''
//   <pause_image>          PAUSE_IMAGE (registry.k8s.io/pause:3.10)
//   per-group preferred list (see Versioning)   the Versioning bullet's list as group/version
//   a<1%, b<2Mi            eviction map; compared as parsed maps
//   anything else          the same value after parsing both with the option's type
//                          (so 1m0s and 60s, 0.1 and 0.10 compare equal)
// Types: version[=true] is our 'version'; []api.Taint is our 'taints'.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { APISERVER_OPTIONS } from '../../src/flags/apiserver.js';
import { CONTROLLER_MANAGER_OPTIONS } from '../../src/flags/controller-manager.js';
import { NODEAGENT_OPTIONS, PAUSE_IMAGE } from '../../src/flags/nodeagent.js';
import { CONTROL_PLANE_GATES, NODEAGENT_GATES, type FeatureGateSpec } from '../../src/flags/feature-gates.js';
import { ADMISSION_PLUGINS, CONTROLLER_NAMES, CONTROLLERS_OFF_BY_DEFAULT } from '../../src/flags/known-names.js';
import type { OptionSpec } from '../../src/flags/option-spec.js';
import { valueType } from '../../src/flags/value-types.js';

const REF = [
  process.env['CORECTL_REFERENCE'],
  '/work/shared/spec/daemons-reference.md',
  'test/flags/fixtures/daemons-reference.md',
].find((p): p is string => p !== undefined && existsSync(p)) ?? '';

interface RefRow { name: string; type: string; def: string }

function section(md: string, heading: string): string {
  const start = md.indexOf(heading);
  if (start < 0) throw new Error(`heading not found: ${heading}`);
  const rest = md.slice(start + heading.length);
  const next = rest.search(/\n#{2,3} /);
  return next < 0 ? rest : rest.slice(0, next);
}

function tableRows(text: string): RefRow[] {
  const rows: RefRow[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('| -')) continue;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    const names = (cells[0] ?? '').split(',').map((s) => s.trim());
    const long = names.find((n) => n.startsWith('--'));
    if (!long) continue;
    rows.push({ name: long.slice(2), type: cells[1] ?? '', def: cells[2] ?? '' });
  }
  return rows;
}

function refType(type: string): string {
  if (type === 'version[=true]') return 'version';
  if (type === '[]api.Taint') return 'taints';
  return type;
}

function storageVersionsFromVersioning(md: string): string {
  const m = /The default preferred list[^:]*is: ([^\n]*)/.exec(md);
  if (!m) throw new Error('storage versions bullet not found');
  const items = (m[1] ?? '').replace(/\.$/, '').split(/, (?:and )?/);
  return items.map((item) => {
    const core = /^the core group (\S+)$/.exec(item);
    if (core) return core[1];
    const [group, version] = item.split(' ');
    return `${group}/${version}`;
  }).join(',');
}

/** Our expected default text for a reference cell; undefined = no default. */
function expectedDefault(row: RefRow, type: string, md: string): string | undefined {
  const d = row.def;
  if (d === '-' || d === '[]') return undefined;
  if (d === 'none' && type.startsWith('map')) return undefined;
  if (d === "''") return '';
  if (d === '<pause_image>') return PAUSE_IMAGE;
  if (d.startsWith('per-group preferred list')) return storageVersionsFromVersioning(md);
  if (/^\[.*\]$/.test(d)) return d.slice(1, -1);
  return d.replace(/,\s+/g, ',');
}

function same(type: string, a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const vt = valueType(type as OptionSpec['type']);
  return JSON.stringify(vt.parse(a)) === JSON.stringify(vt.parse(b));
}

const md = existsSync(REF) ? readFileSync(REF, 'utf8') : '';

const daemons: [string, string, readonly OptionSpec[]][] = [
  ['controller manager', '### Controller manager: options', CONTROLLER_MANAGER_OPTIONS],
  ['API server', '### API server: options', APISERVER_OPTIONS],
  ['node agent', '### Node agent: options', NODEAGENT_OPTIONS],
];

t.test('reference is readable', { skip: md === '' ? `no reference at ${REF}` : false }, async (t) => {
  for (const [label, heading, table] of daemons) {
    t.test(`${label}: names, types and defaults match the reference`, async (t) => {
      const ref = tableRows(section(md, heading));
      t.ok(ref.length > 50, `parsed ${ref.length} reference rows`);
      const ours = table.filter((o) => !o.ours);
      const refNames = new Set(ref.map((r) => r.name));
      const ourNames = new Set(ours.map((o) => o.name));
      t.same([...refNames].filter((n) => !ourNames.has(n)), [], 'no reference option is missing');
      t.same([...ourNames].filter((n) => !refNames.has(n)), [], 'no option was invented without ours: true');
      t.equal(ourNames.size, ours.length, 'no duplicate rows');
      for (const r of ref) {
        const o = ours.find((x) => x.name === r.name);
        if (!o) continue;
        t.equal(o.type, refType(r.type), `type of --${r.name}`);
        const want = expectedDefault(r, o.type, md);
        t.ok(same(o.type, o.default, want), `default of --${r.name}: ours ${JSON.stringify(o.default)}, reference ${JSON.stringify(r.def)}`);
      }
    });
  }

  t.test('every table default parses with its type', async (t) => {
    for (const [, , table] of daemons) {
      for (const o of table) {
        if (o.default !== undefined) t.doesNotThrow(() => valueType(o.type).parse(o.default ?? ''), `--${o.name}`);
      }
    }
  });

  const gateList = (label: string): { name: string; default: boolean; stage: string }[] => {
    const m = new RegExp(`${label}[^:]*: ([^\\n]*)`).exec(md);
    if (!m) throw new Error(`gate list not found: ${label}`);
    const stages: Record<string, string> = { A: 'alpha', B: 'beta', D: 'deprecated', none: 'none' };
    return [...(m[1] ?? '').matchAll(/(\w+) (true|false)\((A|B|D|none)\)/g)].map((g) => ({
      name: g[1] ?? '', default: g[2] === 'true', stage: stages[g[3] ?? ''] ?? '?',
    }));
  };
  const plain = (gs: readonly FeatureGateSpec[]) => gs.map((g) => ({ name: g.name, default: g.default, stage: g.stage }));

  t.test('feature gates of the API server and controller manager', async (t) => {
    const ref = gateList('Gates of the API server and the controller manager');
    t.ok(ref.length > 40);
    t.same(plain(CONTROL_PLANE_GATES), ref);
  });

  t.test('feature gates of the node agent', async (t) => {
    const ref = gateList('Gates of the node agent');
    t.ok(ref.length > 30);
    t.same(plain(NODEAGENT_GATES), ref);
  });

  t.test('controller names and admission plugins', async (t) => {
    const names = /All controller names: ([^\n]*)\./.exec(md)?.[1]?.split(', ') ?? [];
    t.equal(names.length, 32);
    t.same([...CONTROLLER_NAMES].sort(), [...names].sort());
    const off = /Disabled by default: ([^\n]*)\./.exec(md)?.[1]?.split(', ') ?? [];
    t.same([...CONTROLLERS_OFF_BY_DEFAULT].sort(), off.sort());
    const plugins = /Admission plugin names[^:]*: ([^\n]*)\./.exec(md)?.[1]?.split(', ') ?? [];
    t.ok(plugins.length > 30);
    // Beyond the reference: PodSecurity, Kubernetes' successor of PodSecurityPolicy (on by default there).
    const ours = ['PodSecurity'];
    t.same([...ADMISSION_PLUGINS].filter((n) => !ours.includes(n)).sort(), [...plugins].sort());
    t.notOk(ours.some((n) => plugins.includes(n)), 'our additions are not in the reference');
  });

  t.test('deprecated options in the reference are marked deprecated', async (t) => {
    t.ok(CONTROLLER_MANAGER_OPTIONS.find((o) => o.name === 'address')?.deprecated);
    t.ok(CONTROLLER_MANAGER_OPTIONS.find((o) => o.name === 'port')?.deprecated);
    t.ok(APISERVER_OPTIONS.find((o) => o.name === 'nodeagent-read-only-port')?.deprecated);
    t.ok(APISERVER_OPTIONS.find((o) => o.name === 'master-service-namespace')?.deprecated);
    t.ok(NODEAGENT_OPTIONS.find((o) => o.name === 'experimental-bootstrap-coreconfig')?.deprecated);
  });
});
