#!/bin/sh
# Installs the svc binary for this machine from a release, checking its SHA-256 first and, where
# cosign is installed, the release's signature of SHA256SUMS.
#
#   curl -fsSL https://github.com/svc-project/svc/releases/latest/download/install.sh | sh
#   sh install.sh [--prefix DIR]        installs DIR/bin/svc (default DIR: /usr/local)
#   sh install.sh --systemd             also a hardened systemd unit (/etc/systemd/system/svc.service)
#                                       and a sample /etc/svc/svc.toml to edit
#
# The copy published with a release knows that release: scripts/release.sh writes its address and
# signer into the RELEASE_* lines below (they are empty in the repository, whose copy therefore
# needs SVC_INSTALL_BASE_URL). SVC_INSTALL_BASE_URL overrides where svc-linux-<arch>[-musl] and
# SHA256SUMS are downloaded from (a mirror, another release, or a local server in tests); the
# signature is still checked against the signer written below.
# A download whose checksum or signature does not match is refused: nothing is installed, temp
# files are removed. SVC_INSTALL_REQUIRE_SIGNATURE=1 also refuses to install without cosign.
# POSIX sh on purpose (dash, busybox ash): it runs before anything else is on the machine.
set -eu

# Written by scripts/release.sh into the published copy (one line each; keep their form).
RELEASE_URL=""
RELEASE_IDENTITY=""
RELEASE_ISSUER=""
RELEASE_PUBLIC_KEY=""

BASE_URL=${SVC_INSTALL_BASE_URL:-$RELEASE_URL}
PREFIX=/usr/local
SYSTEMD=""
UNIT_DIR=/etc/systemd/system
CONFIG_DIR=/etc/svc

say() { printf 'install.sh: %s\n' "$*"; }
die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }

usage() {
  cat <<'USAGE'
usage: install.sh [--prefix DIR] [--systemd [--unit-dir DIR] [--config-dir DIR]]

Downloads the svc binary for this machine, verifies it against the release's SHA256SUMS
and installs it as DIR/bin/svc (default DIR: /usr/local).
--systemd also installs the systemd unit svc.service (into /etc/systemd/system) and, when
there is none, a sample configuration /etc/svc/svc.toml to edit before starting it.
Environment: SVC_INSTALL_BASE_URL  where to download from (default: the release this
             install.sh was published with)
             SVC_INSTALL_REQUIRE_SIGNATURE=1  refuse to install when cosign is not installed
USAGE
}

while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift 2 ;;
    --prefix=*) PREFIX=${1#--prefix=}; shift ;;
    --systemd) SYSTEMD=1; shift ;;
    --unit-dir) [ $# -ge 2 ] || die "--unit-dir needs a directory"; UNIT_DIR=$2; shift 2 ;;
    --config-dir) [ $# -ge 2 ] || die "--config-dir needs a directory"; CONFIG_DIR=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
[ -n "$PREFIX" ] || die "--prefix needs a directory"
[ -n "$BASE_URL" ] || die "this install.sh names no release (the repository's copy): run the one published with a release,
  curl -fsSL https://github.com/svc-project/svc/releases/latest/download/install.sh | sh
or set SVC_INSTALL_BASE_URL to a release's download address"
BIN_DIR=${PREFIX%/}/bin

detect_arch() {
  case $(uname -m) in
    x86_64|amd64) echo x64 ;;
    aarch64|arm64|armv8*) echo arm64 ;;
    *) die "unsupported architecture $(uname -m): releases exist for x86_64 and aarch64" ;;
  esac
}

# glibc answers getconf GNU_LIBC_VERSION; musl (Alpine, Void musl) does not and names itself in ldd.
detect_libc() {
  if getconf GNU_LIBC_VERSION >/dev/null 2>&1; then echo glibc; return; fi
  if ldd --version 2>&1 | grep -qi musl; then echo musl; return; fi
  for loader in /lib/ld-musl-*.so.1; do
    [ -e "$loader" ] && { echo musl; return; }
  done
  echo glibc
}

