#!/usr/bin/env bash
# A private test environment: a Docker engine on its own socket and data dir, a plain registry
# and an htpasswd (Basic auth) registry on loopback, and a busybox rootfs to build images from.
#   scripts/sandbox.sh up     install what is missing (Debian, root), start everything (idempotent)
#   scripts/sandbox.sh env    print the variables tests read (eval "$(scripts/sandbox.sh env)")
#   scripts/sandbox.sh down   stop only what `up` started, by process id, and remove its state
#   scripts/sandbox.sh status
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${SVC_SANDBOX_DIR:-$ROOT/.sandbox}
REGISTRY_PORT=${SVC_SANDBOX_REGISTRY_PORT:-5000}
AUTH_REGISTRY_PORT=${SVC_SANDBOX_AUTH_REGISTRY_PORT:-5001}
AUTH_USER=svc-test
AUTH_PASS=svc-test-password
SOCK="$DIR/docker.sock"

PACKAGES="docker.io docker-registry skopeo busybox-static mosquitto mosquitto-clients python3-aiosmtpd
  qemu-user-static libc6-arm64-cross apache2-utils openssl curl ca-certificates"

log() { printf 'sandbox: %s\n' "$*" >&2; }

need_install() {
  local cmd
  for cmd in dockerd docker docker-registry skopeo busybox mosquitto mosquitto_sub htpasswd openssl curl qemu-aarch64-static; do
    command -v "$cmd" >/dev/null 2>&1 || return 0
  done
  [ -d /usr/aarch64-linux-gnu/lib ] || return 0
  # Debian's python3-aiosmtpd is for Debian's python3; a pyenv python3 first on PATH lacks it.
  local py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  "$py" -c 'import aiosmtpd' 2>/dev/null || return 0
  return 1
}

