// Encode/decode throughput of a typical Pod in JSON and in Kubernetes protobuf.
// Uses the HEAD fixture core.v1.Pod when present (every field filled: a large pod), and a
// typical small pod (one container, a few labels, status with conditions).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJson, encodeJson } from '../src/api/codec/json.js';
import { decodeProtobuf, encodeProtobuf } from '../src/api/codec/protobuf.js';
import type { KubeObject } from '../src/api/resources/types.js';

const typicalPod: KubeObject = {
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'web-7d4b9c8f6d-x2x4k', namespace: 'default', uid: '8c2d6f1e-1f0a-4c1e-9d7b-2c5a3b1e0f11', resourceVersion: '123456',
    generation: 1, creationTimestamp: '2026-01-02T03:04:05Z', labels: { app: 'web', 'pod-template-hash': '7d4b9c8f6d' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d4b9c8f6d', uid: '1b2c3d4e-0000-4000-8000-000000000001', controller: true, blockOwnerDeletion: true }] },
  spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80, protocol: 'TCP' }],
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
    volumeMounts: [{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
    terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File', imagePullPolicy: 'IfNotPresent' }],
  restartPolicy: 'Always', terminationGracePeriodSeconds: 30, dnsPolicy: 'ClusterFirst', serviceAccountName: 'default', nodeName: 'node-1',
  securityContext: {}, schedulerName: 'default-scheduler', enableServiceLinks: true, preemptionPolicy: 'PreemptLowerPriority', priority: 0,
  tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
  volumes: [{ name: 'kube-api-access', projected: { defaultMode: 420, sources: [{ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } }] } }] },
  status: { phase: 'Running', hostIP: '10.0.0.5', podIP: '10.88.0.7', podIPs: [{ ip: '10.88.0.7' }], startTime: '2026-01-02T03:04:06Z', qosClass: 'Burstable',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-02T03:04:09Z' }, { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-02T03:04:05Z' }],
    containerStatuses: [{ name: 'web', ready: true, restartCount: 0, image: 'nginx:1.27', imageID: 'docker.io/library/nginx@sha256:abc', containerID: 'containerd://abc', started: true,
      state: { running: { startedAt: '2026-01-02T03:04:08Z' } } }] },
};

function rate(label: string, bytes: number, fn: () => void): void {
  const deadline = performance.now() + 1500;
  let n = 0;
  const start = performance.now();
  while (performance.now() < deadline) { for (let i = 0; i < 200; i++) fn(); n += 200; }
  const secs = (performance.now() - start) / 1000;
  const perSec = n / secs;
  console.log(`${label.padEnd(34)} ${Math.round(perSec).toString().padStart(9)} objects/s  ${(perSec * bytes / 1048576).toFixed(1).padStart(7)} MiB/s  (${bytes} bytes each)`);
}

function run(name: string, pod: KubeObject): void {
  const json = encodeJson(pod);
  const pb = encodeProtobuf(pod);
  console.log(`${name}: JSON ${json.length} bytes, protobuf ${pb.length} bytes`);
  rate(`  JSON encode`, json.length, () => encodeJson(pod));
  rate(`  JSON decode`, json.length, () => decodeJson(json));
  rate(`  protobuf encode`, pb.length, () => encodeProtobuf(pod));
  rate(`  protobuf decode`, pb.length, () => decodeProtobuf(pb));
}

run('typical pod', typicalPod);
const fixture = join(process.cwd(), '..', 'shared', 'k8s-testdata', 'HEAD', 'core.v1.Pod.json');
if (existsSync(fixture)) run('HEAD fixture core.v1.Pod (every field set)', { apiVersion: 'v1', kind: 'Pod', ...(JSON.parse(readFileSync(fixture, 'utf8')) as object) });
