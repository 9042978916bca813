import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { startApiserver, type StartedApiserver } from '../helpers/apiserver.js';
import { connectClient, type RestClient } from '../helpers/rest-client.js';
import { kubectl as findKubectl } from '../helpers/kubectl.js';
import { waitFor } from '../helpers/wait-for.js';

const BASE = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const KUBECTL = findKubectl(33);

type Dict = Record<string, unknown>;
interface Cause { field: string; message: string; reason: string }

function slice(name: string, extra: Dict = {}): Dict {
  return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name }, addressType: 'IPv4', endpoints: [], ...extra };
}

/** Creates an invalid slice and returns its causes as "field: message" (422 expected). */
async function causes(c: RestClient, t: Test, body: Dict): Promise<string[]> {
  const r = await c.request('POST', BASE, { body });
  t.equal(r.status, 422, `rejected: ${JSON.stringify(r.json?.message)}`);
  t.equal(r.json?.reason, 'Invalid');
  return ((r.json?.details?.causes ?? []) as Cause[]).map((x) => `${x.field}: ${x.message}`);
}

function runKubectl(api: StartedApiserver, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(KUBECTL!, ['--kubeconfig', api.coreconfigPath, ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(stderr || err.message)); else resolve(stdout);
    });
  });
}

const api = await startApiserver();
const c = await connectClient(api);
t.teardown(async () => { c.close(); await api.stop(); });