install_packages() {
  need_install || return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing tools and not root on Debian: install these packages: $PACKAGES"
    exit 1
  fi
  log "installing Debian packages (once)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

wait_for() { # wait_for SECONDS CMD...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

start_dockerd() {
  alive "$DIR/dockerd.pid" && return 0
  mkdir -p "$DIR/data" "$DIR/exec"
  # setsid: the engine must not die with the shell that started it, only with `down`.
  setsid dockerd --iptables=false --ip-masq=false --bridge=none --storage-driver=vfs \
    --data-root "$DIR/data" --exec-root "$DIR/exec" --pidfile "$DIR/dockerd.pid" \
    -H "unix://$SOCK" >"$DIR/dockerd.log" 2>&1 </dev/null &
  wait_for 60 docker -H "unix://$SOCK" version || { tail -20 "$DIR/dockerd.log" >&2; exit 1; }
}

start_registry() { # start_registry NAME PORT [htpasswd]
  local name=$1 port=$2 auth=${3:-}
  alive "$DIR/$name.pid" && return 0
  mkdir -p "$DIR/$name/storage"
  {
    echo "version: 0.1"
    echo "log: { level: warn }"
    echo "storage: { filesystem: { rootdirectory: $DIR/$name/storage }, delete: { enabled: true } }"
    echo "http: { addr: 127.0.0.1:$port }"
    if [ -n "$auth" ]; then
      htpasswd -Bbn "$AUTH_USER" "$AUTH_PASS" >"$DIR/$name/htpasswd"
      echo "auth: { htpasswd: { realm: svc-sandbox, path: $DIR/$name/htpasswd } }"
    fi
  } >"$DIR/$name/config.yml"
  setsid docker-registry serve "$DIR/$name/config.yml" >"$DIR/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/$name.pid"
  wait_for 30 curl -fsS -o /dev/null -w '' "http://127.0.0.1:$port/v2/" ||
    curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/" | grep -q 401 ||
    { tail -20 "$DIR/$name.log" >&2; exit 1; }
}

build_rootfs() {
  [ -f "$DIR/rootfs.tar" ] && return 0
  local root="$DIR/rootfs"
  rm -rf "$root"; mkdir -p "$root/bin" "$root/tmp" "$root/etc"
  cp "$(command -v busybox)" "$root/bin/busybox"
  for c in sh sleep echo cat ls true false kill test grep wget env id hostname nc touch rm mkdir; do
    ln -sf busybox "$root/bin/$c"
  done
  echo "root:x:0:0:root:/root:/bin/sh" >"$root/etc/passwd"
  echo "nobody:x:65534:65534:nobody:/:/bin/false" >>"$root/etc/passwd"
  echo "root:x:0:" >"$root/etc/group"; echo "nogroup:x:65534:" >>"$root/etc/group"
  tar -C "$root" -cf "$DIR/rootfs.tar" .
}

print_env() {
  cat <<VARS
export SVC_SANDBOX_DIR="$DIR"
export SVC_TEST_DOCKER_HOST="unix://$SOCK"
export SVC_TEST_DOCKER_CONFIG="$DIR/docker-config"
export SVC_TEST_REGISTRY="127.0.0.1:$REGISTRY_PORT"
export SVC_TEST_AUTH_REGISTRY="127.0.0.1:$AUTH_REGISTRY_PORT"
export SVC_TEST_AUTH_USER="$AUTH_USER"
export SVC_TEST_AUTH_PASS="$AUTH_PASS"
export SVC_TEST_ROOTFS="$DIR/rootfs.tar"
VARS
}

up() {
  install_packages
  mkdir -p "$DIR"
  start_dockerd
  start_registry registry "$REGISTRY_PORT"
  start_registry auth-registry "$AUTH_REGISTRY_PORT" htpasswd
  build_rootfs
  # The engine must be able to push to the auth registry too.
  # In a Docker CLI config folder of the sandbox's own: a login in ~/.docker would outlive the
  # sandbox and hand those credentials to every svc started on this machine.
  mkdir -p "$DIR/docker-config"
  DOCKER_CONFIG="$DIR/docker-config" docker -H "unix://$SOCK" login -u "$AUTH_USER" --password-stdin \
    "127.0.0.1:$AUTH_REGISTRY_PORT" <<<"$AUTH_PASS" >/dev/null 2>&1 || true
  log "up: engine unix://$SOCK, registries 127.0.0.1:$REGISTRY_PORT and 127.0.0.1:$AUTH_REGISTRY_PORT (basic auth)"
}

stop_pid() { # stop_pid PIDFILE: TERM, wait up to 20 s, then KILL
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}

down() {
  [ -d "$DIR" ] || return 0
  if alive "$DIR/dockerd.pid"; then
    # Containers first, so that no shim outlives the engine; then the networks, whose bridges
    # would otherwise stay in the host's kernel after the engine is gone.
    ids=$(docker -H "unix://$SOCK" ps -aq 2>/dev/null || true)
    [ -z "$ids" ] || docker -H "unix://$SOCK" rm -f $ids >/dev/null 2>&1 || true
    docker -H "unix://$SOCK" network prune -f >/dev/null 2>&1 || true
  fi
  stop_pid "$DIR/dockerd.pid"
  stop_pid "$DIR/registry.pid"
  stop_pid "$DIR/auth-registry.pid"
  # Anything the engine left mounted under our own folders.
  # (grep finds nothing in the usual case: that must not end `down` under pipefail before rm.)
  { grep -o " $DIR/[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # The engine's containerd may still be letting go of its files for a moment.
  for _ in 1 2 3 4 5; do rm -rf "$DIR" 2>/dev/null && break; sleep 1; done
  [ ! -e "$DIR" ] || { log "could not remove $DIR"; return 1; }
  log "down"
}

status() {
  for p in dockerd registry auth-registry; do
    if alive "$DIR/$p.pid"; then echo "$p: running ($(cat "$DIR/$p.pid"))"; else echo "$p: stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) print_env ;;
  status) status ;;
  *) echo "usage: $0 up|down|env|status" >&2; exit 2 ;;
esac
