/**
 * A recording CSI driver of our own on a unix socket (gRPC, csi.v1 Node and Identity services
 * from the node agent's csi.proto): every call is recorded as [method, request]. Staging makes
 * the staging directory with a `staged` file; publishing makes the target directory with a
 * `published` file naming the volume (as a driver that bind-mounts its staged volume would
 * show it); unpublish and unstage remove them. (Not a test file itself.)
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { csiPackage } from '../../src/daemons/nodeagent/volumes/csi/csi-client.js';

export interface RecordingDriver {
  readonly calls: Array<[string, Record<string, unknown>]>;
  readonly socket: string;
  stop(): Promise<void>;
}

type Handler = (req: Record<string, unknown>) => Promise<object>;

export async function startRecordingDriver(socket: string, o: { name?: string; stages?: boolean; expands?: boolean; nodeId?: string } = {}): Promise<RecordingDriver> {
  const calls: Array<[string, Record<string, unknown>]> = [];
  const pkg = csiPackage();
  const server = new grpc.Server();
  const wrap = (name: string, h: Handler): grpc.handleUnaryCall<object, object> => (call, cb) => {
    const req = call.request as Record<string, unknown>;
    calls.push([name, req]);
    h(req).then((res) => cb(null, res), (e: Error) => cb({ code: grpc.status.INTERNAL, details: e.message }));
  };
  server.addService((pkg['Node'] as grpc.ServiceClientConstructor).service, {
    NodeGetInfo: wrap('NodeGetInfo', async () => ({ nodeId: o.nodeId ?? 'fixture-node', maxVolumesPerNode: '0' })),
    NodeGetCapabilities: wrap('NodeGetCapabilities', async () => ({
      capabilities: [...(o.stages === false ? [] : [{ rpc: { type: 'STAGE_UNSTAGE_VOLUME' } }]), ...(o.expands ? [{ rpc: { type: 'EXPAND_VOLUME' } }] : [])],
    })),
    NodeExpandVolume: wrap('NodeExpandVolume', async (r) => ({ capacityBytes: (r.capacityRange as { requiredBytes?: string } | undefined)?.requiredBytes ?? '0' })),
    NodeStageVolume: wrap('NodeStageVolume', async (r) => {
      const p = String(r.stagingTargetPath);
      await mkdir(p, { recursive: true });
      await writeFile(join(p, 'staged'), String(r.volumeId));
      return {};
    }),
    NodeUnstageVolume: wrap('NodeUnstageVolume', async (r) => { await rm(join(String(r.stagingTargetPath), 'staged'), { force: true }); return {}; }),
    NodePublishVolume: wrap('NodePublishVolume', async (r) => {
      const p = String(r.targetPath);
      await mkdir(p, { recursive: true });
      await writeFile(join(p, 'published'), String(r.volumeId));
      return {};
    }),
    NodeUnpublishVolume: wrap('NodeUnpublishVolume', async (r) => { await rm(String(r.targetPath), { recursive: true, force: true }); return {}; }),
  });
  server.addService((pkg['Identity'] as grpc.ServiceClientConstructor).service, {
    GetPluginInfo: wrap('GetPluginInfo', async () => ({ name: o.name ?? 'fixture.csi.corectl.io', vendorVersion: '0.1.0' })),
  });
  await new Promise<void>((resolve, reject) => server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())));
  return {
    calls, socket,
    stop: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}