download() { # download URL FILE
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 2 -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -O "$2" "$1"
  else
    die "neither curl nor wget is installed"
  fi
}

sha256_of() { # sha256_of FILE: prints the hex digest
  if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | awk '{ print $1 }'
  elif command -v shasum >/dev/null 2>&1; then shasum -a 256 "$1" | awk '{ print $1 }'
  elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 "$1" | awk '{ print $NF }'
  else die "no sha256sum, shasum or openssl to verify the download with"
  fi
}

# SHA256SUMS signed by the release (cosign's Sigstore bundle beside it): keyless by the release
# workflow's identity, or by a key whose public half is written above. Checked when cosign is
# installed, since the checksums are only as trustworthy as the place they were downloaded from.
verify_signature() {
  if [ -z "$RELEASE_IDENTITY" ] && [ -z "$RELEASE_PUBLIC_KEY" ]; then
    say "note: this release is not signed: only the checksum is checked"
    return
  fi
  if ! command -v cosign >/dev/null 2>&1; then
    [ "${SVC_INSTALL_REQUIRE_SIGNATURE:-}" != 1 ] || die "cosign is not installed and SVC_INSTALL_REQUIRE_SIGNATURE=1: refusing to install without checking the signature"
    say "note: cosign is not installed: the signature of SHA256SUMS is not checked, only the checksum"
    return
  fi
  download "$BASE_URL/SHA256SUMS.sigstore.json" "$TMP/SHA256SUMS.sigstore.json" ||
    die "could not download $BASE_URL/SHA256SUMS.sigstore.json (the signature)"
  if [ -n "$RELEASE_IDENTITY" ]; then
    set -- --certificate-identity "$RELEASE_IDENTITY" --certificate-oidc-issuer "$RELEASE_ISSUER"
    signer=$RELEASE_IDENTITY
  else
    # a key signs offline: no transparency log entry to look for
    printf '%s\n' "$RELEASE_PUBLIC_KEY" >"$TMP/release.pub"
    set -- --key "$TMP/release.pub" --insecure-ignore-tlog=true
    signer="the release key"
  fi
  cosign verify-blob "$@" --bundle "$TMP/SHA256SUMS.sigstore.json" "$TMP/SHA256SUMS" >"$TMP/cosign.log" 2>&1 ||
    die "the signature of SHA256SUMS does not verify ($(tail -1 "$TMP/cosign.log")): refusing to install"
  say "signature verified: SHA256SUMS signed by $signer"
}

# The unit is the release's svc.service (systemd/svc.service in the repository), checked against
# SHA256SUMS like the binary, with this install's paths in its ExecStart line.
unit_file() { # unit_file UNIT BINARY CONFIG
  sed "s|^ExecStart=.*|ExecStart=$2 --config $3|" "$1"
}

[ "$(uname -s)" = Linux ] || die "unsupported system $(uname -s): releases exist for Linux"
ARCH=$(detect_arch)
LIBC=$(detect_libc)
ASSET=svc-linux-$ARCH
[ "$LIBC" = musl ] && ASSET=$ASSET-musl

