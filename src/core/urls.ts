/** URLs read from outside (labels, release hosts, notification URLs). Pure. */

/** The longest link svc passes on: a label or a host may write anything. */
const MAX_LINK = 2048;

/** `text` as an http(s) URL, or null: only http(s) links leave svc, and none longer than MAX_LINK. */
export function httpUrl(text: string | null | undefined): string | null {
  if (!text || text.length > MAX_LINK) return null;
  try {
    const url = new URL(text);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** `text` percent-decoded; text that does not decode (a lone `%`) stays as it is. */
export function decodePercent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** `text` with the user name and password of its address masked by `mask`; anything else as written. */
export function maskUserInfo(text: string, mask: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, `$1${mask}@`);
}
