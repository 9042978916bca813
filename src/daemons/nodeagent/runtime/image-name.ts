/**
 * Image reference normalization as containerd's CRI does it: a bare name is in docker.io's
 * `library/` namespace, a first path element without a dot, colon or `localhost` is a Docker Hub
 * user, and an untagged, undigested reference means `:latest`. Ids (`sha256:…`) pass through.
 */
export function normalizeImageName(image: string): string {
  if (image.startsWith('sha256:')) return image;
  let name = image;
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  if (slash < 0) name = `docker.io/library/${name}`;
  else if (!(first.includes('.') || first.includes(':') || first === 'localhost')) name = `docker.io/${name}`;
  const lastSlash = name.lastIndexOf('/');
  if (!name.includes('@') && !name.slice(lastSlash + 1).includes(':')) name += ':latest';
  return name;
}
