#!/usr/bin/env bash
# A release of svc, into one folder, the same here and in the release workflow
# (.github/workflows/release.yml runs it on a version tag; docs/install.md, "Releases"):
#
#   scripts/release.sh [--out DIR] [--image REGISTRY/REPO] [--key FILE | --keyless] [--download-url URL]
#
# DIR (default dist/release) receives what a release page offers:
#   svc-linux-x64, svc-linux-arm64  the binaries (bun build --compile, build.ts)
#   svc.service                     the systemd unit install.sh --systemd installs
#   svc.cdx.json                    the SBOM: CycloneDX JSON of the packages compiled in (scripts/sbom.ts)
#   install.sh                      the installer, with this release's address and signer written in
#   SHA256SUMS                      over all of the above, in sha256sum's format
#   SHA256SUMS.sigstore.json        cosign's signature of SHA256SUMS (when signing)
#   cosign.pub                      the public key (when signing with --key)
# --image pushes the image for linux/amd64 and linux/arm64 as REGISTRY/REPO:VERSION (and :latest for
# a version without a pre-release part) with one multi-platform index (scripts/image.sh, into the
# engine DOCKER_HOST names), then signs the index by digest and attaches two signed attestations:
# the SLSA provenance (scripts/provenance.ts) and the SBOM. DIR/image.txt names it by digest.
# Signing, by cosign (on PATH):
#   --key FILE   a key pair's private half (COSIGN_PASSWORD its password), offline: no transparency
#                log entry (the tests' test key, or a private mirror's)
#   --keyless    Sigstore's keyless signing by the OIDC identity the job has (the release workflow's,
#                with id-token: write), recorded in the public transparency log; install.sh then
#                checks the certificate names that workflow (SVC_RELEASE_IDENTITY/_ISSUER elsewhere)
# Every option has an environment variable: SVC_RELEASE_OUT, SVC_RELEASE_IMAGE, SVC_RELEASE_KEY,
# SVC_RELEASE_KEYLESS=1, SVC_RELEASE_DOWNLOAD_URL. The download address (where install.sh will find
# the files; default the GitHub release page of v<version> of SVC_RELEASE_REPOSITORY, else
# GITHUB_REPOSITORY, else svc-project/svc) is written into the published install.sh.
# On a tag (GITHUB_REF_TYPE=tag), the tag must be v<package.json's version>.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${SVC_RELEASE_OUT:-dist/release}
IMAGE=${SVC_RELEASE_IMAGE:-}
KEY=${SVC_RELEASE_KEY:-}
KEYLESS=${SVC_RELEASE_KEYLESS:-}
DOWNLOAD_URL=${SVC_RELEASE_DOWNLOAD_URL:-}

say() { printf 'release: %s\n' "$*" >&2; }
die() { printf 'release: error: %s\n' "$*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=${2:?--out needs a folder}; shift 2 ;;
    --image) IMAGE=${2:?--image needs REGISTRY/REPO}; shift 2 ;;
    --key) KEY=${2:?--key needs a file}; shift 2 ;;
    --keyless) KEYLESS=1; shift ;;
    --download-url) DOWNLOAD_URL=${2:?--download-url needs a URL}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -z "$KEY" ] || [ -z "$KEYLESS" ] || die "--key and --keyless exclude each other"
