// Each daemon's list of options it parses but does not act on stays true: every option of the
// reference is either read by the code (the TypeScript syntax tree reads its config field as a
// property: test/helpers/option-reads.ts; a comment or a string never counts) or listed with a
// reason, never both; a listed option set on the command line warns, defaults do not.
import t from 'tap';
import { APISERVER_NOT_ACTED_ON, APISERVER_OPTIONS, parseApiserverArgs } from '../../src/flags/apiserver.js';
import { CONTROLLER_MANAGER_NOT_ACTED_ON, CONTROLLER_MANAGER_OPTIONS, parseControllerManagerArgs } from '../../src/flags/controller-manager.js';
import { NODEAGENT_NOT_ACTED_ON, NODEAGENT_OPTIONS, parseNodeagentArgs } from '../../src/flags/nodeagent.js';
import { camelCase, type OptionSpec } from '../../src/flags/option-spec.js';
import { join } from 'node:path';
import { propertyReads, propertyReadsIn, REPO_ROOT, type DaemonFolder } from '../helpers/option-reads.js';

const DAEMONS: readonly { daemon: DaemonFolder; options: readonly OptionSpec[]; list: Readonly<Record<string, string>> }[] = [
  { daemon: 'apiserver', options: APISERVER_OPTIONS, list: APISERVER_NOT_ACTED_ON },
  { daemon: 'controller-manager', options: CONTROLLER_MANAGER_OPTIONS, list: CONTROLLER_MANAGER_NOT_ACTED_ON },
  { daemon: 'nodeagent', options: NODEAGENT_OPTIONS, list: NODEAGENT_NOT_ACTED_ON },
];

for (const { daemon, options, list } of DAEMONS) {
  t.test(`${daemon}: every listed option exists and is unread; every unlisted option is read`, async (t) => {
    const reads = propertyReads(daemon);
    // An old name whose value the parser copies to its replacement is read where that one is.
    const read = (o: OptionSpec): boolean => reads.has(camelCase(o.name)) || (o.replacedBy !== undefined && reads.has(camelCase(o.replacedBy)));
    const byName = new Map(options.map((o) => [o.name, o]));
    for (const [name, why] of Object.entries(list)) {
      const o = byName.get(name);
      t.ok(o, `${name} is a ${daemon} option`);
      t.ok(why.length > 0, `${name} has a reason`);
      if (o) t.notOk(read(o), `--${name} is listed as not acted on, but the code reads ${camelCase(name)}: take it off the list`);
    }
    const unlisted = options.filter((o) => !(o.name in list) && !read(o)).map((o) => o.name);
    t.same(unlisted, [], 'options nobody reads are listed as not acted on');
  });
}

t.test('only reads of a property count: not comments, strings, object keys or assignments', async (t) => {
  const reads = propertyReadsIn([join(REPO_ROOT, 'test/flags/fixtures/option-reads-fixture.ts')]);
  for (const name of ['readName', 'destructuredName', 'renamedName', 'elementName', 'compoundName']) t.ok(reads.has(name), `${name} is read`);
  for (const name of ['commentOnlyName', 'stringOnlyName', 'templateOnlyName', 'literalKeyName', 'assignedName']) t.notOk(reads.has(name), `${name} is not a read`);
  t.ok(propertyReads('apiserver').has('profiling'), 'the API server reads --profiling (main.ts hands c.profiling to the filter chain)');
});

t.test('setting a listed option warns, naming it; defaults do not', async (t) => {
  const { warnings } = parseApiserverArgs(['--audit-log-path=/tmp/audit.log', '--target-ram-mb=100']);
  t.same(warnings, [
    'warning: --target-ram-mb is accepted but not acted on yet: cache sizes do not depend on it',
  ], 'an acted-on option (--audit-log-path) does not warn');
  t.same(parseApiserverArgs([]).warnings, []);
  t.same(parseApiserverArgs(['--master-service-namespace=kube']).warnings.length, 1, 'a deprecated option warns once');
  t.match(parseApiserverArgs(['--master-service-namespace=kube']).warnings[0], /is deprecated: .*; it is not acted on: the kubernetes service always lives in default$/);
  t.same(parseNodeagentArgs(['--cgroup-driver=systemd', '--chaos-chance=0.5']).warnings, [
    'warning: --chaos-chance is accepted but not acted on yet: no fault injection is built in',
  ]);
  t.same(parseNodeagentArgs([]).warnings, []);
  t.same(parseControllerManagerArgs(['--flex-volume-plugin-dir=/x', '--tls-sni-cert-key=a.crt,a.key']).warnings, [
    'warning: --flex-volume-plugin-dir is accepted but not acted on yet: no FlexVolume plugins are loaded',
  ]);
  t.same(parseControllerManagerArgs([]).warnings, []);
});