TMP=$(mktemp -d "${TMPDIR:-/tmp}/svc-install.XXXXXX")
STAGED=""
cleanup() {
  rm -rf "$TMP"
  [ -z "$STAGED" ] || rm -f "$STAGED"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "downloading $ASSET from $BASE_URL"
download "$BASE_URL/SHA256SUMS" "$TMP/SHA256SUMS" || die "could not download $BASE_URL/SHA256SUMS"
verify_signature
# sha256sum's format: "<hex>  <name>" (or "<hex> *<name>" in binary mode).
EXPECTED=$(awk -v name="$ASSET" '$2 == name || $2 == "*" name { print $1; exit }' "$TMP/SHA256SUMS")
if [ -z "$EXPECTED" ]; then
  [ "$LIBC" = musl ] && die "this release has no musl build ($ASSET); run the container image instead, or install gcompat and libstdc++ and use svc-linux-$ARCH"
  die "SHA256SUMS lists no $ASSET"
fi
download "$BASE_URL/$ASSET" "$TMP/$ASSET" || die "could not download $BASE_URL/$ASSET"

verify() { # verify NAME: the file $TMP/NAME against SHA256SUMS, or die
  want=$(awk -v name="$1" '$2 == name || $2 == "*" name { print $1; exit }' "$TMP/SHA256SUMS")
  [ -n "$want" ] || die "SHA256SUMS lists no $1"
  got=$(sha256_of "$TMP/$1")
  [ "$got" = "$want" ] || die "checksum mismatch for $1 (expected $want, got $got): refusing to install it"
  say "checksum verified: $1 ($got)"
}
verify "$ASSET"
if [ -n "$SYSTEMD" ]; then
  download "$BASE_URL/svc.service" "$TMP/svc.service" || die "could not download $BASE_URL/svc.service"
  verify svc.service
fi

mkdir -p "$BIN_DIR" 2>/dev/null || die "cannot create $BIN_DIR (run as root, or use --prefix \"\$HOME/.local\")"
# Staged next to the target and renamed into place, so an interrupted install never leaves a
# half-written svc behind and a running svc keeps its old file.
STAGED="$BIN_DIR/.svc.install.$$"
cp "$TMP/$ASSET" "$STAGED" 2>/dev/null || die "cannot write to $BIN_DIR (run as root, or use --prefix \"\$HOME/.local\")"
chmod 0755 "$STAGED"
VERSION=$("$STAGED" --version 2>/dev/null) || die "the downloaded $ASSET does not run on this machine"
mv -f "$STAGED" "$BIN_DIR/svc"
STAGED=""

say "installed svc $VERSION as $BIN_DIR/svc"

install_systemd() {
  mkdir -p "$UNIT_DIR" "$CONFIG_DIR" 2>/dev/null || die "cannot create $UNIT_DIR or $CONFIG_DIR (run as root)"
  unit_file "$TMP/svc.service" "$BIN_DIR/svc" "$CONFIG_DIR/svc.toml" >"$UNIT_DIR/svc.service.tmp" && mv -f "$UNIT_DIR/svc.service.tmp" "$UNIT_DIR/svc.service" ||
    die "cannot write $UNIT_DIR/svc.service"
  say "installed the systemd unit $UNIT_DIR/svc.service"
  if [ -e "$CONFIG_DIR/svc.toml" ]; then
    say "kept the existing $CONFIG_DIR/svc.toml"
  else
    "$BIN_DIR/svc" --generate-config "$CONFIG_DIR/svc.toml" >/dev/null 2>&1 || die "could not write $CONFIG_DIR/svc.toml"
    # it will hold secrets: readable by root and the unit's user (a dynamic user in group docker) only
    if chgrp docker "$CONFIG_DIR/svc.toml" 2>/dev/null; then
      chmod 0640 "$CONFIG_DIR/svc.toml"
    else
      say "no docker group yet: $CONFIG_DIR/svc.toml is root's only (0600); once Docker is installed: chgrp docker $CONFIG_DIR/svc.toml && chmod 0640 $CONFIG_DIR/svc.toml"
    fi
    say "wrote a sample $CONFIG_DIR/svc.toml"
  fi
  say "next step: set a schedule in $CONFIG_DIR/svc.toml (poll_interval or schedule), then:"
  printf '\n    systemctl daemon-reload && systemctl enable --now svc\n\n'
}
if [ -n "$SYSTEMD" ]; then
  install_systemd
  exit 0
fi
case ":$PATH:" in
  *":$BIN_DIR:"*) SVC=svc ;;
  *) SVC="$BIN_DIR/svc"; say "note: $BIN_DIR is not on your PATH" ;;
esac
say "next step: write a configuration file to edit:"
printf '\n    %s --generate-config svc.toml\n\n' "$SVC"
