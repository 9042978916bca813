// The codec yardstick: every served kind in the Kubernetes HEAD fixtures (JSON, YAML and
// protobuf of the same object) decodes to one object in all three forms, round-trips through
// our protobuf encoding without loss, and our bytes read back by protobufjs loaded with the
// descriptors from the kubectl binaries give the same message as the fixture's bytes.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import protobuf from 'protobufjs';
import { decodeJson, encodeJson } from '../../src/api/codec/json.js';
import { decodeProtobuf, encodeProtobuf } from '../../src/api/codec/protobuf.js';
import { decodeYaml, encodeYaml } from '../../src/api/codec/yaml.js';
import { messageForObject } from '../../src/api/schema/registry.js';
import { newestKubectlDescriptors } from '../helpers/kubectl-descriptors.js';

const dir = join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD');
const fallbackDir = '/work/shared/k8s-testdata/HEAD';
const fixtures = existsSync(dir) ? dir : fallbackDir;

/** First differences between two JSON values, as paths. */
function diff(a: unknown, b: unknown, path = ''): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const out: string[] = [];
    const ao = a as Record<string, unknown>, bo = b as Record<string, unknown>;
    for (const k of new Set([...Object.keys(ao), ...Object.keys(bo)])) out.push(...diff(ao[k], bo[k], `${path}.${k}`));
    return out;
  }
  return [`${path || '.'}: got ${JSON.stringify(a)?.slice(0, 80)} want ${JSON.stringify(b)?.slice(0, 80)}`];
}

function unwrapEnvelope(root: protobuf.Root, bytes: Buffer): { kind: string; raw: Uint8Array } {
  const unknown = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown').decode(bytes.subarray(4)) as unknown as {
    typeMeta: { kind: string }; raw: Uint8Array;
  };
  return { kind: unknown.typeMeta.kind, raw: unknown.raw };
}

const oracle = newestKubectlDescriptors();


t.test('HEAD fixtures', { skip: existsSync(fixtures) ? false : 'no k8s-testdata/HEAD next to the project' }, async (t) => {
  const names = readdirSync(fixtures).filter((f) => f.endsWith('.pb')).map((f) => f.slice(0, -3)).sort();
  let served = 0, passed = 0, oracleChecked = 0;
  for (const base of names) {
    const pb = readFileSync(join(fixtures, `${base}.pb`));
    // Which kind is it? The envelope says; only kinds our registry serves are measured.
    const probe = (() => { try { return decodeProtobuf(pb); } catch { return undefined; } })();
    if (!probe || !messageForObject(probe.apiVersion ?? '', probe.kind ?? '')) continue;
    served++;
    const failures: string[] = [];
    const json = decodeJson(readFileSync(join(fixtures, `${base}.json`)));
    const yaml = decodeYaml(readFileSync(join(fixtures, `${base}.yaml`)));
    failures.push(...diff(yaml, json).map((d) => `yaml ${d}`));
    failures.push(...diff(probe, json).map((d) => `pb ${d}`));
    const obj = json as Record<string, unknown>;
    const withType = { apiVersion: probe.apiVersion, kind: probe.kind, ...obj };
    const ours = encodeProtobuf(withType);
    failures.push(...diff(decodeProtobuf(ours), withType).map((d) => `pb round trip ${d}`));
    failures.push(...diff(decodeJson(encodeJson(json)), json).map((d) => `json round trip ${d}`));
    failures.push(...diff(decodeYaml(encodeYaml(json)), json).map((d) => `yaml round trip ${d}`));
    const msg = messageForObject(probe.apiVersion ?? '', probe.kind ?? '')!;
    if (oracle) {
      let type: protobuf.Type | undefined;
      try { type = oracle.root.lookupType(msg.name); } catch { type = undefined; }
      if (type) {
        oracleChecked++;
        const opts = { longs: String, bytes: String, enums: String };
        const want = type.toObject(type.decode(unwrapEnvelope(oracle.root, pb).raw), opts);
        const got = type.toObject(type.decode(unwrapEnvelope(oracle.root, ours).raw), opts);
        failures.push(...diff(got, want).map((d) => `kubectl descriptors ${d}`));
      }
    }
    if (failures.length === 0) passed++;
    t.same(failures, [], `${base}: JSON, YAML and protobuf agree`);
  }
  t.comment(`fixtures: ${passed}/${served} served kinds round-trip in JSON, YAML and protobuf (${oracleChecked} also checked against kubectl's descriptors)`);
  t.ok(served >= 50, `at least 50 served kinds have fixtures (${served})`);
});
