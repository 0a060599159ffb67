#!/usr/bin/env bash
# Prepares the root file system of the scratch image: the compiled binary as /svc, exactly the
# shared libraries it is linked against (nothing more and nothing less than the binary needs),
# a world-writable /tmp and an empty /var/empty. The Dockerfile copies this folder to / as it is.
#   scripts/image-context.sh [BINARY [DEST]]    defaults: dist/svc  dist/image
# For this machine's architecture the libraries are the machine's own, found with ldd. For
# another architecture (the arm64 image built on x86_64) they come from Debian's libc6 package
# of that architecture, downloaded into a cache, and are found by reading the binary's
# interpreter and NEEDED entries (readelf), library by library.
set -euo pipefail
cd "$(dirname "$0")/.."

BINARY=${1:-dist/svc}
DEST=${2:-dist/image}
CACHE=${SVC_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-image}

[ -x "$BINARY" ] || { echo "image-context: $BINARY is missing: run 'bun run build' first" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST/tmp" "$DEST/var/empty"
chmod 1777 "$DEST/tmp"
chmod 0755 "$DEST/var/empty" # the Dockerfile makes /var/lib/svc from it, owned by the image's user
cp "$BINARY" "$DEST/svc"
chmod 0755 "$DEST/svc"

copy_lib() { # copy_lib FILE PATH: the library itself under the path the binary asks for
  mkdir -p "$DEST$(dirname "$2")"
  cp -L "$1" "$DEST$2"
}

# The Debian architecture of an ELF file, from readelf's machine line.
elf_arch() {
  case $(readelf -h "$1" | awk -F: '/Machine:/ { gsub(/^ +/, "", $2); print $2 }') in
    "Advanced Micro Devices X86-64") echo amd64 ;;
    AArch64) echo arm64 ;;
    *) echo unknown ;;
  esac
}

# Debian's libc6 for ARCH, unpacked once into the cache (apt with a private state, the machine's
# own archive and suite), so that the image holds the files a Debian system of ARCH has.
foreign_root() {
  local arch=$1 root="$CACHE/libc6-$1/root"
  if [ ! -e "$root/.done" ]; then
    local a="$CACHE/libc6-$arch/apt" uri suite
    mkdir -p "$a/lists/partial" "$a/cache/archives/partial"
    uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    suite=$(awk '/^Suites:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$uri" ] && [ -n "$suite" ] || { echo "image-context: no Debian archive in the apt configuration" >&2; exit 1; }
    echo "deb [arch=$arch] $uri $suite main" >"$a/sources.list"
    local o=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=/nonexistent -o "Dir::State::Lists=$a/lists"
      -o "Dir::Cache=$a/cache" -o "APT::Architectures::=$arch" -o APT::Sandbox::User=root)
    apt-get "${o[@]}" update -qq >/dev/null
    (cd "$a" && rm -f ./*.deb && apt-get "${o[@]}" download "libc6:$arch" >/dev/null)
    rm -rf "$root"; mkdir -p "$root"
    dpkg -x "$a"/libc6_*.deb "$root"
    touch "$root/.done"
  fi
  echo "$root"
}

host_arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
arch=$(elf_arch "$BINARY")
if [ "$arch" = "$host_arch" ]; then
  # ldd prints "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" for libraries and
  # "/lib64/ld-linux-x86-64.so.2 (0x...)" for the loader; linux-vdso is in the kernel, not on disk.
  libs=$(ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
  [ -n "$libs" ] || { echo "image-context: ldd found no libraries for $BINARY (not a dynamic glibc binary?)" >&2; exit 1; }
  for lib in $libs; do copy_lib "$lib" "$lib"; done
else
  root=$(foreign_root "$arch")
  interpreter=$(readelf -l "$BINARY" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
  [ -n "$interpreter" ] || { echo "image-context: $BINARY names no program interpreter" >&2; exit 1; }
  copy_lib "$root$interpreter" "$interpreter"
  # NEEDED names, followed through the libraries themselves, looked up where Debian keeps them
  pending=$(readelf -d "$BINARY" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  seen=""
  while [ -n "$pending" ]; do
    set -- $pending; name=$1; shift; pending="$*"
    case " $seen " in *" $name "*) continue ;; esac
    seen="$seen $name"
    file=$(find "$root/lib" "$root/usr/lib" -name "$name" 2>/dev/null | head -1)
    [ -n "$file" ] || { echo "image-context: $name (needed by $BINARY) is not in Debian's libc6:$arch" >&2; exit 1; }
    copy_lib "$file" "${file#"$root"}"
    pending="$pending $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    pending=$(echo $pending)
  done
fi
echo "$DEST"
