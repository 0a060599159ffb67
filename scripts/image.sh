#!/usr/bin/env bash
# The scratch image for linux/amd64 and linux/arm64 (`bun run image`), built from the Dockerfile
# with the classic builder (no base image to pull) into the engine DOCKER_HOST names:
#   svc:<version>-amd64, svc:<version>-arm64 ("+" in the version written "-"), and `svc` for this machine's platform.
# With SVC_IMAGE=REGISTRY/REPO:TAG both are pushed (as TAG-amd64 and TAG-arm64) and joined into
# one multi-platform index REGISTRY/REPO:TAG, which is what a release publishes and users pull:
#   SVC_IMAGE=ghcr.io/svc-project/svc:0.1.0 bun run image
# Loopback registries are spoken to over plain HTTP, as the engine does. SVC_IMAGE_OUT (default
# dist) is where the binaries and the two build contexts are written; the index's digest goes to
# SVC_IMAGE_OUT/index-digest (what a signature names). SVC_IMAGE_BINARIES=DIR takes
# svc-linux-x64 and svc-linux-arm64 already built there instead of compiling them again
# (scripts/release.sh, which ships the same files).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${SVC_IMAGE_OUT:-dist}
BINARIES=${SVC_IMAGE_BINARIES:-$OUT}
mkdir -p "$OUT"
[ -n "${SVC_IMAGE_BINARIES:-}" ] || bun build.ts --target linux-x64 --target linux-arm64 --outdir "$OUT" >&2
version=$("$BINARIES"/svc-linux-"$(uname -m | sed 's/x86_64/x64/; s/aarch64/arm64/')" --version)
tag=${version//+/-}   # a tag cannot hold the "+" of 0.1.0+1abc0fc
host=$(docker version --format '{{.Server.Arch}}')

for arch in amd64 arm64; do
  binary=$BINARIES/svc-linux-$([ "$arch" = amd64 ] && echo x64 || echo arm64)
  context=$OUT/image-$arch
  bash scripts/image-context.sh "$binary" "$context/rootfs" >/dev/null
  DOCKER_BUILDKIT=0 docker build -q --platform "linux/$arch" -f Dockerfile \
    -t "svc:$tag-$arch" "$context" >/dev/null 2>&1 ||
    { DOCKER_BUILDKIT=0 docker build --platform "linux/$arch" -f Dockerfile -t "svc:$tag-$arch" "$context"; exit 1; }
  echo "image: svc:$tag-$arch" >&2
done
docker tag "svc:$tag-$host" svc
echo "image: svc (linux/$host)" >&2

[ -n "${SVC_IMAGE:-}" ] || exit 0
insecure=()
case "$SVC_IMAGE" in 127.*|localhost[:/]*|\[::1\]*) insecure=(--insecure) ;; esac
for arch in amd64 arm64; do
  docker tag "svc:$tag-$arch" "$SVC_IMAGE-$arch"
  docker push -q "$SVC_IMAGE-$arch" >/dev/null
done
docker manifest rm "$SVC_IMAGE" >/dev/null 2>&1 || true
docker manifest create "${insecure[@]}" "$SVC_IMAGE" "$SVC_IMAGE-amd64" "$SVC_IMAGE-arm64" >/dev/null
# it prints the digest of the index it pushed
docker manifest push "${insecure[@]}" --purge "$SVC_IMAGE" | tail -1 | tee "$OUT/index-digest" >&2
grep -qx 'sha256:[0-9a-f]\{64\}' "$OUT/index-digest" || { echo "image: no digest from docker manifest push" >&2; exit 1; }
echo "image: $SVC_IMAGE (linux/amd64, linux/arm64)" >&2
