import t from 'tap';
import { negotiateOutput } from '../../src/daemons/apiserver/rest/negotiate.js';
import { ApiError } from '../../src/api/meta/status.js';

t.test('Accept clauses: q orders them (ties keep header order), the first the server can satisfy wins', async (t) => {
  const pick = (accept: string | undefined, protobuf = true) => negotiateOutput(accept, 'resource', { protobuf });
  t.match(pick(undefined), { mediaType: 'application/json', target: 'object' });
  t.match(pick('*/*'), { mediaType: 'application/json' });
  t.match(pick('application/*'), { mediaType: 'application/json' });
  t.match(pick('application/vnd.kubernetes.protobuf,application/json'), { mediaType: 'application/vnd.kubernetes.protobuf' });
  t.match(pick('application/vnd.kubernetes.protobuf,application/json', false), { mediaType: 'application/json' }, 'protobuf only where an encoder exists');
  t.match(pick('application/json;q=0.5, application/yaml'), { mediaType: 'application/yaml' }, 'a higher q wins over header order');
  t.match(pick('application/yaml;q=0.9, application/json;q=0.9'), { mediaType: 'application/yaml' }, 'equal q: header order');
  t.match(pick('application/yaml;q=0, application/json'), { mediaType: 'application/json' }, 'q=0 means not acceptable');
  t.match(pick('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
    { mediaType: 'application/json', target: 'table', asVersion: 'v1' }, "kubectl get's Accept");
  t.match(pick('application/json;as=Table;v=v1;g=meta.k8s.io;q=0.1,application/json'), { target: 'object' }, 'the Table clause ranked last');
  t.match(pick('application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json'), { mediaType: 'application/json', target: 'object' }, 'no protobuf Table');
  t.match(pick('application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io'), { target: 'partial', asVersion: 'v1' });
  t.match(pick('application/json;pretty=1'), { mediaType: 'application/json', pretty: true }, 'pretty as a media type parameter');
  t.notOk(pick('application/json;pretty=0').pretty);
  t.throws(() => pick('text/html'), ApiError, 'nothing acceptable: 406');
  try { pick('application/json;as=Foo;g=meta.k8s.io;v=v1'); t.fail('unknown conversion is not acceptable'); } catch (e) { t.match(e, { status: { code: 406, reason: 'NotAcceptable' } }); }
  t.match(negotiateOutput('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json', 'discovery'), { target: 'discovery', asVersion: 'v2' });
});

t.test('repeated and alternating Accept headers keep their own answers', async (t) => {
  // Header values arrive as new strings on every request: build them afresh each time.
  const fresh = (s: string): string => [...s].join('');
  const table = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
  for (let i = 0; i < 3; i++) {
    t.match(negotiateOutput(fresh('application/json'), 'resource', { protobuf: true }), { mediaType: 'application/json', target: 'object' });
    t.match(negotiateOutput(fresh('application/json'), 'resource', { protobuf: true }), { target: 'object' }, 'the same header again');
    t.match(negotiateOutput(fresh(table), 'resource', { protobuf: true }), { target: 'table' });
    t.match(negotiateOutput(fresh('application/vnd.kubernetes.protobuf'), 'resource', { protobuf: true }), { mediaType: 'application/vnd.kubernetes.protobuf' });
    t.match(negotiateOutput(fresh('application/vnd.kubernetes.protobuf,application/json'), 'resource', { protobuf: false }), { mediaType: 'application/json' }, 'options are part of the answer');
    t.equal(negotiateOutput(fresh('application/json'), 'resource', { protobuf: true, pretty: true }).pretty, true);
    t.notOk(negotiateOutput(fresh('application/json'), 'resource', { protobuf: true }).pretty, 'and not pretty without it');
    t.match(negotiateOutput(undefined, 'resource', { protobuf: true }), { mediaType: 'application/json', target: 'object' });
    t.throws(() => negotiateOutput(fresh('text/html'), 'resource', { protobuf: true }), ApiError, 'a refused header is refused every time');
  }
});
