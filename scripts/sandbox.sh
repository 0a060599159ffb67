#!/usr/bin/env bash
# A private test environment: a container engine on its own socket and data dir, a plain registry
# and an htpasswd (Basic auth) registry on loopback, and a busybox rootfs to build images from.
#   scripts/sandbox.sh up     install what is missing (Debian, root), start everything (idempotent)
#   scripts/sandbox.sh env    print the variables tests read (eval "$(scripts/sandbox.sh env)"), and
#                             DOCKER_HOST, PATH and DOCKER_CONFIG, so that the docker CLI (28.5's, with
#                             its compose plugin: `docker compose`; no registry login) and svc talk to
#                             the sandbox's engine
# The engine has no default bridge network (--bridge=none): run containers with --network none or
# on a user-defined network (docker network create); a plain `docker run` container cannot even
# be renamed, so svc cannot update it ("network bridge not found").
#   scripts/sandbox.sh down   stop only what `up` started, by process id, and remove its state
#   scripts/sandbox.sh status
#   scripts/sandbox.sh start-engine   start the engine again after a test stopped it (its own command line)
#   scripts/sandbox.sh prepare  only install the packages and download Docker 28.5 and cosign (before several ups at once;
#                               with SVC_SANDBOX_ENGINE=podman5 also make the sid root of Podman 5.8)
#   scripts/sandbox.sh prepare-podman5  only make the sid root of Podman 5.8 (no Debian package needed:
#                               the test command makes it beside the packages' install)
#   scripts/sandbox.sh check    name each tool the tests need that is missing (exit 1), as the test command
#                               does before its first test
#   scripts/sandbox.sh swarm-up     a two-node Swarm: the engine as manager, a second engine joined as worker
#   scripts/sandbox.sh swarm-down   leave it on both nodes and stop the second engine (`down` does it too)
#   scripts/sandbox.sh logs DEST    copy the engines' and registries' logs into DEST (before `down`
#                                   removes them: what explains a failed test run afterwards)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${SVC_SANDBOX_DIR:-$ROOT/.sandbox}
REGISTRY_PORT=${SVC_SANDBOX_REGISTRY_PORT:-5000}
AUTH_REGISTRY_PORT=${SVC_SANDBOX_AUTH_REGISTRY_PORT:-5001}
AUTH_USER=svc-test
AUTH_PASS=svc-test-password
SOCK="$DIR/docker.sock"
# Which engine (README, "Engines"):
#   docker28-containerd  Docker 28.5 with the containerd image store (a fresh Docker 29's default)
#   docker28             Docker 28.5 with the classic image store
#   docker20             Debian 12's Docker 20.10, the oldest engine svc supports
#   podman               Debian 12's podman 4.3 serving its Docker-compatible API (rootful)
#   podman-rootless      the same Podman as a user of the sandbox's own (see "rootless Podman" below)
#   podman5              Podman 5.8 from Debian sid, in a sid root (see "Podman 5" below), rootful
#   podman5-rootless     the same Podman 5.8 as a user of the sandbox's own
ENGINE=${SVC_SANDBOX_ENGINE:-docker28-containerd}
# Docker 28.5 comes from Debian's own packages (sid), unpacked into this cache, never installed
# over the system's: Debian 12's libc stays. Pinned; the cache outlives `down` (downloads only).
CACHE=${SVC_SANDBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-sandbox}
SID_PINS="docker.io=28.5.2+dfsg4-5 containerd=2.1.9+ds1-5 docker-cli=28.5.2+dfsg4-5 docker-compose=2.40.3-3"
SID_ROOT="$CACHE/sid-docker-28.5.2/root"
# The Docker CLI this script, the tests and the demo use: 28.5's (docker manifest, compose), for
# every engine.
CLI_BIN="$CACHE/sid-docker-28.5.2/bin"
# cosign (Sigstore's signer) from sid as well, one static binary, on the same PATH: the release
# test signs the binaries' checksums and the image with a test key and verifies them with it.
COSIGN_PIN="cosign=3.1.1-2"
COSIGN_ROOT="$CACHE/sid-cosign-${COSIGN_PIN#cosign=}"
PATH="$CLI_BIN:$PATH"

# wrk is the bench's load generator (`bun run bench` brings its engine up through this script);
# caddy is the TLS proxy in front of a peer in docs/dashboard.md, run by its test.
# uidmap and slirp4netns are rootless Podman's; podman-compose and catatonit (the pause image of a
# `podman kube play` pod) are the Podman set's.
PACKAGES="docker.io docker-registry skopeo busybox-static mosquitto mosquitto-clients python3-aiosmtpd
  qemu-user-static libc6-arm64-cross apache2-utils openssl curl ca-certificates podman systemd wrk chromium caddy git
  uidmap slirp4netns podman-compose catatonit"

log() { printf 'sandbox: %s\n' "$*" >&2; }

missing_tools() { # each tool the tests start that is not here, a line each (nothing: all are)
  local cmd
  for cmd in dockerd docker docker-registry skopeo busybox mosquitto mosquitto_sub htpasswd openssl curl qemu-aarch64-static podman systemd-analyze wrk chromium caddy git newuidmap slirp4netns podman-compose catatonit; do
    command -v "$cmd" >/dev/null 2>&1 || echo "$cmd"
  done
  [ -d /usr/aarch64-linux-gnu/lib ] || echo "/usr/aarch64-linux-gnu/lib (libc6-arm64-cross)"
  # the Git room's tests push to git http-backend (Debian's git ships it)
  [ -x /usr/lib/git-core/git-http-backend ] || echo "/usr/lib/git-core/git-http-backend (git)"
  # Debian's python3-aiosmtpd is for Debian's python3; a pyenv python3 first on PATH lacks it.
  local py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  "$py" -c 'import aiosmtpd' 2>/dev/null || echo "python3's aiosmtpd (python3-aiosmtpd)"
}
need_install() { [ -n "$(missing_tools)" ]; }

