/** Digests and image ids cut short, the way `docker images` shows them. Pure. */

/** `sha256:0123456789abcdef...` -> `0123456789ab` (the 12 hex digits `docker images` shows); "" for none. */
export function shortId(id: string | null | undefined): string {
  if (!id) return "";
  const hex = id.includes(":") ? id.slice(id.indexOf(":") + 1) : id;
  return hex.slice(0, 12);
}

/** `sha256:0123456789ab`: a digest or image id cut short with its algorithm; other text, its first 12 characters. */
export function shortDigest(digest: string): string {
  return digest.startsWith("sha256:") ? `sha256:${shortId(digest)}` : digest.slice(0, 12);
}
