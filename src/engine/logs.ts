/**
 * Container logs: without a TTY the engine multiplexes stdout and stderr into frames of an
 * 8-byte header (stream, 0, 0, 0, big-endian length) followed by the payload.
 */

/** Joins the payloads of a multiplexed log stream, in order. A truncated last frame is kept as far as it goes. */
export function demultiplexLogs(data: Uint8Array): string {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= buffer.length) {
    const length = buffer.readUInt32BE(offset + 4);
    const start = offset + 8;
    parts.push(buffer.subarray(start, Math.min(start + length, buffer.length)));
    offset = start + length;
  }
  return Buffer.concat(parts).toString("utf8");
}

/** The last `count` lines of `text` (a trailing newline does not count as an empty line). */
export function lastLines(text: string, count: number): string {
  if (count <= 0) return "";
  const lines = text.replace(/\r?\n$/, "").split(/\r?\n/);
  return lines.slice(-count).join("\n");
}
