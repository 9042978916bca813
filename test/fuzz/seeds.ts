/**
 * Valid objects of the kinds the fuzzer writes, each a function of a fresh name (and the
 * namespace for namespaced kinds). Mutations start from these, so most mutants reach the
 * deeper layers (defaulting, validation, admission, storage) instead of dying in the decoder.
 */
export interface Seed {
  /** Collection path: /api/v1/namespaces/{ns}/pods, /apis/apps/v1/namespaces/{ns}/deployments ... */
  readonly collection: (ns: string) => string;
  readonly namespaced: boolean;
  readonly make: (name: string, ns: string) => Record<string, unknown>;
}

const labels = { app: 'fuzz' };
const container = { name: 'c', image: 'busybox', command: ['sleep', '3600'], ports: [{ containerPort: 80, protocol: 'TCP' }], resources: { requests: { cpu: '10m', memory: '16Mi' } } };
const podSpec = { containers: [container], restartPolicy: 'Always' };
const template = { metadata: { labels }, spec: podSpec };

const core = (plural: string, namespaced = true) => (ns: string): string => (namespaced ? `/api/v1/namespaces/${ns}/${plural}` : `/api/v1/${plural}`);
const group = (gv: string, plural: string, namespaced = true) => (ns: string): string => (namespaced ? `/apis/${gv}/namespaces/${ns}/${plural}` : `/apis/${gv}/${plural}`);
const meta = (name: string, ns?: string): Record<string, unknown> => (ns ? { name, namespace: ns, labels } : { name, labels });

