/**
 * --image-service-endpoint: image calls (status, pull, list, remove, filesystem info) go to a
 * second CRI endpoint, everything else to the runtime's.
 */
import type { RuntimeBackend } from '../runtime/runtime.js';

export function withImageService(runtime: RuntimeBackend, images: RuntimeBackend): RuntimeBackend {
  return new Proxy(runtime, {
    get(target, prop, receiver) {
      switch (prop) {
        case 'imageStatus': return images.imageStatus.bind(images);
        case 'pullImage': return images.pullImage.bind(images);
        case 'listImages': return images.listImages.bind(images);
        case 'removeImage': return images.removeImage.bind(images);
        case 'imageFsInfo': return images.imageFsInfo.bind(images);
        case 'close': return async () => { await images.close(); await target.close(); };
        default: {
          const v: unknown = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        }
      }
    },
  });
}