if [ -n "$IMAGE" ]; then
  case ${IMAGE##*/} in *:*|*@*) die "--image takes REGISTRY/REPO, without a tag or digest ($IMAGE)" ;; esac
  case $IMAGE in */*) ;; *) die "--image takes REGISTRY/REPO ($IMAGE names no registry)" ;; esac
fi

VERSION=$(bun -e 'console.log((await Bun.file("package.json").json()).version)')
if [ "${GITHUB_REF_TYPE:-}" = tag ] && [ "${GITHUB_REF_NAME:-}" != "v$VERSION" ]; then
  die "the tag ${GITHUB_REF_NAME:-} is not v$VERSION (package.json's version): set the version, commit, tag again"
fi
REPOSITORY=${SVC_RELEASE_REPOSITORY:-${GITHUB_REPOSITORY:-svc-project/svc}}
DOWNLOAD_URL=${DOWNLOAD_URL:-https://github.com/$REPOSITORY/releases/download/v$VERSION}

# Who signs: the arguments every cosign signing command takes, and what install.sh will check.
SIGN=()
IDENTITY="" ISSUER="" PUBLIC_KEY=""
if [ -n "$KEY" ]; then
  [ -r "$KEY" ] || die "cannot read the key $KEY"
  SIGN=(--yes --key "$KEY" --tlog-upload=false --use-signing-config=false)
elif [ -n "$KEYLESS" ]; then
  SIGN=(--yes)
  IDENTITY=${SVC_RELEASE_IDENTITY:-${GITHUB_WORKFLOW_REF:+${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_WORKFLOW_REF}}
  ISSUER=${SVC_RELEASE_ISSUER:-${GITHUB_WORKFLOW_REF:+https://token.actions.githubusercontent.com}}
  [ -n "$IDENTITY" ] && [ -n "$ISSUER" ] ||
    die "--keyless outside GitHub Actions needs SVC_RELEASE_IDENTITY and SVC_RELEASE_ISSUER (the identity that signs)"
fi
[ ${#SIGN[@]} -eq 0 ] || command -v cosign >/dev/null || die "signing needs cosign on PATH"

rm -rf "$OUT"
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/svc-release.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# 1. The binaries, the unit and the SBOM, with SHA256SUMS over them (build.ts).
bun build.ts --target linux-x64 --target linux-arm64 --outdir "$OUT" >&2

# 2. install.sh, knowing this release: the RELEASE_* lines of the repository's copy filled in.
if [ -n "$KEY" ]; then
  PUBLIC_KEY=$(COSIGN_PASSWORD=${COSIGN_PASSWORD-} cosign public-key --key "$KEY")
  printf '%s\n' "$PUBLIC_KEY" >"$OUT/cosign.pub"
fi
for value in "$DOWNLOAD_URL" "$IDENTITY" "$ISSUER" "$PUBLIC_KEY"; do
  case $value in *[\"\$\`\\]*) die "a value for install.sh holds a quote, \$, \` or \\: $value" ;; esac
done
RELEASE_URL=$DOWNLOAD_URL RELEASE_IDENTITY=$IDENTITY RELEASE_ISSUER=$ISSUER RELEASE_PUBLIC_KEY=$PUBLIC_KEY \
  awk '/^RELEASE_(URL|IDENTITY|ISSUER|PUBLIC_KEY)=""$/ { name = substr($0, 1, index($0, "=") - 1); print name "=\"" ENVIRON[name] "\""; next } { print }' \
  install.sh >"$OUT/install.sh"
chmod 0755 "$OUT/install.sh"
(cd "$OUT" && sha256sum install.sh) >>"$OUT/SHA256SUMS"
[ -z "$PUBLIC_KEY" ] || (cd "$OUT" && sha256sum cosign.pub) >>"$OUT/SHA256SUMS"
say "install.sh downloads from $DOWNLOAD_URL"

# 3. The signature of SHA256SUMS: it vouches for every file it lists.
if [ ${#SIGN[@]} -gt 0 ]; then
  cosign sign-blob "${SIGN[@]}" --bundle "$OUT/SHA256SUMS.sigstore.json" "$OUT/SHA256SUMS" >/dev/null 2>"$WORK/cosign.log" ||
    { cat "$WORK/cosign.log" >&2; die "cosign could not sign SHA256SUMS"; }
  chmod 0644 "$OUT/SHA256SUMS.sigstore.json"
  say "signed SHA256SUMS (SHA256SUMS.sigstore.json)"
fi

# 4. The image: both platforms and their index (scripts/image.sh, from the binaries above), then
# signed by digest with its provenance and SBOM attached.
if [ -n "$IMAGE" ]; then
  SVC_IMAGE="$IMAGE:$VERSION" SVC_IMAGE_OUT="$WORK" SVC_IMAGE_BINARIES="$OUT" bash scripts/image.sh
  digest=$(cat "$WORK/index-digest")
  case $VERSION in
    *-*) ;; # a pre-release is not the latest
    *)
      # the same two platform manifests, so the same index: one digest, one signature for both tags
      insecure=()
      case $IMAGE in 127.*|localhost[:/]*|\[::1\]*) insecure=(--insecure) ;; esac
      docker manifest rm "$IMAGE:latest" >/dev/null 2>&1 || true
      docker manifest create "${insecure[@]}" "$IMAGE:latest" "$IMAGE:$VERSION-amd64" "$IMAGE:$VERSION-arm64" >/dev/null
      latest=$(docker manifest push "${insecure[@]}" --purge "$IMAGE:latest" | tail -1)
      [ "$latest" = "$digest" ] || die "$IMAGE:latest ($latest) is not the index of $IMAGE:$VERSION ($digest)"
      ;;
  esac
  echo "$IMAGE@$digest" >"$OUT/image.txt"
  if [ ${#SIGN[@]} -gt 0 ]; then
    registry=()
    case $IMAGE in 127.*|localhost[:/]*|\[::1\]*) registry=(--allow-http-registry --allow-insecure-registry) ;; esac
    bun scripts/provenance.ts "$VERSION" "$IMAGE@$digest" "$OUT/SHA256SUMS" >"$WORK/provenance.json"
    cosign sign "${SIGN[@]}" "${registry[@]}" "$IMAGE@$digest" >/dev/null 2>"$WORK/cosign.log" ||
      { cat "$WORK/cosign.log" >&2; die "cosign could not sign $IMAGE@$digest"; }
    cosign attest "${SIGN[@]}" "${registry[@]}" --type slsaprovenance1 --predicate "$WORK/provenance.json" \
      "$IMAGE@$digest" >/dev/null 2>"$WORK/cosign.log" || { cat "$WORK/cosign.log" >&2; die "cosign could not attest the provenance"; }
    cosign attest "${SIGN[@]}" "${registry[@]}" --type cyclonedx --predicate "$OUT/svc.cdx.json" \
      "$IMAGE@$digest" >/dev/null 2>"$WORK/cosign.log" || { cat "$WORK/cosign.log" >&2; die "cosign could not attest the SBOM"; }
    say "signed $IMAGE@$digest, with its provenance and SBOM"
  fi
fi
say "svc $VERSION in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
