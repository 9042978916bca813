/**
 * The registries file (k3s' registries.yaml shape) as containerd configuration: mirrors and TLS
 * as hosts.toml files, credentials as the CRI plugin's registry.configs auth, bad files refused.
 */
import t from 'tap';
import { containerdRegistryConfig, parseRegistries } from '../../../src/daemons/nodeagent/images/registries.js';

t.test('mirrors, TLS and credentials', async (t) => {
  const r = parseRegistries(`
mirrors:
  docker.io:
    endpoint:
      - "http://127.0.0.1:5000"
      - "mirror.corp:5443"
  "*":
    endpoint: ["https://all.corp"]
configs:
  "mirror.corp:5443":
    auth: { username: u, password: "p\\"w" }
    tls: { ca_file: /etc/ca.pem, cert_file: /c.pem, key_file: /k.pem }
  private.corp:
    tls: { insecure_skip_verify: true }
`);
  const c = containerdRegistryConfig(r, '/data/certs.d');
  // A mirror with TLS settings is also reachable as a registry of its own, with the same TLS.
  t.same(c.hosts.map((h) => h.path), ['docker.io/hosts.toml', '_default/hosts.toml', 'mirror.corp:5443/hosts.toml', 'private.corp/hosts.toml']);
  t.equal(c.hosts[0]?.content, [
    'server = "https://registry-1.docker.io"',
    '',
    '[host."http://127.0.0.1:5000"]',
    '  capabilities = ["pull", "resolve"]',
    '',
    '[host."https://mirror.corp:5443"]',
    '  capabilities = ["pull", "resolve"]',
    '  ca = "/etc/ca.pem"',
    '  client = [["/c.pem", "/k.pem"]]',
    '',
  ].join('\n'));
  t.equal(c.hosts[3]?.content, 'server = "https://private.corp"\nskip_verify = true\n');
  t.equal(c.toml, [
    '[plugins."io.containerd.grpc.v1.cri".registry]',
    '  config_path = "/data/certs.d"',
    '[plugins."io.containerd.grpc.v1.cri".registry.configs."mirror.corp:5443".auth]',
    '  username = "u"',
    '  password = "p\\"w"',
    '',
  ].join('\n'));
});

t.test('an empty file is no mirrors; a malformed one is refused', async (t) => {
  t.same(parseRegistries(''), {});
  t.throws(() => parseRegistries('- a\n- b\n'), /top level must be a mapping/);
  t.throws(() => parseRegistries('mirrors:\n  docker.io:\n    endpoint: http://x\n'), /mirrors\.docker\.io\.endpoint must be a list/);
});
