/**
 * apiregistration.k8s.io/v1 (APIService), written by hand: kubectl's binary, which the generator
 * reads, carries no kube-aggregator types. Numbers and JSON names from kube-aggregator's
 * generated.proto. Part of the hand table (patch-metadata.ts).
 */
import type { MessageDecl } from './types.js';

export const APIREGISTRATION_V1 = 'k8s.io.kube_aggregator.pkg.apis.apiregistration.v1';
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const P = APIREGISTRATION_V1;

export const apiregistrationV1Messages: readonly MessageDecl[] = [
  { name: `${P}.APIService`, fields: [
    { name: 'metadata', number: 1, type: { message: `${META}.ObjectMeta` } },
    { name: 'spec', number: 2, type: { message: `${P}.APIServiceSpec` } },
    { name: 'status', number: 3, type: { message: `${P}.APIServiceStatus` } },
  ] },
  { name: `${P}.APIServiceList`, fields: [
    { name: 'metadata', number: 1, type: { message: `${META}.ListMeta` } },
    { name: 'items', number: 2, type: { message: `${P}.APIService` }, repeated: true, required: true },
  ] },
  { name: `${P}.APIServiceSpec`, fields: [
    { name: 'service', number: 1, type: { message: `${P}.ServiceReference` }, optional: true, description: 'The service of the extension API server; absent: served by this API server.' },
    { name: 'group', number: 2, type: { scalar: 'string' }, description: 'The API group served.' },
    { name: 'version', number: 3, type: { scalar: 'string' }, description: 'The API version served.' },
    { name: 'insecureSkipTLSVerify', number: 4, type: { scalar: 'bool' }, description: 'Skip verifying the server\'s certificate (discouraged; use caBundle).' },
    { name: 'caBundle', number: 5, type: { scalar: 'bytes' }, listType: 'atomic', description: 'PEM CA bundle verifying the server\'s serving certificate.' },
    { name: 'groupPriorityMinimum', number: 7, type: { scalar: 'int32' }, emitEmpty: true, required: true, description: 'The least priority of the group; higher groups come first in discovery.' },
    { name: 'versionPriority', number: 8, type: { scalar: 'int32' }, emitEmpty: true, required: true, description: 'The order of this version inside its group; higher first.' },
  ] },
  { name: `${P}.ServiceReference`, fields: [
    { name: 'namespace', number: 1, type: { scalar: 'string' } },
    { name: 'name', number: 2, type: { scalar: 'string' } },
    { name: 'port', number: 3, type: { scalar: 'int32' }, optional: true },
  ] },
  { name: `${P}.APIServiceStatus`, fields: [
    { name: 'conditions', number: 1, type: { message: `${P}.APIServiceCondition` }, repeated: true,
      patchStrategy: 'merge', patchMergeKey: 'type', listType: 'map', listMapKeys: ['type'] },
  ] },
  { name: `${P}.APIServiceCondition`, fields: [
    { name: 'type', number: 1, type: { scalar: 'string' }, emitEmpty: true, required: true },
    { name: 'status', number: 2, type: { scalar: 'string' }, emitEmpty: true, required: true },
    { name: 'lastTransitionTime', number: 3, type: { message: `${META}.Time` } },
    { name: 'reason', number: 4, type: { scalar: 'string' } },
    { name: 'message', number: 5, type: { scalar: 'string' } },
  ] },
];
