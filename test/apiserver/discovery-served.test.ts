// What discovery offers is served: every verb listed for a subresource reaches a handler (asked
// of an object that does not exist, the answer is the object's 404, a 400 or a 503, or the
// token subresource's own 404 saying the server runs without a signing key; never 405
// MethodNotAllowed nor the 404 of an unknown path), and every resource that lists `list` lists.
// kubectl and client libraries trust discovery: a verb offered but refused breaks them.
import t from 'tap';
import { startApiserver } from '../helpers/apiserver.js';
import { connectClient } from '../helpers/rest-client.js';

const METHOD: Record<string, string> = { get: 'GET', update: 'PUT', patch: 'PATCH', create: 'POST', delete: 'DELETE' };

const a = await startApiserver({ args: ['--runtime-config=extensions/v1beta1=true'] });
const c = await connectClient(a);
t.teardown(async () => { c.close(); await a.stop(); });

interface ApiResource { name: string; namespaced: boolean; kind: string; verbs: string[] }

const lists: [group: string, version: string, base: string][] = [['', 'v1', '/api/v1']];
for (const g of (await c.request('GET', '/apis')).json.groups as { name: string; versions: { version: string }[] }[]) {
  for (const v of g.versions) lists.push([g.name, v.version, `/apis/${g.name}/${v.version}`]);
}

t.test('every subresource verb discovery lists reaches a handler', async (t) => {
  let checked = 0;
  for (const [, version, base] of lists) {
    const resources = (await c.request('GET', base)).json.resources as ApiResource[];
    for (const r of resources) {
      const [plural, sub] = r.name.split('/');
      if (!sub) continue;
      const ns = r.namespaced ? '/namespaces/default' : '';
      for (const verb of r.verbs) {
        const method = METHOD[verb];
        if (!method) continue;
        const path = `${base}${ns}/${plural}/no-such-object/${sub}${sub === 'proxy' ? '/' : ''}`;
        const body = method === 'GET' || method === 'DELETE' ? undefined : method === 'PATCH' ? '{}' : JSON.stringify({ apiVersion: version, kind: r.kind, metadata: { name: 'no-such-object' } });
        const out = await c.request(method, path, body === undefined ? {} : { raw: body, contentType: method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' });
        const what = `${method} ${base} ${r.name}`;
        t.not(out.status, 405, `${what}: not MethodNotAllowed (${out.json?.message ?? ''})`);
        // serviceaccounts/token says it is off without --service-account-signing-key-file.
        if (out.status === 404) t.match(out.json?.message ?? '', /not found|is not served: the API server was started without/, `${what}: the object's 404, not an unknown path's`);
        t.not(out.json?.message, 'the server could not find the requested resource', `${what}: a handler answered`);
        checked++;
      }
    }
  }
  t.ok(checked > 40, `${checked} subresource verbs checked`);
});

t.test('every resource that lists `list` lists', async (t) => {
  for (const [, , base] of lists) {
    const resources = (await c.request('GET', base)).json.resources as ApiResource[];
    for (const r of resources) {
      if (r.name.includes('/') || !r.verbs.includes('list')) continue;
      const out = await c.request('GET', `${base}/${r.name}`);
      t.equal(out.status, 200, `list ${base} ${r.name}`);
      t.match(out.json?.kind ?? '', /List$/, `${base} ${r.name}: a list`);
    }
  }
});