# What the test command checks before its first test: every tool, Docker 28.5's unpacked binaries,
# and (SVC_SANDBOX_ENGINE=podman5) the sid root; each missing one named.
check_tools() {
  local missing
  missing=$(missing_tools)
  [ -x "$SID_ROOT/usr/sbin/dockerd" ] || missing+=$'\n'"Docker 28.5 in $SID_ROOT (scripts/sandbox.sh prepare)"
  [ -x "$COSIGN_ROOT/usr/bin/cosign" ] || missing+=$'\n'"cosign in $COSIGN_ROOT (scripts/sandbox.sh prepare)"
  case "$ENGINE" in podman5*) [ -x "$PODMAN5_ROOT/usr/bin/podman" ] || missing+=$'\n'"the sid root of Podman $PODMAN5_PIN (SVC_SANDBOX_ENGINE=podman5 scripts/sandbox.sh prepare)" ;; esac
  missing=$(printf '%s\n' "$missing" | grep . || true)
  [ -z "$missing" ] || { printf 'sandbox: missing: %s\n' "$missing" >&2; return 1; }
  log "every tool the tests start is here"
}

install_packages() {
  need_install || return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing tools and not root on Debian: install these packages: $PACKAGES"
    exit 1
  fi
  log "installing Debian packages (once)"
  # an install stopped half-way (a run stopped during its set-up) leaves dpkg asking for this first
  dpkg --configure -a >/dev/null 2>&1 || true
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

# The sid packages of Docker 28.5, downloaded once into the cache and unpacked there. The archive
# is the machine's own (its apt configuration), with a private sources list and state.
fetch_sid_docker() {
  [ -x "$SID_ROOT/usr/sbin/dockerd" ] && return 0
  log "downloading Docker 28.5 from Debian sid ($SID_PINS)"
  # shellcheck disable=SC2086
  fetch_sid "$SID_ROOT" $SID_PINS
}

fetch_sid_cosign() {
  [ -x "$COSIGN_ROOT/usr/bin/cosign" ] && return 0
  log "downloading cosign from Debian sid ($COSIGN_PIN)"
  fetch_sid "$COSIGN_ROOT" "$COSIGN_PIN"
}

# fetch_sid ROOT PKG=VERSION...: the pinned sid packages, unpacked into ROOT (made whole or not at all),
# through a private apt state ($SID_APT names another than the default: the sid root of Podman 5.8
# is made beside Docker's download, and two downloads into one folder would take each other's packages)
fetch_sid() {
  local root=$1; shift
  local a=${SID_APT:-$CACHE/sid-apt} uri
  mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$CACHE"
  uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$uri" ] || { log "no Debian archive found in the apt configuration"; exit 1; }
  echo "deb $uri sid main" >"$a/sources.list"
  local o=(-o "Dir::Etc::sourcelist=$a/sources.list" -o Dir::Etc::sourceparts=/nonexistent
    -o "Dir::State::Lists=$a/lists" -o "Dir::Cache=$a/cache" -o APT::Sandbox::User=root)
  apt-get "${o[@]}" update -qq >/dev/null
  (cd "$a" && apt-get "${o[@]}" download "$@" >/dev/null) ||
    { log "a pinned version is gone from sid ($*): update SID_PINS or COSIGN_PIN in scripts/sandbox.sh and README's engine table"; exit 1; }
  local tmp="$root.tmp" deb
  rm -rf "$tmp"; mkdir -p "$tmp"
  for deb in "$a"/*.deb; do dpkg -x "$deb" "$tmp"; done
  rm -f "$a"/*.deb
  rm -rf "$root"
  mv "$tmp" "$root"
}

# cosign's path, downloaded once (fetch_sid_cosign), for the signed-image tests
cosign_bin() {
  fetch_sid_cosign >&2
  echo "$COSIGN_ROOT/usr/bin/cosign"
}

prepare_cli() {
  fetch_sid_docker
  fetch_sid_cosign
  mkdir -p "$CLI_BIN" "$DIR/docker-config/cli-plugins"
  ln -sf "$SID_ROOT/usr/bin/docker" "$CLI_BIN/docker"
  ln -sf "$COSIGN_ROOT/usr/bin/cosign" "$CLI_BIN/cosign"
  ln -sf "$SID_ROOT/usr/libexec/docker/cli-plugins/docker-compose" "$DIR/docker-config/cli-plugins/docker-compose"
  # the DOCKER_CONFIG `env` exports: the compose plugin and no registry login, so that a svc run
  # from that shell finds no credentials the tests did not give it
  # (and an empty config.json: Podman's CLI, which reads DOCKER_CONFIG too, refuses a folder without one)
  mkdir -p "$DIR/cli-config/cli-plugins"
  ln -sf "$SID_ROOT/usr/libexec/docker/cli-plugins/docker-compose" "$DIR/cli-config/cli-plugins/docker-compose"
  [ -f "$DIR/cli-config/config.json" ] || echo '{}' >"$DIR/cli-config/config.json"
}

start_dockerd() { # start_dockerd [FOLDER]: the sandbox's engine, or another one (the Swarm worker) in FOLDER
  local root=${1:-$DIR}
  local sock="$root/docker.sock"
  alive "$root/dockerd.pid" && return 0
  mkdir -p "$root/data" "$root/exec"
  local path=$PATH args=(--iptables=false --ip-masq=false --bridge=none)
  # Networks from an address pool of this sandbox's own (10.100-199, by its registry port; the
  # Swarm worker the upper half): engines side by side share the host's routes, and with Docker's
  # default pools a dozen legs' compose projects ran out of them ("all predefined address pools
  # have been fully subnetted")
  local pool=$((100 + ((REGISTRY_PORT - 5000) / 5 % 100 + 100) % 100)) half=0
  [ -z "${1:-}" ] || half=128
  args+=(--default-address-pool "base=10.$pool.$half.0/17,size=24")
  # Overlay storage, as users have it (overlay2; containerd's overlayfs snapshotter): vfs and
  # the native snapshotter copy a whole root file system for every layer and container, which
  # took a third of the test command's CPU time in the kernel.
  case "$ENGINE" in
    docker20) args+=(--storage-driver=overlay2) ;;
    docker28) path="$SID_ROOT/usr/bin:$SID_ROOT/usr/sbin:$PATH"; args+=(--storage-driver=overlay2) ;;
    docker28-containerd)
      path="$SID_ROOT/usr/bin:$SID_ROOT/usr/sbin:$PATH"
      echo '{"features":{"containerd-snapshotter":true},"storage-driver":"overlayfs"}' >"$root/daemon.json"
      args+=(--config-file "$root/daemon.json") ;;
  esac
  # SVC_SANDBOX_ENGINE_DEBUG=1: the engine logs each Engine API request ("Calling GET /v1.47/...")
  # in its dockerd.log: what a test file asks of the engine, counted (docs/testing.md)
  [ "${SVC_SANDBOX_ENGINE_DEBUG:-0}" != 1 ] || args+=(--debug)
  # setsid: the engine must not die with the shell that started it, only with `down`.
  # sid's dockerd starts sid's containerd (first on its PATH); runc stays Debian 12's.
  PATH=$path setsid dockerd "${args[@]}" \
    --data-root "$root/data" --exec-root "$root/exec" --pidfile "$root/dockerd.pid" \
    -H "unix://$sock" >"$root/dockerd.log" 2>&1 </dev/null &
  wait_for 60 engine_answers "$sock" || { tail -20 "$root/dockerd.log" >&2; exit 1; }
}

# Podman's Docker-compatible API, with its storage, runtime state and configuration all in the
# sandbox folder. What it needs here: cgroupfs, events to a file, and default ulimits below this
# machine's hard limits (podman's own defaults ask for more and runc refuses them). Overlay storage
# (the kernel's, rootless too), as users have it: on vfs, Podman 4.3's runc now and then failed to
# bind-mount a uid-mapped container's root at start ("error preparing rootfs: mount ...:
# permission denied"), a flake of Podman's vfs with custom id maps, not of the container svc made.
# Podman refuses a runroot longer than 50 characters (its sockets live there), so the runtime
# state goes to a short folder named after the sandbox folder's hash, removed by `down`.
podman_runroot() { echo "/tmp/svc-podman-$(printf %s "$DIR" | md5sum | cut -c1-12)"; }

podman_env() {
  export CONTAINERS_CONF="$DIR/podman/containers.conf" CONTAINERS_STORAGE_CONF="$DIR/podman/storage.conf"
  export CONTAINERS_REGISTRIES_CONF="$DIR/podman/registries.conf"
}

start_podman() {
  alive "$DIR/podman.pid" && return 0
  local p="$DIR/podman" run
  run=$(podman_runroot)
  mkdir -p "$p/root" "$run" "$p/tmp" "$p/var-tmp" "$p/cni"
  cat >"$p/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$p/events.log"
runtime = "runc"
[network]
network_config_dir = "$p/cni"
CONF
  printf '[storage]\ndriver = "overlay"\nrunroot = "%s"\ngraphroot = "%s"\n' "$run" "$p/root" >"$p/storage.conf"
  {
    echo 'unqualified-search-registries = []'
    for port in "$REGISTRY_PORT" "$AUTH_REGISTRY_PORT"; do
      printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$port"
    done
  } >"$p/registries.conf"
  podman_env
  # (in its own folder: Podman 4.3's service reads a remote build's Dockerfile from its working
  # directory before the context's, and the checkout's root has svc's own)
  (cd "$p" && TMPDIR="$p/var-tmp" exec setsid podman --root "$p/root" --runroot "$run" --tmpdir "$p/tmp" \
    system service --time=0 "unix://$SOCK" >"$DIR/podman.log" 2>&1 </dev/null) &
  echo $! >"$DIR/podman.pid"
  wait_for 60 engine_answers "$SOCK" || { tail -20 "$DIR/podman.log" >&2; exit 1; }
}

# ----- rootless Podman (podman-rootless) -----
# Podman as an unprivileged user the sandbox makes (svcpod<registry port>, its own subordinate ids,
# removed by `down`), serving its socket where rootless Podman does: $XDG_RUNTIME_DIR/podman/
# podman.sock, with XDG_RUNTIME_DIR=/run/user/<uid> made here (no login session makes it). Its
# home, storage and configuration are in the sandbox folder. Rootless networks (podman-compose's,
# a kube pod's) need /dev/net/tun for slirp4netns (4.3) and pasta (5.8), which this machine keeps
# root's alone (0600; Debian's own default is 0666): the service runs in a mount namespace of its
# own where a node of the sandbox's, the same device open to all, is mounted over /dev/net/tun.
# The host's device is never changed.
ROOTLESS_USER="svcpod$REGISTRY_PORT"
user_tun() { # user_tun: the sandbox's /dev/net/tun node, made once
  [ -c "$DIR/tun" ] || mknod -m 0666 "$DIR/tun" c 10 200
  echo "$DIR/tun"
}
rootless_uid() { id -u "$ROOTLESS_USER" 2>/dev/null; }
case "$ENGINE" in podman-rootless|podman5-rootless) if rootless_uid >/dev/null; then SOCK="/run/user/$(rootless_uid)/podman/podman.sock"; fi ;; esac

start_podman_rootless() {
  alive "$DIR/podman.pid" && return 0
  local p="$DIR/podman" home="$DIR/podman-home" first uid run
  id "$ROOTLESS_USER" >/dev/null 2>&1 || useradd --no-create-home --home-dir "$home" --shell /usr/sbin/nologin "$ROOTLESS_USER"
  uid=$(rootless_uid)
  # 65536 subordinate ids of its own, above any a distribution hands out, apart for each sandbox
  first=$((1000000 + 65536 * (REGISTRY_PORT % 10000)))
  grep -q "^$ROOTLESS_USER:" /etc/subuid || echo "$ROOTLESS_USER:$first:65536" >>/etc/subuid
  grep -q "^$ROOTLESS_USER:" /etc/subgid || echo "$ROOTLESS_USER:$first:65536" >>/etc/subgid
  run="/run/user/$uid"
  SOCK="$run/podman/podman.sock"
  mkdir -p "$run" "$home" "$p/var-tmp"
  chmod 0700 "$run"
  printf '[containers]\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nevents_logfile_path = "%s"\nruntime = "runc"\n' "$p/events.log" >"$p/containers.conf"
  printf '[storage]\ndriver = "overlay"\n' >"$p/storage.conf"
  {
    echo 'unqualified-search-registries = []'
    for port in "$REGISTRY_PORT" "$AUTH_REGISTRY_PORT"; do printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$port"; done
  } >"$p/registries.conf"
  chown -R "$ROOTLESS_USER:" "$run" "$home" "$p"
  # sh and setpriv exec podman as the user: the pid is podman's own, for `down` (in its own
  # folder, as the rootful service: see start_podman)
  # shellcheck disable=SC2016
  (cd "$p" && exec setsid unshare --mount --propagation private sh -c 'mount --bind "$1" /dev/net/tun || exit 1; shift; exec "$@"' \
    sh "$(user_tun)" setpriv --reuid "$uid" --regid "$uid" --init-groups \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" USER="$ROOTLESS_USER" XDG_RUNTIME_DIR="$run" TMPDIR="$p/var-tmp" \
      CONTAINERS_CONF="$p/containers.conf" CONTAINERS_STORAGE_CONF="$p/storage.conf" CONTAINERS_REGISTRIES_CONF="$p/registries.conf" \
      podman system service --time=0 >"$DIR/podman.log" 2>&1 </dev/null) &
  echo $! >"$DIR/podman.pid"
  wait_for 60 engine_answers "$SOCK" || { tail -20 "$DIR/podman.log" >&2; exit 1; }
}

# A systemd user manager for the sandbox's user (podman-rootless): what runs a rootless Podman's
# units (`podman generate systemd --new`, quadlet), for the test of svc restarting one
# (docs/podman.md). This machine was not booted with systemd, which `systemd --user` checks
# (/run/systemd/system): the manager runs in a mount namespace of its own with a private
# /run/systemd. Its cgroup is a folder of the sandbox's own in each hierarchy systemd tracks
# processes in (cgroup2 alone, or the named systemd one and the unified one beside it), owned by
# the user; `down` stops the manager by its pid (it stops its units) and removes the folders.
# Quadlet: Debian 12's Podman 4.3 has none (4.4 brought it), so the manager's generator is sid's
# quadlet from Podman 5.8's root when that root is made (`prepare`; quadlet starts with this
# machine's C library), linked in the manager's own /run/systemd/user-generators: it makes units
# of the user's `.container` files that run this machine's Podman 4.3 (docs/podman.md, "Tested").
user_systemd_cgroups() {
  if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then echo "/sys/fs/cgroup/svc-sandbox-$REGISTRY_PORT"; return; fi
  local h
  for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do [ -d "$h" ] && echo "$h/svc-sandbox-$REGISTRY_PORT"; done
}

start_user_systemd() {
  alive "$DIR/systemd.pid" && return 0
  command -v systemd >/dev/null || { log "no systemd here: no user manager for the unit test"; return 0; }
  local p="$DIR/podman" uid cg cgroups=()
  uid=$(rootless_uid)
  mapfile -t cgroups < <(user_systemd_cgroups)
  [ "${#cgroups[@]}" -gt 0 ] || { log "no cgroup hierarchy for a systemd user manager"; return 0; }
  for cg in "${cgroups[@]}"; do mkdir -p "$cg" && chown -R "$uid" "$cg"; done
  mkdir -p "$DIR/podman-home/.config/systemd/user" "$DIR/podman-home/.config/containers/systemd"
  chown -R "$ROOTLESS_USER:" "$DIR/podman-home"
  local quadlet=""
  if [ -x "$PODMAN5_ROOT/usr/libexec/podman/quadlet" ]; then
    quadlet="$DIR/quadlet"
    install -m 0755 "$PODMAN5_ROOT/usr/libexec/podman/quadlet" "$quadlet"
  else
    log "no sid root of Podman $PODMAN5_PIN: no quadlet generator for the unit test"
  fi
  # shellcheck disable=SC2016
  setsid unshare --mount --propagation private sh -c '
    mkdir -p /run/systemd && mount -t tmpfs -o mode=0755 tmpfs /run/systemd && mkdir /run/systemd/system || exit 1
    if [ -n "$2" ]; then mkdir /run/systemd/user-generators && ln -s "$2" /run/systemd/user-generators/podman-user-generator || exit 1; fi
    for cg in $1; do echo $$ >"$cg/cgroup.procs" || exit 1; done
    shift 2; exec "$@"' sh "${cgroups[*]}" "$quadlet" setpriv --reuid "$uid" --regid "$uid" --init-groups \
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$DIR/podman-home" USER="$ROOTLESS_USER" XDG_RUNTIME_DIR="/run/user/$uid" \
      CONTAINERS_CONF="$p/containers.conf" CONTAINERS_STORAGE_CONF="$p/storage.conf" CONTAINERS_REGISTRIES_CONF="$p/registries.conf" \
      systemd --user >"$DIR/systemd.log" 2>&1 </dev/null &
  echo $! >"$DIR/systemd.pid"
  wait_for 30 test -S "/run/user/$uid/systemd/private" || { log "the systemd user manager did not start"; tail -5 "$DIR/systemd.log" >&2; }
}

stop_user_systemd() {
  stop_pid "$DIR/systemd.pid"
  local cg
  for cg in $(user_systemd_cgroups); do
    [ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

# After its engine has stopped: the user's processes (conmon), mounts, runtime folder and ids.
remove_rootless_user() {
  local uid
  uid=$(rootless_uid) || return 0
  pkill -KILL -U "$uid" 2>/dev/null || true
  { grep -o " /run/user/$uid/[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "/run/user/$uid"
  sed -i "/^$ROOTLESS_USER:/d" /etc/subuid /etc/subgid
  userdel "$ROOTLESS_USER" 2>/dev/null || true
}
# ----- end of rootless Podman -----

# ----- Podman 5 (podman5) -----
# Podman 5.8's binaries need sid's C library (Debian 12 has 2.36), so it runs inside a sid root
# made once with debootstrap from the machine's own archive (cached like Docker 28.5, kept by
# `down`). Each sandbox serves it in a mount namespace of its own whose root is the sid root
# (pivot_root: a chroot is lost by the processes that join a namespace, runc's among them), with
# /dev, /proc, /sys and /tmp (where the tests' bind folders are), and the sandbox's podman folder as
# /svc, mounted there only, gone with the namespace; its socket is the folder's podman.sock. runc, not
# crun: crun refuses this machine's hybrid cgroups. Its runtime state is under the same short /tmp path as the rootful
# one's (inside the root), which `down` finds its conmon monitors by. Its bridge networks have no
# firewall rules (netavark's firewall_driver "none", rootful and rootless): the sid root has neither
# nft nor iptables, and a rootful Podman's rules would be written into the host's tables, which
# every sandbox shares; the tests reach no container over its network.
PODMAN5_PIN="5.8"
# passt (pasta) is rootless Podman 5's network: a rootless bridge network (podman-compose's, a kube
# pod's) lives in a namespace pasta connects. The root's folder is named after this list, so that a
# change of it makes a new root rather than reusing one without a package.
PODMAN5_PACKAGES="podman,conmon,runc,netavark,aardvark-dns,catatonit,uidmap,ca-certificates,passt"
PODMAN5_ROOT="$CACHE/sid-podman-$PODMAN5_PIN-$(printf %s "$PODMAN5_PACKAGES" | md5sum | cut -c1-8)/root"
if [ "$ENGINE" = podman5 ]; then SOCK="$DIR/podman/podman.sock"; fi

# debootstrap: the machine's, else sid's unpacked into the cache (a shell script and its data, run
# from there), so that the sid root needs no Debian package installed first and is made beside them
debootstrap_cmd() {
  if command -v debootstrap >/dev/null 2>&1; then echo debootstrap; return 0; fi
  local root="$CACHE/sid-debootstrap/root"
  [ -x "$root/usr/sbin/debootstrap" ] || SID_APT="$CACHE/sid-apt-debootstrap" fetch_sid "$root" debootstrap >&2
  echo "env DEBOOTSTRAP_DIR=$root/usr/share/debootstrap $root/usr/sbin/debootstrap"
}

fetch_sid_podman() {
  [ -x "$PODMAN5_ROOT/usr/bin/podman" ] && return 0
  # a folder of this process's own: legs coming up side by side may both make it
  local uri tmp="$PODMAN5_ROOT.tmp$$" version old
  # one a run stopped half-way left (its process gone): its mounts, files and log go
  for old in "$PODMAN5_ROOT".tmp*; do
    [ -d "$old" ] && ! kill -0 "${old##*.tmp}" 2>/dev/null || continue
    awk -v r="$old/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l
    rm -rf "$old" "$old.log"
  done
  uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
  log "making a Debian sid root with Podman $PODMAN5_PIN (once)"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local debootstrap
  debootstrap=$(debootstrap_cmd)
  $debootstrap --variant=minbase --include="$PODMAN5_PACKAGES" sid "$tmp" "$uri" >"$tmp.log" 2>&1 ||
    { tail -5 "$tmp.log" >&2; exit 1; }
  rm -f "$tmp.log"
  version=$(chroot "$tmp" dpkg-query -W -f '${Version}' podman)
  case "$version" in "$PODMAN5_PIN".*) ;; *) log "sid's podman is $version, not $PODMAN5_PIN: update PODMAN5_PIN in scripts/sandbox.sh and README's engine table"; exit 1 ;; esac
  [ -x "$PODMAN5_ROOT/usr/bin/podman" ] || mv "$tmp" "$PODMAN5_ROOT"
  rm -rf "$tmp"
}

start_podman5() {
  alive "$DIR/podman.pid" && return 0
  fetch_sid_podman
  local p="$DIR/podman" run
  run=$(podman_runroot)
  mkdir -p "$p/root" "$p/tmp" "$p/var-tmp" "$PODMAN5_ROOT/svc" "$PODMAN5_ROOT$run"
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nevents_logfile_path = "/svc/events.log"\nruntime = "runc"\n[network]\nfirewall_driver = "none"\n' >"$p/containers.conf"
  printf '[storage]\ndriver = "overlay"\nrunroot = "%s"\ngraphroot = "/svc/root"\n' "$run" >"$p/storage.conf"
  {
    echo 'unqualified-search-registries = []'
    for port in "$REGISTRY_PORT" "$AUTH_REGISTRY_PORT"; do printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$port"; done
  } >"$p/registries.conf"
  # shellcheck disable=SC2016
  setsid unshare --mount --propagation private sh -c '
    r=$1 p=$2
    mount --make-rprivate / && mount --bind "$r" "$r" && mount --rbind /dev "$r/dev" && mount -t proc proc "$r/proc" &&
      mount --rbind /sys "$r/sys" && mount --bind "$p" "$r/svc" && mount --rbind /tmp "$r/tmp" && mkdir -p "$r/.host" && cd "$r" && pivot_root . .host &&
      umount -l /.host || exit 1
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/svc/var-tmp CONTAINERS_CONF=/svc/containers.conf \
      CONTAINERS_STORAGE_CONF=/svc/storage.conf CONTAINERS_REGISTRIES_CONF=/svc/registries.conf \
      podman --tmpdir /svc/tmp system service --time=0 unix:///svc/podman.sock' sh "$PODMAN5_ROOT" "$p" \
    >"$DIR/podman.log" 2>&1 </dev/null &
  echo $! >"$DIR/podman.pid"
  wait_for 90 engine_answers "$SOCK" || { tail -20 "$DIR/podman.log" >&2; exit 1; }
}

# Rootless: the sandbox's user (as for podman-rootless) known to the sid root too, with the same
# subordinate ids; the namespace is made as root, then Podman runs as that user, its runtime
# folder the host's /run/user/<uid> (its socket there, where rootless Podman serves it), and the
# sandbox's /dev/net/tun node for pasta (user_tun, above).
start_podman5_rootless() {
  alive "$DIR/podman.pid" && return 0
  fetch_sid_podman
  local p="$DIR/podman" uid run first
  id "$ROOTLESS_USER" >/dev/null 2>&1 || useradd --no-create-home --home-dir /svc/home --shell /usr/sbin/nologin "$ROOTLESS_USER"
  uid=$(rootless_uid)
  first=$((1000000 + 65536 * (REGISTRY_PORT % 10000)))
  grep -q "^$ROOTLESS_USER:" "$PODMAN5_ROOT/etc/passwd" || echo "$ROOTLESS_USER:x:$uid:$uid::/svc/home:/usr/sbin/nologin" >>"$PODMAN5_ROOT/etc/passwd"
  grep -q "^$ROOTLESS_USER:" "$PODMAN5_ROOT/etc/group" || echo "$ROOTLESS_USER:x:$uid:" >>"$PODMAN5_ROOT/etc/group"
  for f in subuid subgid; do grep -q "^$ROOTLESS_USER:" "$PODMAN5_ROOT/etc/$f" 2>/dev/null || echo "$ROOTLESS_USER:$first:65536" >>"$PODMAN5_ROOT/etc/$f"; done
  run="/run/user/$uid"
  SOCK="$run/podman/podman.sock"
  mkdir -p "$run" "$p/home" "$p/tmp" "$p/var-tmp" "$PODMAN5_ROOT/svc" "$PODMAN5_ROOT$run"
  chmod 0700 "$run"
  printf '[containers]\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nevents_logfile_path = "/svc/events.log"\nruntime = "runc"\n[network]\nfirewall_driver = "none"\n' >"$p/containers.conf"
  printf '[storage]\ndriver = "overlay"\n' >"$p/storage.conf"
  {
    echo 'unqualified-search-registries = []'
    for port in "$REGISTRY_PORT" "$AUTH_REGISTRY_PORT"; do printf '[[registry]]\nlocation = "127.0.0.1:%s"\ninsecure = true\n' "$port"; done
  } >"$p/registries.conf"
  chown -R "$ROOTLESS_USER:" "$run" "$p"
  # shellcheck disable=SC2016
  setsid unshare --mount --propagation private sh -c '
    r=$1 p=$2 run=$3 uid=$4 tun=$5
    mount --make-rprivate / && mount --bind "$r" "$r" && mount --rbind /dev "$r/dev" && mount --bind "$tun" "$r/dev/net/tun" &&
      mount -t proc proc "$r/proc" &&
      mount --rbind /sys "$r/sys" && mount --bind "$p" "$r/svc" && mount --rbind /tmp "$r/tmp" && mount --bind "$run" "$r$run" &&
      mkdir -p "$r/.host" && cd "$r" && pivot_root . .host && umount -l /.host || exit 1
    exec setpriv --reuid "$uid" --regid "$uid" --init-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/svc/home \
      XDG_RUNTIME_DIR="$run" TMPDIR=/svc/var-tmp CONTAINERS_CONF=/svc/containers.conf CONTAINERS_STORAGE_CONF=/svc/storage.conf \
      CONTAINERS_REGISTRIES_CONF=/svc/registries.conf podman system service --time=0' sh "$PODMAN5_ROOT" "$p" "$run" "$uid" "$(user_tun)" \
    >"$DIR/podman.log" 2>&1 </dev/null &
  echo $! >"$DIR/podman.pid"
  wait_for 90 engine_answers "$SOCK" || { tail -20 "$DIR/podman.log" >&2; exit 1; }
}

# The sandbox's user out of the sid root again (`down`, after its engine stopped).
forget_rootless_user_in_sid_root() {
  [ -d "$PODMAN5_ROOT/etc" ] || return 0
  sed -i "/^$ROOTLESS_USER:/d" "$PODMAN5_ROOT/etc/passwd" "$PODMAN5_ROOT/etc/group" "$PODMAN5_ROOT/etc/subuid" "$PODMAN5_ROOT/etc/subgid" 2>/dev/null || true
}
# ----- end of Podman 5 -----

start_engine() {
  case "$ENGINE" in
    docker20|docker28|docker28-containerd) start_dockerd ;;
    podman) start_podman ;;
    podman-rootless) start_podman_rootless; start_user_systemd ;;
    podman5) start_podman5 ;;
    podman5-rootless) start_podman5_rootless ;;
    *) log "unknown SVC_SANDBOX_ENGINE=$ENGINE (docker28-containerd, docker28, docker20, podman, podman-rootless, podman5, podman5-rootless)"; exit 2 ;;
  esac
}

engine_answers() { # engine_answers SOCKET: its API answers (curl: a docker CLI start costs far more CPU a poll)
  curl -sSf -o /dev/null --max-time 5 --unix-socket "$1" http://engine/_ping 2>/dev/null
}

registry_answers() { # registry_answers PORT
  case "$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/v2/" 2>/dev/null)" in 200|401) return 0 ;; *) return 1 ;; esac
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
  # Up when /v2/ answers: 200, or 401 for the auth registry (waiting for a 200 there used to wait
  # out the whole 30 s on every `up`).
  wait_for 30 registry_answers "$port" || { tail -20 "$DIR/$name.log" >&2; exit 1; }
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
export SVC_TEST_ENGINE="$ENGINE"
export SVC_TEST_DOCKER_HOST="unix://$SOCK"
export DOCKER_HOST="unix://$SOCK"
export PATH="$CLI_BIN:\$PATH"
export SVC_TEST_DOCKER_CONFIG="$DIR/docker-config"
export DOCKER_CONFIG="$DIR/cli-config"
export SVC_TEST_REGISTRY="127.0.0.1:$REGISTRY_PORT"
export SVC_TEST_AUTH_REGISTRY="127.0.0.1:$AUTH_REGISTRY_PORT"
export SVC_TEST_AUTH_USER="$AUTH_USER"
export SVC_TEST_AUTH_PASS="$AUTH_PASS"
export SVC_TEST_ROOTFS="$DIR/rootfs.tar"
export SVC_TEST_SWARM_WORKER_HOST="unix://$SWARM_WORKER/docker.sock"
VARS
  # podman-rootless: the user a test runs Podman's CLI, systemctl --user and svc as
  if alive "$DIR/systemd.pid"; then echo "export SVC_TEST_USER_SYSTEMD=$ROOTLESS_USER"; fi
  # ... whose generator is quadlet (start_user_systemd)
  if alive "$DIR/systemd.pid" && [ -x "$DIR/quadlet" ]; then echo "export SVC_TEST_QUADLET=$DIR/quadlet"; fi
  # podman5: the sid root, where a test starts a Podman service of its own in a namespace it makes
  case "$ENGINE" in podman5*) echo "export SVC_TEST_PODMAN5_ROOT=$PODMAN5_ROOT" ;; esac
}

up() {
  install_packages
  mkdir -p "$DIR"
  prepare_cli
  start_engine
  start_registry registry "$REGISTRY_PORT"
  start_registry auth-registry "$AUTH_REGISTRY_PORT" htpasswd
  build_rootfs
  # The engine must be able to push to the auth registry too.
  # In a Docker CLI config folder of the sandbox's own: a login in ~/.docker would outlive the
  # sandbox and hand those credentials to every svc started on this machine.
  mkdir -p "$DIR/docker-config"
  DOCKER_CONFIG="$DIR/docker-config" docker -H "unix://$SOCK" login -u "$AUTH_USER" --password-stdin \
    "127.0.0.1:$AUTH_REGISTRY_PORT" <<<"$AUTH_PASS" >/dev/null 2>&1 || true
  log "up: $ENGINE on unix://$SOCK, registries 127.0.0.1:$REGISTRY_PORT and 127.0.0.1:$AUTH_REGISTRY_PORT (basic auth)"
}

# A two-node Swarm (docs/swarm.md): the sandbox's engine as its manager (127.0.0.1), a second
# engine of the same kind in its own folder joined as a worker over 127.0.0.2. Its ports follow
# the registry's (+7 manager, +8 worker, +9 data path), so sandboxes side by side never share one.
SWARM_WORKER="$DIR/w2"
SWARM_MANAGER_ADDR="127.0.0.1:$((REGISTRY_PORT + 7))"
SWARM_WORKER_ADDR="127.0.0.2:$((REGISTRY_PORT + 8))"
swarm_state() { docker -H "unix://$1" info -f '{{.Swarm.LocalNodeState}}' 2>/dev/null || true; }
# Swarm's bridge for its network namespaces (docker_gwbridge), made before Swarm makes it, under a
# kernel name of this engine's own: every engine on the machine shares the host's interfaces, and
# the default name would be one bridge for all of them, removed by whichever leaves first.
swarm_gwbridge() { # swarm_gwbridge SOCKET NAME
  docker -H "unix://$1" network inspect docker_gwbridge >/dev/null 2>&1 && return 0
  docker -H "unix://$1" network create --driver bridge --opt "com.docker.network.bridge.name=$2" \
    --opt com.docker.network.bridge.enable_icc=false --opt com.docker.network.bridge.enable_ip_masquerade=false \
    docker_gwbridge >/dev/null
}
swarm_ready() { [ "$(docker -H "unix://$SOCK" node ls -q --filter role=worker 2>/dev/null | wc -l)" -ge 1 ] &&
  ! docker -H "unix://$SOCK" node ls --format '{{.Status}}' | grep -qv Ready; }

swarm_up() {
  case "$ENGINE" in podman*) log "Podman has no Swarm mode"; exit 2 ;; esac
  start_engine
  start_dockerd "$SWARM_WORKER"
  local manager=(docker -H "unix://$SOCK") worker=(docker -H "unix://$SWARM_WORKER/docker.sock")
  swarm_gwbridge "$SOCK" "svcgw$((REGISTRY_PORT + 7))"
  swarm_gwbridge "$SWARM_WORKER/docker.sock" "svcgw$((REGISTRY_PORT + 8))"
  if [ "$(swarm_state "$SOCK")" != active ]; then
    "${manager[@]}" swarm init --advertise-addr "$SWARM_MANAGER_ADDR" --listen-addr "$SWARM_MANAGER_ADDR" \
      --data-path-port $((REGISTRY_PORT + 9)) >/dev/null
  fi
  if [ "$(swarm_state "$SWARM_WORKER/docker.sock")" != active ]; then
    "${worker[@]}" swarm join --token "$("${manager[@]}" swarm join-token -q worker)" \
      --advertise-addr "$SWARM_WORKER_ADDR" --listen-addr "$SWARM_WORKER_ADDR" "$SWARM_MANAGER_ADDR" >/dev/null
  fi
  wait_for 60 swarm_ready || { "${manager[@]}" node ls >&2; exit 1; }
  log "swarm: manager unix://$SOCK ($SWARM_MANAGER_ADDR), worker unix://$SWARM_WORKER/docker.sock ($SWARM_WORKER_ADDR)"
}

# Leaves the swarm on both nodes (services and their tasks go with it), stops the worker by its
# pid, and unmounts the network namespaces Swarm mounted under both exec roots before the
# worker's folder is removed (rm -rf fails on them otherwise).
swarm_down() {
  local manager=(docker -H "unix://$SOCK") worker=(docker -H "unix://$SWARM_WORKER/docker.sock") ids
  if alive "$DIR/dockerd.pid" && [ "$(swarm_state "$SOCK")" = active ]; then
    ids=$("${manager[@]}" service ls -q 2>/dev/null || true)
    [ -z "$ids" ] || "${manager[@]}" service rm $ids >/dev/null 2>&1 || true
  fi
  if alive "$SWARM_WORKER/dockerd.pid"; then
    "${worker[@]}" swarm leave --force >/dev/null 2>&1 || true
    ids=$("${worker[@]}" ps -aq 2>/dev/null || true)
    [ -z "$ids" ] || "${worker[@]}" rm -f $ids >/dev/null 2>&1 || true
    "${worker[@]}" network rm docker_gwbridge >/dev/null 2>&1 || true
  fi
  stop_pid "$SWARM_WORKER/dockerd.pid"
  if alive "$DIR/dockerd.pid"; then
    "${manager[@]}" swarm leave --force >/dev/null 2>&1 || true
    ids=$("${manager[@]}" ps -aq --filter label=com.docker.swarm.task.id 2>/dev/null || true)
    [ -z "$ids" ] || "${manager[@]}" rm -f $ids >/dev/null 2>&1 || true
    "${manager[@]}" network rm docker_gwbridge >/dev/null 2>&1 || true
  fi
  { grep -o -e " $SWARM_WORKER/[^ ]*" -e " $DIR/exec/netns/[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r |
    while read -r m; do case "$m" in "$SWARM_WORKER"/*|*/ingress_sbox|*/lb_*|*/1-*) umount -l "$m" 2>/dev/null || true ;; esac; done
  for _ in 1 2 3 4 5; do rm -rf "$SWARM_WORKER" 2>/dev/null && break; sleep 1; done
  [ ! -e "$SWARM_WORKER" ] || { log "could not remove $SWARM_WORKER"; return 1; }
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

# Another sandbox that is up inside this one's folder (`down` on the default .sandbox while a
# developer's .sandbox/dev or a test run's .sandbox/test-PID/legN runs): its folder, or nothing.
# `down` removes its folder whole and stops the shims and mounts under it, so it would take theirs
# away and leave their engines running with nothing to stop them by.
nested_up() {
  local pid
  for pid in "$DIR"/*/{dockerd,podman,registry}.pid "$DIR"/*/*/{dockerd,podman,registry}.pid; do
    # (its own Swarm worker is its to stop)
    case "$pid" in "$SWARM_WORKER"/*) continue ;; esac
    if alive "$pid"; then dirname "$pid"; return 0; fi
  done
  return 0
}

down() {
  [ -d "$DIR" ] || return 0
  local nested
  nested=$(nested_up)
  if [ -n "$nested" ]; then
    log "$DIR holds another sandbox that is up, $nested: nothing done (bring that one down with its own SVC_SANDBOX_DIR and ports first)"
    return 1
  fi
  [ ! -d "$SWARM_WORKER" ] || swarm_down || true
  # first, so that no unit starts its container again while the containers go
  stop_user_systemd
  if alive "$DIR/dockerd.pid" || alive "$DIR/podman.pid"; then
    # Containers first, so that no shim outlives the engine; then the networks, whose bridges
    # would otherwise stay in the host's kernel after the engine is gone.
    ids=$(docker -H "unix://$SOCK" ps -aq 2>/dev/null || true)
    [ -z "$ids" ] || docker -H "unix://$SOCK" rm -f $ids >/dev/null 2>&1 || true
    docker -H "unix://$SOCK" network prune -f >/dev/null 2>&1 || true
  fi
  stop_pid "$DIR/dockerd.pid"
  stop_pid "$DIR/podman.pid"
  remove_rootless_user
  forget_rootless_user_in_sid_root
  # podman's conmon monitors (containers and exec sessions) outlive its service: they are ours
  # when their command line names our folder
  pkill -KILL -f "conmon .*$DIR/podman/" 2>/dev/null || true
  pkill -KILL -f "conmon .*$(podman_runroot)([/ ]|$)" 2>/dev/null || true
  # and containerd's shims, whose containers were still running when the engine went (a bench or a
  # test stopped half-way): ours when their -address names our folder
  pkill -KILL -f "containerd-shim.* -address $DIR/" 2>/dev/null || true
  stop_pid "$DIR/registry.pid"
  stop_pid "$DIR/auth-registry.pid"
  # Anything the engine left mounted under our own folders.
  # (grep finds nothing in the usual case: that must not end `down` under pipefail before rm.)
  { grep -o " $DIR/[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  { grep -o " $(podman_runroot)/[^ ]*" /proc/mounts 2>/dev/null || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$(podman_runroot)"
  # The cgroups of its containers an engine stopped with them running left behind (under the
  # docker parent every sandbox shares: only our containers' ids; and the worker's), and what
  # still runs in them (a container whose engine and shim were killed)
  local made procs
  for made in "$DIR"/data/containers/* "$SWARM_WORKER"/data/containers/*; do
    [ -d "$made" ] || continue
    for procs in /sys/fs/cgroup/docker/"${made##*/}"/cgroup.procs /sys/fs/cgroup/*/docker/"${made##*/}"/cgroup.procs; do
      [ ! -f "$procs" ] || xargs -r kill -KILL <"$procs" 2>/dev/null || true
    done
    rmdir /sys/fs/cgroup/docker/"${made##*/}" /sys/fs/cgroup/*/docker/"${made##*/}" 2>/dev/null || true
  done
  # The engine's containerd may still be letting go of its files for a moment.
  for _ in 1 2 3 4 5; do rm -rf "$DIR" 2>/dev/null && break; sleep 1; done
  [ ! -e "$DIR" ] || { log "could not remove $DIR"; return 1; }
  log "down"
}