export const SEEDS: Readonly<Record<string, Seed>> = {
  pods: { collection: core('pods'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'Pod', metadata: meta(n, ns), spec: podSpec }) },
  configmaps: { collection: core('configmaps'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(n, ns), data: { a: 'b', 'c.txt': 'd' } }) },
  secrets: { collection: core('secrets'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'Secret', metadata: meta(n, ns), type: 'Opaque', data: { k: 'dmFsdWU=' }, stringData: { s: 't' } }) },
  services: { collection: core('services'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'Service', metadata: meta(n, ns), spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] } }) },
  endpoints: { collection: core('endpoints'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'Endpoints', metadata: meta(n, ns), subsets: [{ addresses: [{ ip: '10.1.2.3' }], ports: [{ port: 80, protocol: 'TCP' }] }] }) },
  serviceaccounts: { collection: core('serviceaccounts'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(n, ns) }) },
  persistentvolumeclaims: { collection: core('persistentvolumeclaims'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: meta(n, ns), spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }) },
  resourcequotas: { collection: core('resourcequotas'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: meta(n, ns), spec: { hard: { pods: '1000', 'requests.cpu': '100' } } }) },
  limitranges: { collection: core('limitranges'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'LimitRange', metadata: meta(n, ns), spec: { limits: [{ type: 'Container', max: { cpu: '100' } }] } }) },
  events: { collection: core('events'), namespaced: true, make: (n, ns) => ({ apiVersion: 'v1', kind: 'Event', metadata: meta(n, ns), involvedObject: { kind: 'Pod', name: 'p', namespace: ns }, reason: 'Fuzz', message: 'm', type: 'Normal' }) },
  nodes: { collection: core('nodes', false), namespaced: false, make: (n) => ({ apiVersion: 'v1', kind: 'Node', metadata: meta(n), spec: { podCIDR: '10.9.0.0/24' } }) },
  persistentvolumes: { collection: core('persistentvolumes', false), namespaced: false, make: (n) => ({ apiVersion: 'v1', kind: 'PersistentVolume', metadata: meta(n), spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } }) },
  namespaces: { collection: core('namespaces', false), namespaced: false, make: (n) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: meta(n) }) },
  deployments: { collection: group('apps/v1', 'deployments'), namespaced: true, make: (n, ns) => ({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: meta(n, ns), spec: { replicas: 0, selector: { matchLabels: labels }, template } }) },
  statefulsets: { collection: group('apps/v1', 'statefulsets'), namespaced: true, make: (n, ns) => ({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: meta(n, ns), spec: { replicas: 0, serviceName: 's', selector: { matchLabels: labels }, template } }) },
  daemonsets: { collection: group('apps/v1', 'daemonsets'), namespaced: true, make: (n, ns) => ({ apiVersion: 'apps/v1', kind: 'DaemonSet', metadata: meta(n, ns), spec: { selector: { matchLabels: labels }, template } }) },
  jobs: { collection: group('batch/v1', 'jobs'), namespaced: true, make: (n, ns) => ({ apiVersion: 'batch/v1', kind: 'Job', metadata: meta(n, ns), spec: { suspend: true, template: { metadata: { labels }, spec: { ...podSpec, restartPolicy: 'Never' } } } }) },
  cronjobs: { collection: group('batch/v1', 'cronjobs'), namespaced: true, make: (n, ns) => ({ apiVersion: 'batch/v1', kind: 'CronJob', metadata: meta(n, ns), spec: { schedule: '*/5 * * * *', suspend: true, jobTemplate: { spec: { template: { spec: { ...podSpec, restartPolicy: 'Never' } } } } } }) },
  roles: { collection: group('rbac.authorization.k8s.io/v1', 'roles'), namespaced: true, make: (n, ns) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: meta(n, ns), rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] }) },
  rolebindings: { collection: group('rbac.authorization.k8s.io/v1', 'rolebindings'), namespaced: true, make: (n, ns) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: meta(n, ns), roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' }, subjects: [{ kind: 'User', name: 'u', apiGroup: 'rbac.authorization.k8s.io' }] }) },
  leases: { collection: group('coordination.k8s.io/v1', 'leases'), namespaced: true, make: (n, ns) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: meta(n, ns), spec: { holderIdentity: 'h', leaseDurationSeconds: 15 } }) },
  endpointslices: { collection: group('discovery.k8s.io/v1', 'endpointslices'), namespaced: true, make: (n, ns) => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: meta(n, ns), addressType: 'IPv4', endpoints: [{ addresses: ['10.1.2.3'] }], ports: [{ port: 80 }] }) },
  ingresses: { collection: group('networking.k8s.io/v1', 'ingresses'), namespaced: true, make: (n, ns) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: meta(n, ns), spec: { rules: [{ host: 'a.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }] } }] } }) },
  networkpolicies: { collection: group('networking.k8s.io/v1', 'networkpolicies'), namespaced: true, make: (n, ns) => ({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: meta(n, ns), spec: { podSelector: { matchLabels: labels }, policyTypes: ['Ingress'] } }) },
  poddisruptionbudgets: { collection: group('policy/v1', 'poddisruptionbudgets'), namespaced: true, make: (n, ns) => ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: meta(n, ns), spec: { minAvailable: 1, selector: { matchLabels: labels } } }) },
  horizontalpodautoscalers: { collection: group('autoscaling/v2', 'horizontalpodautoscalers'), namespaced: true, make: (n, ns) => ({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: meta(n, ns), spec: { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'd' }, minReplicas: 1, maxReplicas: 3 } }) },
  priorityclasses: { collection: group('scheduling.k8s.io/v1', 'priorityclasses', false), namespaced: false, make: (n) => ({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: meta(n), value: 1000 }) },
  storageclasses: { collection: group('storage.k8s.io/v1', 'storageclasses', false), namespaced: false, make: (n) => ({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: meta(n), provisioner: 'example.com/x' }) },
  clusterroles: { collection: group('rbac.authorization.k8s.io/v1', 'clusterroles', false), namespaced: false, make: (n) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: meta(n), rules: [{ nonResourceURLs: ['/x'], verbs: ['get'] }] }) },
  customresourcedefinitions: { collection: group('apiextensions.k8s.io/v1', 'customresourcedefinitions', false), namespaced: false, make: (n) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${n}s.fuzz.example.com` }, spec: { group: 'fuzz.example.com', scope: 'Namespaced', names: { plural: `${n}s`, kind: `K${n.replace(/-/g, '')}` }, versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { a: { type: 'string' } } } } } } }] } }) },
};
