#!/usr/bin/env bash
# Prepares the root file system of the scratch image: the compiled binary as /svc, exactly the
# shared libraries it is linked against (found with ldd, so nothing more and nothing less than
# the binary needs), and a world-writable /tmp. The Dockerfile copies this folder to / as it is.
#   scripts/image-context.sh [BINARY [DEST]]    defaults: dist/svc  dist/image
# Then, from the checkout:  DOCKER_BUILDKIT=0 docker build -t svc .
set -euo pipefail
cd "$(dirname "$0")/.."

BINARY=${1:-dist/svc}
DEST=${2:-dist/image}

[ -x "$BINARY" ] || { echo "image-context: $BINARY is missing: run 'bun run build' first" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST/tmp"
chmod 1777 "$DEST/tmp"
cp "$BINARY" "$DEST/svc"
chmod 0755 "$DEST/svc"

# ldd prints "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" for libraries and
# "/lib64/ld-linux-x86-64.so.2 (0x...)" for the loader; linux-vdso is in the kernel, not on disk.
libs=$(ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ -n "$libs" ] || { echo "image-context: ldd found no libraries for $BINARY (not a dynamic glibc binary?)" >&2; exit 1; }
for lib in $libs; do
  mkdir -p "$DEST$(dirname "$lib")"
  # -L: the image needs the library itself under the name the binary asks for, not a symlink.
  cp -L "$lib" "$DEST$lib"
done
echo "$DEST"
