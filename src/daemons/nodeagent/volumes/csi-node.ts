/**
 * CSI volumes on the node: the node agent is the CSI node service's client (csi-client.ts).
 */
import type { KubeObject } from '../../../api/resources/types.js';
import type { Pod } from '../pod-types.js';

/** Sets up and tears down the CSI volumes of pods. */
export interface CsiVolumes {
  /** Stages (once per volume on the node) and publishes the volume at `target`. */
  setUp(pod: Pod, volume: KubeObject, target: string, readOnly: boolean): Promise<void>;
  /** Unpublishes every CSI volume of the pod (its targets under `csiDir`), unstaging what no other pod uses. */
  tearDownPod(uid: string, csiDir: string): Promise<void>;
}
