/**
 * The checksum of a copy's archives (docs/data-guard.md, "Checksums"): xxHash64 of each 1 MiB
 * block of the archive in turn, each block's hash seeded with the one before, the last block
 * shorter. It tells a copy that a crash, a full disk or the disk itself damaged from one that is
 * whole; it is no defence against someone who can write the copies' folder (they could rewrite
 * the manifest as well). Chosen over sha256, which the first copies carried (still checked):
 * at some 14 GB/s it costs nothing beside the copy, where sha256 took a third of it.
 *
 * Runs in svc and in the data guard's helper (copier.ts): Bun's built-ins alone, no import.
 */
export const CHECKSUM_BLOCK = 1024 * 1024;

export class BlockChecksum {
  private seed = 0n;
  private readonly block = new Uint8Array(CHECKSUM_BLOCK);
  private filled = 0;

  update(bytes: Uint8Array): void {
    let at = 0;
    while (at < bytes.length) {
      if (this.filled === 0 && bytes.length - at >= CHECKSUM_BLOCK) {
        this.seed = BigInt(Bun.hash.xxHash64(bytes.subarray(at, at + CHECKSUM_BLOCK), this.seed));
        at += CHECKSUM_BLOCK;
        continue;
      }
      const taken = Math.min(CHECKSUM_BLOCK - this.filled, bytes.length - at);
      this.block.set(bytes.subarray(at, at + taken), this.filled);
      this.filled += taken;
      at += taken;
      if (this.filled === CHECKSUM_BLOCK) {
        this.seed = BigInt(Bun.hash.xxHash64(this.block, this.seed));
        this.filled = 0;
      }
    }
  }

  /** 16 hex digits; the checksum of nothing is the seed, 0. */
  digest(): string {
    if (this.filled > 0) {
      this.seed = BigInt(Bun.hash.xxHash64(this.block.subarray(0, this.filled), this.seed));
      this.filled = 0;
    }
    return this.seed.toString(16).padStart(16, "0");
  }
}