t.test('discovery serves discovery.k8s.io/v1 endpointslices', async (t) => {
  const groups = await c.request('GET', '/apis');
  const g = (groups.json.groups as Array<{ name: string; preferredVersion: { groupVersion: string } }>).find((x) => x.name === 'discovery.k8s.io');
  t.equal(g?.preferredVersion.groupVersion, 'discovery.k8s.io/v1');
  const list = await c.request('GET', '/apis/discovery.k8s.io/v1');
  const res = (list.json.resources as Array<Dict>).find((r) => r.name === 'endpointslices');
  t.match(res, { kind: 'EndpointSlice', namespaced: true, singularName: 'endpointslice' });
  t.same(res?.verbs, ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
});

t.test('defaults: port name "" and protocol TCP; generation 1; v1 drops deprecatedTopology', async (t) => {
  const r = await c.request('POST', BASE, {
    body: slice('defaults', {
      endpoints: [{ addresses: ['10.1.2.3'], conditions: { ready: true }, deprecatedTopology: { a: 'b' }, nodeName: 'node-1', zone: 'z1', hostname: 'web-0' }],
      ports: [{ port: 80 }, { name: 'dns', port: 53, protocol: 'UDP', appProtocol: 'dns' }],
    }),
  });
  t.equal(r.status, 201, JSON.stringify(r.json?.message));
  t.same(r.json.ports, [{ name: '', protocol: 'TCP', port: 80 }, { name: 'dns', protocol: 'UDP', port: 53, appProtocol: 'dns' }]);
  t.equal(r.json.metadata.generation, 1);
  t.notOk('deprecatedTopology' in r.json.endpoints[0], 'deprecatedTopology is cleared on v1 writes');
  t.match(r.json.endpoints[0], { addresses: ['10.1.2.3'], conditions: { ready: true }, nodeName: 'node-1', zone: 'z1', hostname: 'web-0' });
  const up = await c.request('PUT', `${BASE}/defaults`, { body: { ...r.json, endpoints: [{ addresses: ['10.1.2.4'] }] } });
  t.equal(up.status, 200);
  t.equal(up.json.metadata.generation, 2, 'a change of endpoints bumps the generation');
  const lab = await c.request('PUT', `${BASE}/defaults`, { body: { ...up.json, metadata: { ...up.json.metadata, labels: { 'endpointslice.kubernetes.io/managed-by': 'my-controller' } } } });
  t.equal(lab.status, 200, 'any valid managed-by value is accepted');
});

t.test('addressType: required, supported values, immutable', async (t) => {
  t.same(await causes(c, t, { ...slice('a'), addressType: undefined }), ['addressType: Required value']);
  t.same(await causes(c, t, slice('a', { addressType: 'IP' })), ['addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"']);
  const ok = await c.request('POST', BASE, { body: slice('immutable') });
  t.equal(ok.status, 201);
  const r = await c.request('PUT', `${BASE}/immutable`, { body: { ...ok.json, addressType: 'IPv6' } });
  t.equal(r.status, 422);
  t.same(r.json.details.causes.map((x: Cause) => `${x.field}: ${x.message}`), ['addressType: Invalid value: "IPv6": field is immutable']);
});

t.test('addresses are checked for the address type', async (t) => {
  const eps = (...addresses: string[]): Dict => ({ endpoints: [{ addresses }] });
  t.same(await causes(c, t, slice('a', eps())), ['endpoints[0].addresses: Required value: must contain at least 1 address']);
  t.same(await causes(c, t, slice('a', eps('2001:db8::1', 'foo'))), [
    'endpoints[0].addresses[0]: Invalid value: "2001:db8::1": must be a valid IPv4 address',
    'endpoints[0].addresses[1]: Invalid value: "foo": must be a valid IPv4 address',
    'endpoints[0].addresses[1]: Invalid value: "foo": must be a valid IP address',
  ]);
  t.same(await causes(c, t, slice('a', eps('127.0.0.1', '169.254.1.1', '0.0.0.0', '224.0.0.5'))), [
    'endpoints[0].addresses[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[0].addresses[1]: Invalid value: "169.254.1.1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
    'endpoints[0].addresses[2]: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)',
    'endpoints[0].addresses[3]: Invalid value: "224.0.0.5": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)',
  ]);
  t.same(await causes(c, t, slice('a', { addressType: 'IPv6', ...eps('10.0.0.1', '::1', 'fe80::1') })), [
    'endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address',
    'endpoints[0].addresses[1]: Invalid value: "::1": may not be in the loopback range (127.0.0.0/8, ::1/128)',
    'endpoints[0].addresses[2]: Invalid value: "fe80::1": may not be in the link-local range (169.254.0.0/16, fe80::/10)',
  ]);
  t.same(await causes(c, t, slice('a', { addressType: 'FQDN', ...eps('example.com', 'localhost', 'Bad.example.com') })), [
    'endpoints[0].addresses[1]: Invalid value: "localhost": should be a domain with at least two segments separated by dots',
    "endpoints[0].addresses[2]: Invalid value: \"Bad.example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  ]);
  const ok = await c.request('POST', BASE, { body: slice('v6', { addressType: 'IPv6', ...eps('2001:db8::7') }) });
  t.equal(ok.status, 201, 'a valid IPv6 slice');
});

t.test('limits: 100 addresses, 1000 endpoints, 8 zone hints', async (t) => {
  const many = Array.from({ length: 101 }, (_, i) => `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`);
  t.same(await causes(c, t, slice('a', { endpoints: [{ addresses: many }] })), ['endpoints[0].addresses: Too many: 101: must have at most 100 items']);
  const endpoints = Array.from({ length: 1001 }, (_, i) => ({ addresses: [`10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`] }));
  t.same(await causes(c, t, slice('a', { endpoints })), ['endpoints: Too many: 1001: must have at most 1000 items']);
  const zones = Array.from({ length: 9 }, (_, i) => ({ name: `z${i}` }));
  t.same(await causes(c, t, slice('a', { endpoints: [{ addresses: ['10.0.0.1'], hints: { forZones: zones } }] })), ['endpoints[0].hints.forZones: Too many: 9: must have at most 8 items']);
  t.same(await causes(c, t, slice('a', { endpoints: [{ addresses: ['10.0.0.1'], hints: { forZones: [{ name: 'a' }, { name: 'a' }] } }] })), ['endpoints[0].hints.forZones[1].name: Duplicate value: "a"']);
});

t.test('hostname, nodeName and ports', async (t) => {
  const errs = await causes(c, t, slice('a', {
    endpoints: [{ addresses: ['10.0.0.1'], hostname: 'Web_0', nodeName: 'Node_1' }],
    ports: [{ name: 'http', port: 80 }, { name: 'http', port: 81 }, { name: 'Bad', port: 82, protocol: 'HTTP', appProtocol: 'a/b/c' }],
  }));
  t.same(errs, [
    "endpoints[0].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    "endpoints[0].hostname: Invalid value: \"Web_0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    'ports[1].name: Duplicate value: "http"',
    "ports[2].name: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    'ports[2].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
    "ports[2].appProtocol: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
  ]);
  t.same(await causes(c, t, slice('a', { ports: [{ port: 1 }, { port: 2 }] })), ['ports[1].name: Duplicate value: ""'], 'two unnamed ports clash on the name ""');
  const label = await causes(c, t, { ...slice('a'), metadata: { name: 'a', labels: { 'endpointslice.kubernetes.io/managed-by': 'not valid!' } } });
  t.match(label, [/^metadata\.labels: Invalid value: "not valid!": a valid label must be an empty string/], 'the managed-by label is validated as any label value');
});

t.test('table columns as kubectl shows them', async (t) => {
  const many = await c.request('POST', BASE, {
    body: slice('many', {
      endpoints: [{ addresses: ['10.2.0.1'] }, { addresses: ['10.2.0.2'] }, { addresses: ['10.2.0.3'] }, { addresses: ['10.2.0.4'] }],
      ports: [{ name: 'a', port: 80 }, { name: 'x' }, { name: 'b', port: 82 }, { name: 'c', port: 83 }],
    }),
  });
  t.equal(many.status, 201, JSON.stringify(many.json?.message));
  t.equal((await c.request('POST', BASE, { body: slice('empty') })).status, 201);
  const r = await c.request('GET', BASE, { accept: TABLE });
  t.same(r.json.columnDefinitions.map((d: { name: string }) => d.name), ['Name', 'AddressType', 'Ports', 'Endpoints', 'Age']);
  const row = (name: string): unknown[] => (r.json.rows as Array<{ cells: unknown[] }>).find((x) => x.cells[0] === name)!.cells;
  t.same(row('many').slice(0, 4), ['many', 'IPv4', '80,x,82 + 1 more...', '10.2.0.1,10.2.0.2,10.2.0.3 + 1 more...']);
  t.same(row('empty').slice(0, 4), ['empty', 'IPv4', '<unset>', '<unset>']);
});

t.test('kubectl get endpointslices', { skip: KUBECTL ? false : 'kubectl.1.33 not installed' }, async (t) => {
  const out = await runKubectl(api, 'get', 'endpointslices', 'empty');
  t.match(out.split('\n')[0], /^NAME\s+ADDRESSTYPE\s+PORTS\s+ENDPOINTS\s+AGE$/);
  t.match(out.split('\n')[1], /^empty\s+IPv4\s+<unset>\s+<unset>\s+\d+s$/);
});

t.test('the kubernetes service has an EndpointSlice next to its Endpoints', async (t) => {
  // The default test server advertises 127.0.0.1, which an EndpointSlice may not carry.
  const s = await waitFor('kubernetes slice', async () => { const r = await c.request('GET', `${BASE}/kubernetes`); return r.status === 200 && r.json; });
  // The secure port as configured (the service's targetPort), not the test's bound port.
  const port = (await c.request('GET', '/api/v1/namespaces/default/services/kubernetes')).json.spec.ports[0].targetPort as number;
  t.same(s.metadata.labels, { 'kubernetes.io/service-name': 'kubernetes' }, 'no managed-by label: no controller owns it');
  t.equal(s.addressType, 'IPv4');
  t.same(s.ports, [{ name: 'https', protocol: 'TCP', port }]);
  t.same(s.endpoints ?? [], [], 'a loopback advertise address is left out');
  t.equal((await c.request('GET', '/api/v1/namespaces/default/endpoints/kubernetes')).json.subsets, undefined, 'and out of the Endpoints');

  const other = await startApiserver({ args: ['--advertise-address=192.0.2.10'] });
  const oc = await connectClient(other);
  t.teardown(async () => { oc.close(); await other.stop(); });
  const s2 = await waitFor('kubernetes slice', async () => { const r = await oc.request('GET', `${BASE}/kubernetes`); return r.status === 200 && r.json; });
  const ep2 = await oc.request('GET', '/api/v1/namespaces/default/endpoints/kubernetes');
  t.same(s2.endpoints, [{ addresses: ['192.0.2.10'], conditions: { ready: true } }], 'the advertise address, ready');
  t.same(s2.ports, [{ name: 'https', protocol: 'TCP', port: ep2.json.subsets[0].ports[0].port }], 'the secure port, as in the Endpoints');
});