# The logs `down` would remove: the engine's (dockerd's also holds its containerd's), the Swarm
# worker's, the registries'.
keep_logs() {
  local dest=${1:?usage: sandbox.sh logs DEST} file
  mkdir -p "$dest"
  for file in "$DIR"/*.log "$SWARM_WORKER"/*.log; do
    [ -f "$file" ] || continue
    case "$file" in "$SWARM_WORKER"/*) cp "$file" "$dest/w2-$(basename "$file")" ;; *) cp "$file" "$dest/" ;; esac
  done
}

status() {
  for p in dockerd podman systemd registry auth-registry; do
    if alive "$DIR/$p.pid"; then echo "$p: running ($(cat "$DIR/$p.pid"))"; else echo "$p: stopped"; fi
  done
}

case "${1:-}" in
  up) up ;;
  start-engine) prepare_cli; start_engine ;;
  prepare) install_packages; fetch_sid_docker; fetch_sid_cosign; case "$ENGINE" in podman5*|podman-rootless) fetch_sid_podman ;; esac ;;
  prepare-podman5) fetch_sid_podman ;;
  down) down ;;
  env) print_env ;;
  status) status ;;
  check) check_tools ;;
  swarm-up) swarm_up ;;
  swarm-down) swarm_down ;;
  logs) keep_logs "${2:-}" ;;
  cosign) cosign_bin ;;
  *) echo "usage: $0 up|down|env|status|start-engine|prepare|swarm-up|swarm-down|logs DEST|cosign" >&2; exit 2 ;;
esac
