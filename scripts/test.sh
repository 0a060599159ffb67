#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine (root, Node/npm only): installs Bun and the
# dependencies, and runs the engine matrix (README, "Engines"), each leg in a private sandbox
# of its own (engine, registries), stopping what it started whatever the outcome:
#   docker28-containerd       the engine-facing tests on Docker 28.5's containerd image store
#                             (what new users get)
#   docker28-containerd:e2e   the longest e2e files (E2E_APART), on an engine of their own
#   docker28-containerd:e2e-once  the e2e files only this store runs (E2E_ONCE), on an engine of their own
#   docker28-containerd:rest  every other test but the Swarm's, on the same kind of engine
#   docker28-containerd:swarm the Swarm tests
#   docker28                  what the image store answers (CLASSIC_STORE, below) on Docker 28.5's
#                             classic image store: the same daemon as the first leg's (docs/testing.md)
#   docker20, docker20:e2e    the first two legs' on Debian 12's Docker 20.10, the oldest supported,
#   docker20:swarm            but CONTAINERD_ONLY, and the Swarm tests there
#   podman                    the Podman set on Debian 12's Podman 4.3, rootful (docs/podman.md)
#   podman-rootless           the Podman set on the same Podman as a user the sandbox makes
#   podman5                   the Podman set on sid's Podman 5.8, rootful, in a sid root the sandbox makes
#   podman5-rootless          the Podman set on the same Podman 5.8 as a user the sandbox makes
# Every leg is a sandbox of its own, so that they can run side by side.
# First the set-up (packages, Bun, dependencies, the compiled svc, the sid roots, a check of every
# tool), a line a step; then every leg's `bun test` processes from one queue, as many at once as
# the machine carries (below, "The schedule"; docs/testing.md).
# SVC_TEST_ENGINES="docker20" (a space-separated list of legs or engines) runs only those. Extra
# arguments go to `bun test` on one leg, the containerd store's (bash scripts/test.sh tests/build),
# unless SVC_TEST_ENGINES names the legs, then on each. SVC_TEST_JOBS caps the processes at once.
#
# `bun run check` (typecheck, lint, unit tests) runs with the rest leg (so the whole matrix runs
# it), first in the queue, its output first in the report.
#
# --quick: the loop while working (README, "Develop and test"): `bun run check` and the quick
# engine files below, on the sandbox of the environment when one is up (eval "$(bash
# scripts/sandbox.sh env)"), else on a containerd leg of their own; under two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

install_bun_and_dependencies() {
  if ! command -v bun >/dev/null 2>&1; then
    npm install -g bun >/dev/null 2>&1 || npm install -g bun
  fi
  bun install --frozen-lockfile
}

# The engine-facing folders, in groups that run side by side, one `bun test` process each
# (docs/testing.md, "The legs"): most of their time is spent waiting for containers, cycles and
# engines, not on the CPU.
#   UNSCOPED  files whose containers carry no svc.scope label (the harness's own test among them: its
#             typed containers against a real `docker run`), and e2e svc instances that act on
#             every such container: they share an engine one file after the other, so the longest
#             e2e files (E2E_APART) run on an engine of their own, the ENGINE:e2e leg
#   SCOPED    the updater tests: every container and cycle in their own scope, which no
#             unscoped instance touches
#   OWN_ENGINES  the safety tests: engines of their own (of the leg's kind), never the leg's
UNSCOPED=(tests/integration/harness.test.ts tests/integration/engine tests/integration/registry tests/integration/e2e)
E2E_APART=(tests/integration/e2e/self.test.ts tests/integration/e2e/run-once-more.test.ts
  tests/integration/e2e/schedule.test.ts tests/integration/e2e/deps.test.ts)
SCOPED=(tests/integration/updater)
OWN_ENGINES=(tests/integration/safety)
# the Swarm tests make their engine a Swarm manager with a second engine as worker: a leg of their
# own, on Docker 28.5 and on the oldest engine
SWARM=(tests/integration/swarm)
# one process on the Swarm, its files one after the other (svc acts on every service of the
# tests' scope), those of CONTAINERD_ONLY on the containerd store's Swarm leg only
SWARM_FILES=("${SWARM[0]}"/*.test.ts)
# the rest leg's folder that runs beside the others (its containers and svc instances all scoped)
REST_APART=tests/integration/ui
# and a second process for its other folders: these act on no container but those they name (the
# git room's and the scheduler's tests reach no engine, the CLI's refuse to start or read one
# container), so the two halves share the engine; one process was the run's longest (about 700 s at
# the load of eight legs)
REST_SECOND=(tests/integration/git tests/integration/cli tests/integration/scheduler)
# Engine-agnostic files: svc's own logic that needs an engine, not a particular one (compose's
# files and hash, the data guard's policy, ordering, windows, selection, notifications, state...):
# on Docker 28.5's containerd store only, never on docker20 or the classic docker28. Each file's
# reason is in docs/testing.md, "Which engine runs what"; what differs between engines (API versions
# and fields, image stores, archive endpoints, health, the safety protocol's calls) runs on each.
CONTAINERD_ONLY=(
  tests/integration/updater/compose-write.test.ts tests/integration/updater/compose-hash.test.ts
  tests/integration/updater/compose-keys.test.ts tests/integration/updater/data-guard.test.ts
  tests/integration/updater/data-guard-rollback.test.ts tests/integration/updater/ordering.test.ts
  tests/integration/updater/window.test.ts tests/integration/updater/selection.test.ts
  tests/integration/updater/lock.test.ts tests/integration/updater/release-notes.test.ts
  tests/integration/updater/watchtower-labels.test.ts tests/integration/updater/tags.test.ts
  tests/integration/e2e/schedule.test.ts tests/integration/e2e/state.test.ts
  tests/integration/e2e/shared-state.test.ts tests/integration/e2e/notify.test.ts
  tests/integration/e2e/homeassistant.test.ts tests/integration/e2e/terminal.test.ts
  tests/integration/e2e/readers.test.ts tests/integration/e2e/dry-run.test.ts
  tests/integration/e2e/window.test.ts tests/integration/e2e/secrets.test.ts
  tests/integration/e2e/api.test.ts tests/integration/e2e/api-more.test.ts
  tests/integration/e2e/binary.test.ts tests/integration/e2e/config-errors.test.ts
  tests/integration/e2e/print-config.test.ts tests/integration/e2e/quick-start.test.ts
  tests/integration/e2e/data-guard-container.test.ts tests/integration/e2e/records.test.ts
  tests/integration/safety/kill-steps.test.ts tests/integration/safety/kill-rollback.test.ts
  tests/integration/swarm/policies.test.ts
)
# The classic store of Docker 28.5 (the docker28 leg): the same daemon and API as the containerd
# store's leg, so only what the image store answers runs there again: an image's digests, platforms
# and configuration as inspected, a pull by digest tagged, the image an update pulls and a rollback
# returns to (by id), svc's own image, the image a rebuild tags and the one it keeps by id. Two processes: the unscoped files, the updater's beside.
CLASSIC_STORE=(tests/integration/engine/engine.test.ts tests/integration/engine/fidelity.test.ts tests/integration/registry)
CLASSIC_STORE_SCOPED=(tests/integration/updater/checked-digest.test.ts tests/integration/updater/multiarch.test.ts
  tests/integration/updater/update.test.ts tests/integration/updater/rollback.test.ts tests/integration/updater/self.test.ts
  tests/integration/updater/compose-build.test.ts tests/integration/updater/compose-build-engine.test.ts)
# The e2e files of CONTAINERD_ONLY but E2E_APART: the docker28-containerd:e2e-once leg, on an engine
# of their own (they took a third of that store's unscoped files' time, its longest process)
mapfile -t E2E_ONCE < <(printf '%s\n' "${CONTAINERD_ONLY[@]}" | grep /e2e/ | grep -vxF "${E2E_APART[@]/#/-e}")
ENGINE_FACING=("${UNSCOPED[@]}" "${SCOPED[@]}" "${OWN_ENGINES[@]}" "${SWARM[@]}")
# the longest first: a freed slot takes the next
ALL_LEGS=(docker28-containerd docker20 docker28-containerd:rest docker28 docker28-containerd:e2e
  docker28-containerd:e2e-once docker20:e2e docker28-containerd:swarm docker20:swarm podman5 podman-rootless podman podman5-rootless)
# What a change most likely broke, each file quick (docs/testing.md, "The quick loop"): the
# engine client, a registry check, an update, svc run once as a user runs it (a rollback too).
QUICK=(tests/integration/harness.test.ts tests/integration/engine/engine.test.ts
  tests/integration/registry/check.test.ts tests/integration/updater/update.test.ts
  tests/integration/e2e/run-once.test.ts)
if [ "${1:-}" = "--quick" ]; then
  shift
  if [ -n "${SVC_TEST_DOCKER_HOST:-}" ] && docker -H "$SVC_TEST_DOCKER_HOST" version >/dev/null 2>&1; then
    echo "test: quick, on the sandbox at $SVC_TEST_DOCKER_HOST" >&2
    install_bun_and_dependencies
    # the engine files run whatever the check says: both outcomes are worth seeing
    checked=0 tested=0
    bun run check || checked=$?
    bun test --timeout 120000 "${QUICK[@]}" "$@" || tested=$?
    [ "$checked" = 0 ] || echo "test: bun run check failed (above)" >&2
    exit $((checked || tested))
  fi
  SVC_TEST_ENGINES=docker28-containerd:quick
fi
selected_legs() { # the legs SVC_TEST_ENGINES names, by leg or by engine
  local want leg
  for leg in "${ALL_LEGS[@]}"; do
    for want in $SVC_TEST_ENGINES; do
      if [ "$want" = "$leg" ] || [ "$want" = "${leg%%:*}" ]; then echo "$leg"; break; fi
    done
  done
  case " $SVC_TEST_ENGINES " in *" docker28-containerd:quick "*) echo docker28-containerd:quick ;; esac
}
if [ -n "${SVC_TEST_ENGINES:-}" ]; then
  mapfile -t LEGS < <(selected_legs)
  [ "${#LEGS[@]}" -gt 0 ] || { echo "test: SVC_TEST_ENGINES names no leg of: ${ALL_LEGS[*]}" >&2; exit 2; }
elif [ $# -gt 0 ]; then
  LEGS=(docker28-containerd:all)
else
  LEGS=("${ALL_LEGS[@]}")
fi
# Each leg's folder and ports, five a leg (registries 5100/5101, 5105/5106...; SVC_TEST_PORT_BASE=5400
# moves them to 5400/5401...; a Swarm leg's engines take sandbox.sh's registry port +7 to +9, which
# are the next leg's unused +2 to +4): a developer's sandbox (5000/5001) and the demo (5200/5201)
# are left alone.
BASE=${SVC_SANDBOX_DIR:-$PWD/.sandbox/test-$$}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/svc-test.XXXXXX")
# A failed leg's engine and registry logs are kept here (the sandbox's own go with it), and their
# ends printed: CI shows only what was printed.
KEPT=${SVC_TEST_KEEP_LOGS:-$PWD/.test-logs/$(date +%Y%m%d-%H%M%S)-$$}
PORT_BASE=${SVC_TEST_PORT_BASE:-5100}
leg_env() { # leg_env INDEX LEG: the sandbox variables of one leg
  # (the folder's name short: a Swarm worker's containerd makes sockets deep inside it, and a unix
  # socket's path must stay within 104 characters however deep the checkout is)
  echo "export SVC_SANDBOX_ENGINE=${2%%:*} SVC_SANDBOX_DIR=$BASE/leg$1 SVC_SANDBOX_REGISTRY_PORT=$((PORT_BASE + 5 * $1)) SVC_SANDBOX_AUTH_REGISTRY_PORT=$((PORT_BASE + 1 + 5 * $1))"
  # an svc a test starts without a state_dir of its own keeps its state in the leg's folder, never
  # in the machine's /var/lib/svc, which the legs side by side (and the machine's svc) would share
  echo "export XDG_STATE_HOME=$LOGS/state-${2/:/-}"
}
# The legs' folders and the run's own on memory file systems of the run's own (as root;
# SVC_TEST_TMPFS=0: on the disk): every container started and removed writes and deletes its
# layers, mounts and engine records, and on this project's machines the disk is mounted with online
# discard: the same tests took a fifth less CPU, the kernel's share a quarter less (docs/testing.md,
# "Where the CPU goes"). The legs' engines' data is some tens of MB each; a failed leg's logs are
# copied to the disk (KEPT) before its sandbox goes.
RUN_MOUNTS=()
mount_memory() { # mount_memory DIR: a tmpfs on DIR, unmounted by cleanup
  [ "${SVC_TEST_TMPFS:-1}" != 0 ] && [ "$(id -u)" = 0 ] || return 0
  mkdir -p "$1"
  if mount -t tmpfs -o mode=755 svc-test "$1"; then RUN_MOUNTS+=("$1"); fi
}
# Everything the tests make in a temporary folder goes under the run's own, so that a run that is
# stopped half-way leaves nothing behind: the engines a test brings up there (the safety tests'
# own, in svc-safety-*) are taken down with the legs'.
# (readable by all, as /tmp is: a rootless engine's user and mosquitto's read test files there)
export TMPDIR=$LOGS/tmp
# The engines (dockerd, containerd and its shims, Podman, the registries, the CLIs: all Go) on one
# scheduler thread each: a dozen Go daemons side by side on two cores, each running its garbage
# collector and idle scheduler threads on both, cost more CPU for the same requests (a loop of
# imports, pushes, runs and pulls: 10.5-11.7 engine CPU s, 8.4-9.6 with one thread); what they do
# is the same
export GOMAXPROCS=1
stop_descendants() { # stop_descendants PID: every process below PID, deepest first, by process id
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    stop_descendants "$child"
    kill -KILL "$child" 2>/dev/null || true
  done
}
# Every process the run starts inherits this mark, which the end of the run looks for
export SVC_TEST_RUN=$LOGS
stop_marked() { # stop_marked: every process but this shell that carries the run's mark
  local proc
  for proc in /proc/[0-9]*; do
    [ "${proc#/proc/}" != $$ ] || continue
    grep -qzxF "SVC_TEST_RUN=$LOGS" "$proc/environ" 2>/dev/null && kill -KILL "${proc#/proc/}" 2>/dev/null || true
  done
}
cleanup() {
  local i dir
  touch "$LOGS/stop" 2>/dev/null || true
  # a run stopped half-way: its `bun test` processes and the svc processes they started first
  stop_descendants $$
  for dir in "$TMPDIR"/svc-safety-*/; do
    [ -f "$dir/dockerd.pid" ] || [ -f "$dir/registry.pid" ] || continue
    # (registry port 1: a port no sandbox takes, so no rootless user is named after it)
    SVC_SANDBOX_DIR=${dir%/} SVC_SANDBOX_REGISTRY_PORT=1 bash scripts/sandbox.sh down || true
  done
  # (side by side: one after the other, a run stopped half-way took minutes to end)
  for i in "${!LEGS[@]}"; do (eval "$(leg_env "$i" "${LEGS[$i]}")"; bash scripts/sandbox.sh down) & done
  wait || true
  # and what a test started that outlived its parent (a registry of its own, a broker, a `bun test`
  # whose shell was stopped first): every process of the run carries its mark in its environment
  stop_marked
  pkill -KILL -f -- "$LOGS/" 2>/dev/null || true
  # a mount a test made under the run's folder and could not undo (its process stopped half-way)
  awk -v r="$LOGS/" -v b="$BASE/" 'index($2, r) == 1 || index($2, b) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  local mounted
  for mounted in "${RUN_MOUNTS[@]}"; do umount -l "$mounted" 2>/dev/null || true; done
  rmdir "$BASE" 2>/dev/null || true
  rm -rf "$LOGS"
}
trap cleanup EXIT
# A signal ends the run through the EXIT trap above, so no sandbox outlives it.
trap 'exit 130' INT
trap 'exit 143' TERM
mount_memory "$LOGS"
mount_memory "$BASE"
mkdir -p "$TMPDIR"
chmod 755 "$LOGS"
chmod 1777 "$TMPDIR"

tests_of() { # what a leg runs
  case "$1" in
    *:all) ;;
    *:quick) echo "${QUICK[@]}" ;;
    *:rest) # the folders and files of tests/ and tests/integration/ no other leg runs
      # (tests/unit: `bun run check` runs them; tests/build: beside)
      printf '%s\n' tests/*/ tests/integration/* | sed 's#/$##' |
        grep -vxF -e tests/unit -e tests/build -e tests/integration -e tests/integration/podman -e "$REST_APART" "${REST_SECOND[@]/#/-e}" "${ENGINE_FACING[@]/#/-e}" ;;
    *:e2e) echo "${E2E_APART[@]}" | engine_specific "$1" ;;
    *:e2e-once) echo "${E2E_ONCE[@]}" ;;
    *:swarm) echo "${SWARM_FILES[@]}" | engine_specific "$1" ;;
    # (a pull Podman's signature policy refuses: on the Podman whose policy a test can set, rootless
    # and 5.8's rootful; 4.3's rootful reads root's own, shared by every sandbox)
    podman) echo tests/integration/podman/podman.test.ts ;;
    podman-rootless|podman5|podman5-rootless) echo tests/integration/podman/podman.test.ts tests/integration/podman/signature-policy.test.ts ;;
    docker28) echo "${CLASSIC_STORE[@]}" ;;
    *) unscoped_here | engine_specific "$1" ;;
  esac
}
engine_specific() { # engine_specific LEG: the lines read, without CONTAINERD_ONLY off its legs
  # (lines of files a process each; a line left empty goes)
  case "$1" in
    docker28-containerd | docker28-containerd:*) grep . || true ;;
    *) awk -v only="${CONTAINERD_ONLY[*]}" 'BEGIN { n = split(only, list, " "); for (i = 1; i <= n; i++) drop[list[i]] = 1 }
      { line = ""; for (i = 1; i <= NF; i++) if (!($i in drop)) line = line (line == "" ? "" : " ") $i; if (line != "") print line }' ;;
  esac
}
unscoped_here() { # UNSCOPED without E2E_APART and E2E_ONCE: its folders, the e2e folder file by file
  local path
  for path in "${UNSCOPED[@]}"; do
    if [ "$path" = tests/integration/e2e ]; then
      printf '%s\n' tests/integration/e2e/*.test.ts | grep -vxF "${E2E_APART[@]/#/-e}" "${E2E_ONCE[@]/#/-e}"
    else
      echo "$path"
    fi
  done
}
beside_of() { # what a leg runs beside tests_of: one line a process
  case "$1" in
    # the build tests compile svc and build its images (each svc they start has a scope of its own)
    # the page's tests (Chromium, every svc in its file's scope) in a process of their own, and
    # REST_SECOND in another
    *:rest) echo tests/build; echo "$REST_APART"; echo "${REST_SECOND[@]}" ;;
    # the units a real systemd runs (`systemd --user`: this leg's only) beside the rest of the set
    podman-rootless) echo tests/integration/podman/units.test.ts ;;
    *:*|podman|podman5|podman5-rootless) ;;
    docker28) echo "${CLASSIC_STORE_SCOPED[@]}" ;;
    *) { scoped_groups; own_engine_files; } | engine_specific "$1" ;;
  esac
}
scoped_groups() { # the updater tests in six processes of about the same length (docs/testing.md)
  local u=tests/integration/updater
  # (measured on the containerd store, the longest first; the last line takes every other file)
  local groups=("$u/compose-write.test.ts" "$u/compose-keys.test.ts $u/compose-hash.test.ts"
    "$u/recovery.test.ts $u/window.test.ts $u/ordering.test.ts $u/release-notes.test.ts"
    "$u/data-guard.test.ts $u/data-guard-crash.test.ts"
    "$u/data-guard-rollback.test.ts $u/data-guard-room.test.ts $u/compose.test.ts")
  printf '%s\n' "${groups[@]}"
  # shellcheck disable=SC2086
  find "${SCOPED[@]}" -name '*.test.ts' | sort | grep -vxF $(printf -- '-e %s ' ${groups[*]}) | paste -sd ' '
}
own_engine_files() { # the safety tests, a process (and so an engine) each file
  find "${OWN_ENGINES[@]}" -name '*.test.ts' | sort
}

# A test's time limit in the legs is a hang limit: at a load of 40 and more on two cores a test
# that takes 60 s alone can take three times that (a Swarm update, a build, two rolled-back updates)
HANG_MS=240000

# ----- Set-up: everything the run needs, before the first test -----
# A line a step with its time; a step that fails ends the run there, naming the step, with the end
# of its output: a missing package is never a test's error. The Debian packages, Bun's install and
# the sid root of Podman 5.8 run side by side (none needs another: the root's debootstrap is sid's,
# unpacked, where the machine has none), and the last step checks that every tool the tests start
# is there.
SETUP_LOGS=$LOGS/setup
mkdir -p "$SETUP_LOGS"
step() { # step NAME CMD...: one set-up step
  local name=$1 began=$SECONDS; shift
  if "$@" >"$SETUP_LOGS/$name.log" 2>&1 </dev/null; then
    echo "set-up: $name: $((SECONDS - began)) s" >&2
  else
    echo "set-up: $name failed after $((SECONDS - began)) s; the end of its output:" >&2
    tail -n 30 "$SETUP_LOGS/$name.log" >&2
    return 1
  fi
}
compile_svc() { # svc compiled once for every leg (the binary users download): the tests start it
  # some two thousand times, each start a fifth of the CPU of `bun src/main.ts`
  bun build.ts --outdir "$LOGS/bin"
}
needs_podman5_root() { case "$1" in podman5* | podman-rootless) return 0 ;; *) return 1 ;; esac; }
set_up() {
  local began=$SECONDS bun_steps packages root="" leg
  { step bun install_bun_and_dependencies && step compile compile_svc; } &
  bun_steps=$!
  step packages bash scripts/sandbox.sh prepare &
  packages=$!
  for leg in "${LEGS[@]}"; do
    if needs_podman5_root "$leg"; then
      step podman5-root bash scripts/sandbox.sh prepare-podman5 &
      root=$!
      break
    fi
  done
  local failed=0
  wait "$packages" || failed=1
  wait "$bun_steps" || failed=1
  [ -z "$root" ] || wait "$root" || failed=1
  [ "$failed" = 0 ] || return 1
  local engine=docker28-containerd
  [ -z "$root" ] || engine=podman5
  step tools env SVC_SANDBOX_ENGINE=$engine bash scripts/sandbox.sh check || return 1
  echo "set-up: done in $((SECONDS - began)) s" >&2
}
export SVC_TEST_BINARY=$LOGS/bin/svc

# ----- The schedule: test processes at once, from what this machine has -----
# A leg is one or more `bun test` processes on its sandbox's engine (tests_of: its main process,
# beside_of: one a line). Every process of every leg is a job in one queue, the longest first (as
# measured by the machine's earlier runs, else the legs' order); a leg's sandbox comes up with its
# first job and goes down after its last. How many jobs run at once follows the machine: at least as
# twice as many as it has cores (nproc, bounded by its cgroup's CPU quota), and more only while the CPU is not
# the bottleneck (the kernel's pressure figure: the share of the last ten seconds some task waited
# for a CPU) and the memory holds them (a job, the svc processes it starts and its share of an
# engine: about 1 GiB): two a core (most jobs wait on engines half the time), up to four a core.
# Eight legs with every process at once (some sixty) held a load of 50-80 on a fresh two-core
# machine: every test stretched, and a hundred waits for an event ran out of time.
machine_cores() {
  local cores quota period
  cores=$(nproc)
  if read -r quota period 2>/dev/null </sys/fs/cgroup/cpu.max && [ "$quota" != max ]; then
    quota=$(((quota + period - 1) / period))
    [ "$quota" -ge "$cores" ] || cores=$quota
  fi
  [ "$cores" -ge 1 ] || cores=1
  echo "$cores"
}
memory_jobs() { awk '/^MemAvailable:/ { n = int($2 / 1048576); print (n < 1 ? 1 : n) }' /proc/meminfo; }
cpu_pressure() { # 0-100, or 0 where the kernel has no pressure figures
  awk '/^some/ { sub(/avg10=/, "", $2); print int($2); found = 1 } END { if (!found) print 0 }' /proc/pressure/cpu 2>/dev/null || echo 0
}
CORES=$(machine_cores)
# SVC_TEST_JOBS sets the most at once; SVC_TEST_PRESSURE the pressure under which one more starts
MOST_JOBS=${SVC_TEST_JOBS:-$((4 * CORES))}
[ "$(memory_jobs)" -ge "$MOST_JOBS" ] || MOST_JOBS=$(memory_jobs)
FEWEST_JOBS=$((2 * CORES))
[ "$FEWEST_JOBS" -le "$MOST_JOBS" ] || FEWEST_JOBS=$MOST_JOBS
PRESSURE=${SVC_TEST_PRESSURE:-70}
# Each job's time in the earlier runs of this machine, to start the longest first: lines of
# "SECONDS<tab>LEG<tab>FILES", rewritten at the end of a run whose jobs passed
DURATIONS=${SVC_TEST_DURATIONS:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-test/durations.tsv}

JOB_LEG=() JOB_FILES=() JOB_LOG=() JOB_TITLE=() JOB_BEGAN=()
add_job() { # add_job LEG_INDEX LOG TITLE FILES: one `bun test` process (LEG_INDEX "check": the check)
  JOB_LEG+=("$1") JOB_LOG+=("$2") JOB_TITLE+=("$3") JOB_FILES+=("$4")
  local leg=$1
  case "$1" in check | rerun-check) ;; *) leg=${LEGS[$1]} ;; esac
  # (each job's leg and files, for SVC_TEST_CPU's account by process)
  [ "$3" != rerun ] || leg+=" rerun"
  printf '%s\t%s\t%s\n' "$((${#JOB_LEG[@]} - 1))" "$leg" "$4" >>"$LOGS/jobs.tsv"
}
leg_file() { echo "$LOGS/${LEGS[$1]/:/-}"; }
make_jobs() { # "$@": extra arguments for `bun test`, on the main process only
  local i n group
  for i in "${!LEGS[@]}"; do
    case "${LEGS[$i]}" in *:rest|*:quick) add_job check "$LOGS/check.log" "" "" ;; esac
  done
  for i in "${!LEGS[@]}"; do
    add_job "$i" "$(leg_file "$i").log" "" "$(tests_of "${LEGS[$i]}" | paste -sd ' ') ${*@Q}"
    # (extra arguments name what to run: then nothing beside)
    [ $# -eq 0 ] || continue
    n=0
    while read -r group; do
      n=$((n + 1))
      add_job "$i" "$(leg_file "$i").part$n.log" "----- ${LEGS[$i]}, beside: $group -----" "$group"
    done < <(beside_of "${LEGS[$i]}")
  done
}
expected_seconds() { # expected_seconds JOB: from the earlier runs; the check first; unknown ones
  # early, a leg's main process (its unscoped files one after the other, the longest) before those beside
  local j=$1 unknown=300
  [ "${JOB_LEG[$j]}" != check ] || { echo 100000; return; }
  [ -n "${JOB_TITLE[$j]}" ] || unknown=600
  awk -F '\t' -v leg="${LEGS[${JOB_LEG[$j]}]}" -v files="${JOB_FILES[$j]}" -v unknown="$unknown" \
    '$2 == leg && $3 == files { print $1; found = 1; exit } END { if (!found) print unknown }' "$DURATIONS" 2>/dev/null || echo "$unknown"
}
job_body() { # job_body JOB: the job's process, its output into its log, its status and seconds into job$J.rc
  local j=$1 i=${JOB_LEG[$1]} status=0 began=$SECONDS
  if [ "$i" = check ]; then
    bun run check >"${JOB_LOG[$j]}" 2>&1 </dev/null || status=$?
  elif [ "$i" = rerun-check ]; then
    # shellcheck disable=SC2086
    bun test --timeout 120000 ${JOB_FILES[$j]} >"${JOB_LOG[$j]}" 2>&1 </dev/null || status=$?
  else
    {
      eval "$(leg_env "$i" "${LEGS[$i]}")"
      # (what this process starts carries its job's number: SVC_TEST_CPU's account by process)
      export SVC_TEST_JOB=$j
      local fresh=0
      case "${JOB_TITLE[$j]}" in
        rerun) fresh=1 ;;
        ?*) echo "${JOB_TITLE[$j]}" ;;
      esac
      # the leg's sandbox comes up once, with the first of its jobs to start; a rerun's comes up
      # fresh, the first run's engine logs kept first
      # shellcheck disable=SC2016
      if flock -o "$LOGS/leg$i.lock" env -u SVC_TEST_JOB bash -c '
        if [ "$2" = 1 ]; then bash scripts/sandbox.sh logs "$3" || true; bash scripts/sandbox.sh down || true; rm -f "$1"; fi
        [ -f "$1" ] || { bash scripts/sandbox.sh up && touch "$1"; }' sh "$LOGS/leg$i.up" "$fresh" "$KEPT/${LEGS[$i]/:/-}"; then
        eval "$(bash scripts/sandbox.sh env)"
        # --timeout: bunfig.toml's [test] timeout is not honoured by Bun 1.4.5 (5 s default otherwise)
        eval "bun test --timeout $HANG_MS ${JOB_FILES[$j]}" || status=$?
      else
        status=1
      fi
    } >"${JOB_LOG[$j]}" 2>&1 </dev/null
  fi
  echo "$status $((SECONDS - began))" >"$LOGS/job$j.rc"
}
leg_down() { # leg_down INDEX STATUS: its engines' logs kept when it failed, then its sandbox down
  local i=$1 status=$2 leg=${LEGS[$1]}
  (
    eval "$(leg_env "$i" "$leg")"
    # (and every leg's with SVC_SANDBOX_ENGINE_DEBUG=1: the engines' requests, to count)
    # shellcheck disable=SC2016
    flock -o "$LOGS/leg$i.lock" bash -c '
      [ "$1" = 0 ] && [ "${SVC_SANDBOX_ENGINE_DEBUG:-0}" != 1 ] || bash scripts/sandbox.sh logs "$2" || true
      bash scripts/sandbox.sh down || true
      rm -f "$3"' sh "$status" "$KEPT/${leg/:/-}" "$LOGS/leg$i.up"
  ) >>"$(leg_file "$i").down.log" 2>&1 </dev/null &
}

# every failed test by name, last, where a CI that shows only the end of the output still shows it
# and why: bun prints a failed test's error above its "(fail)" line, a time limit's just below it
why_failed() { # why_failed LOG...: "leg: test", then "    error" and "    where" for each failed test
  awk '
    function keep(text) { return "    " substr(text, 1, 300) }
    FNR == 1 { leg = FILENAME; sub(/.*\//, "", leg); sub(/(\.part[0-9]+)?\.log$/, "", leg); n = 0; last = 0; between = 0; file = "" }
    /^ +\^ / && last { line = $0; sub(/^ +\^ /, "", line); error[last] = keep(line); last = 0; next }
    /^tests\/.*\.test\.ts:$/ { file = substr($0, 1, length($0) - 1) }
    /^# Unhandled error between tests/ {
      names[++count] = leg ": an error between tests" (file == "" ? "" : " in " file); between = count; last = 0; next
    }
    between && /^-+$/ && (between in error) { between = 0 }
    between && !(between in error) && /^(error|[A-Za-z]*Error)[:(]/ { error[between] = keep($0) }
    between && !(between in where) && /^ +at .*tests\// { line = $0; sub(/^ +/, "", line); where[between] = keep(line) }
    /^\((pass|skip|todo)\)/ { n = 0; last = 0; between = 0; next }
    /^\(fail\)/ {
      name = $0; sub(/^\(fail\) /, "", name); sub(/ \[[0-9.]+m?s\]$/, "", name)
      key = leg ": " name; n_kept = n; n = 0; last = 0
      if (key in seen) next
      seen[key] = ++count; names[count] = key; last = count
      for (i = 1; i <= n_kept; i++) {
        if (!(count in error) && buf[i] ~ /^(error|[A-Za-z]*Error)[:(]/) error[count] = keep(buf[i])
        if ((count in error) && buf[i] ~ /^(Expected|Received): /) error[count] = error[count] " | " substr(buf[i], 1, 120)
        if (!(count in where) && buf[i] ~ /^ +at .*tests\//) { line = buf[i]; sub(/^ +/, "", line); where[count] = keep(line) }
      }
      next
    }
    { last = 0; if (n < 400) buf[++n] = $0 }
    END {
      for (i = 1; i <= count; i++) {
        print names[i]
        if (i in error) print error[i]
        if (i in where) print where[i]
      }
    }
  ' "$@"
}
failed_files() { # failed_files LOG...: the test files that hold a failed test, one a line
  # (bun's closing list repeats each "(fail)" after the last file: that file is not theirs; an error
  # between tests belongs to the file running then, often the rest of a test that timed out; "?"
  # when it cannot be placed)
  awk '/^tests\/.*\.test\.ts:$/ { file = substr($0, 1, length($0) - 1) }
    /^ *[0-9]+ tests? failed:$/ { file = "" }
    /^\(fail\)|^# Unhandled error between tests/ {
      what = file == "" && /^#/ ? "?" : file
      if (what != "" && !(what in seen)) { seen[what] = 1; print what }
    }' "$@"
}
leg_logs() { # leg_logs LEG: the logs of one leg's first run (its main process, then each beside)
  local file=$LOGS/${1/:/-} part
  echo "$file.log"
  for part in "$file".part*.log; do [ -f "$part" ] && echo "$part"; done
  return 0
}
# A leg whose only failures are failed tests (not its sandbox, not an error between tests) runs the
# files that hold them once more on a fresh sandbox of the leg, last in the queue: a test that passes
# then is counted and named as flaky, one that fails again fails the run. The goal is none: a test
# that fails on a loaded machine is a test waiting on a clock, or svc missing its time
# (docs/testing.md). SVC_TEST_RERUN=0 turns the rerun off.
rerunnable() { # rerunnable LEG: the files to rerun, or nothing when the leg cannot be rerun
  local rc logs
  read -r rc _ <"$LOGS/${1/:/-}.rc" 2>/dev/null || return 0
  [ "$rc" != 0 ] && [ "${SVC_TEST_RERUN:-1}" != 0 ] || return 0
  mapfile -t logs < <(leg_logs "$1")
  failed_files "${logs[@]}" | awk '{ files[++n] = $0 } $0 == "?" { unplaced = 1 } END { if (!unplaced) for (i = 1; i <= n; i++) print files[i] }'
}
rerunnable_check() { # the unit test files to rerun when only unit tests failed the check
  local rc
  read -r rc _ <"$LOGS/check.rc" 2>/dev/null || return 0
  [ "$rc" != 0 ] && [ "${SVC_TEST_RERUN:-1}" != 0 ] || return 0
  # the tests ran: the typecheck and the lint before them passed
  grep -qE '^Ran [0-9]+ tests? across' "$LOGS/check.log" || return 0
  failed_files "$LOGS/check.log" | awk '{ files[++n] = $0 } $0 == "?" { unplaced = 1 } END { if (!unplaced) for (i = 1; i <= n; i++) print files[i] }'
}

run_began=$SECONDS
set_up || exit 1

# SVC_TEST_CPU=1: where the run's CPU goes, leg by leg (docs/testing.md, "Where the CPU goes")
# (started outside this shell's jobs, which the legs' `wait` waits for; it ends when $LOGS/stop is made)
watcher=""
if [ "${SVC_TEST_CPU:-0}" = 1 ]; then
  (bun scripts/cpu-by-leg.ts watch "$LOGS" </dev/null & echo $! >"$LOGS/watcher.pid")
  read -r watcher <"$LOGS/watcher.pid"
fi

make_jobs "$@"
mapfile -t QUEUE < <(for j in "${!JOB_LEG[@]}"; do printf '%s\t%s\n' "$(expected_seconds "$j")" "$j"; done | sort -t $'\t' -k1,1nr -s | cut -f2)
declare -A LEG_LEFT=() LEG_STATUS=() LEG_BEGAN=() LEG_ENDED=() RUNNING=()
for j in "${!JOB_LEG[@]}"; do
  i=${JOB_LEG[$j]}
  [ "$i" = check ] || LEG_LEFT[$i]=$((${LEG_LEFT[$i]:-0} + 1))
done
for i in "${!LEGS[@]}"; do
  echo "test: ${LEGS[$i]}: $({ tests_of "${LEGS[$i]}"; beside_of "${LEGS[$i]}"; } | wc -w | sed 's/^0$/every/') test folders and files" >&2
done
echo "test: ${#JOB_LEG[@]} test processes; $FEWEST_JOBS to $MOST_JOBS at once ($CORES cores; one more while the CPU pressure is under $PRESSURE%)" >&2

started=$SECONDS
next=0 admitted_at=-100 most_seen=0
start_job() {
  local j=$1 i=${JOB_LEG[$1]}
  JOB_BEGAN[$j]=$SECONDS
  [ "$i" = check ] || [ "$i" = rerun-check ] || [ -n "${LEG_BEGAN[$i]:-}" ] || LEG_BEGAN[$i]=$SECONDS
  job_body "$j" &
  RUNNING[$j]=$!
}
may_start() { # one more job now?
  local n=${#RUNNING[@]}
  [ "$n" -lt "$MOST_JOBS" ] || return 1
  [ "$n" -ge "$FEWEST_JOBS" ] || return 0
  # above the floor: one at a time, ten seconds apart (the pressure is a ten-second average)
  [ $((SECONDS - admitted_at)) -ge 10 ] && [ "$(cpu_pressure)" -lt "$PRESSURE" ]
}
leg_ended() { # leg_ended INDEX: every job of the leg's first run has ended
  local i=$1 leg=${LEGS[$1]} files
  echo "${LEG_STATUS[$i]:-0} $((SECONDS - LEG_BEGAN[$i]))" >"$(leg_file "$i").rc"
  LEG_ENDED[$i]=1
  mapfile -t files < <(rerunnable "$leg")
  # (a rerun takes the sandbox down and up again itself, under the leg's lock)
  [ "${#files[@]}" -gt 0 ] || { leg_down "$i" "${LEG_STATUS[$i]:-0}"; return 0; }
  echo "test: $leg: rerunning on a fresh sandbox: ${files[*]}" >&2
  add_job "$i" "$LOGS/rerun-${leg/:/-}.log" rerun "${files[*]}"
  LEG_LEFT[$i]=1
  QUEUE+=($((${#JOB_LEG[@]} - 1)))
}
job_ended() { # job_ended JOB
  local j=$1 i=${JOB_LEG[$1]} status seconds files
  read -r status seconds <"$LOGS/job$j.rc"
  unset "RUNNING[$j]"
  case "$i" in
    check)
      echo "$status $seconds" >"$LOGS/check.rc"
      mapfile -t files < <(rerunnable_check)
      [ "${#files[@]}" -gt 0 ] || return 0
      echo "test: check: rerunning alone: ${files[*]}" >&2
      add_job rerun-check "$LOGS/rerun-check.log" "" "${files[*]}"
      QUEUE+=($((${#JOB_LEG[@]} - 1))) ;;
    rerun-check) echo "$status" >"$LOGS/rerun-check.rc" ;;
    *)
      LEG_LEFT[$i]=$((LEG_LEFT[$i] - 1))
      if [ -n "${LEG_ENDED[$i]:-}" ]; then # its rerun
        echo "$status" >"$LOGS/rerun-${LEGS[$i]/:/-}.rc"
        [ "${LEG_LEFT[$i]}" -gt 0 ] || leg_down "$i" "$status"
      else
        [ "$status" = 0 ] || LEG_STATUS[$i]=1
        [ "${LEG_LEFT[$i]}" -gt 0 ] || leg_ended "$i"
      fi ;;
  esac
}
while [ "$next" -lt "${#QUEUE[@]}" ] || [ "${#RUNNING[@]}" -gt 0 ]; do
  while [ "$next" -lt "${#QUEUE[@]}" ] && may_start; do
    [ "${#RUNNING[@]}" -lt "$FEWEST_JOBS" ] || admitted_at=$SECONDS
    start_job "${QUEUE[$next]}"
    next=$((next + 1))
  done
  [ "${#RUNNING[@]}" -le "$most_seen" ] || most_seen=${#RUNNING[@]}
  sleep 1
  for j in "${!RUNNING[@]}"; do
    # a job's process that ended without its status (stopped from outside) failed
    [ -f "$LOGS/job$j.rc" ] || kill -0 "${RUNNING[$j]}" 2>/dev/null || [ -f "$LOGS/job$j.rc" ] ||
      echo "1 $((SECONDS - JOB_BEGAN[$j]))" >"$LOGS/job$j.rc"
    [ ! -f "$LOGS/job$j.rc" ] || job_ended "$j"
  done
done
wait
echo "test: the tests ended after $((SECONDS - started)) s, at most $most_seen processes at once" >&2

# The jobs' times, for the next run's order (a failed job's too: it ran its files to their end, and
# its rerun is left out)
record_durations() {
  local j i
  mkdir -p "$(dirname "$DURATIONS")"
  for j in "${!JOB_LEG[@]}"; do
    i=${JOB_LEG[$j]}
    case "$i" in check | rerun-check) continue ;; esac
    [ "$(basename "${JOB_LOG[$j]}")" = "rerun-${LEGS[$i]/:/-}.log" ] && continue
    read -r _ seconds <"$LOGS/job$j.rc" 2>/dev/null || continue
    printf '%s\t%s\t%s\n' "$seconds" "${LEGS[$i]}" "${JOB_FILES[$j]}"
  done >"$DURATIONS.new" && mv "$DURATIONS.new" "$DURATIONS"
}

count() { # count pass|fail LOG: the closing count of the one `bun test` run a log holds
  awk -v what="$1" '$0 ~ "^ *[0-9]+ " what "$" { n = $1 } END { print n + 0 }' "$2"
}
print_kept_logs() { # the end of each log a failed leg kept
  local dir=$1 file
  [ -d "$dir" ] || return 0
  for file in "$dir"/*.log; do
    [ -f "$file" ] || continue
    printf -- '--- %s (the last 40 lines; the whole log is kept there) ---\n' "$file"
    tail -n 40 "$file"
  done
}

# Each leg's output in turn, then one plain closing line that any CI can read.
status=0 passed=0 failed=0 flaky_count=0 summary="" flaky=""
if [ -f "$LOGS/check.log" ]; then
  printf '\n===== bun run check =====\n'
  cat "$LOGS/check.log"
  read -r rc took <"$LOGS/check.rc" 2>/dev/null || rc=1 took=?
  again=""
  if [ -f "$LOGS/rerun-check.rc" ]; then
    printf '\n===== bun run check: the unit test files that failed, rerun alone =====\n'
    cat "$LOGS/rerun-check.log"
    read -r again <"$LOGS/rerun-check.rc" || again=1
    if [ "$again" = 0 ]; then
      flaky+=$(why_failed "$LOGS/check.log" | grep -v '^    ' || true)$'\n'
      flaky_count=$((flaky_count + $(count fail "$LOGS/check.log")))
    fi
  fi
  summary+="check (typecheck, lint, unit tests): exit $rc, $took s${again:+; its failed files rerun alone: exit $again}"$'\n'
  [ "$rc" = 0 ] || [ "$again" = 0 ] || status=1
fi
for leg in "${LEGS[@]}"; do
  file=$LOGS/${leg/:/-}
  printf '\n===== %s =====\n' "$leg"
  cat "$file.log"
  read -r rc took <"$file.rc" 2>/dev/null || rc=1 took=?
  p=$(count pass "$file.log") f=$(count fail "$file.log")
  for part in "$file".part*.log; do
    [ -f "$part" ] || continue
    printf '\n'
    cat "$part"
    p=$((p + $(count pass "$part"))) f=$((f + $(count fail "$part")))
  done
  passed=$((passed + ${p:-0}))
  again=""
  if [ -f "$LOGS/rerun-${leg/:/-}.rc" ]; then
    printf '\n===== %s: the files that failed, rerun on a fresh sandbox =====\n' "$leg"
    cat "$LOGS/rerun-${leg/:/-}.log"
    read -r again <"$LOGS/rerun-${leg/:/-}.rc" || again=1
    # a test that failed and then passed is flaky, counted apart; one that failed again, failed
    f_again=$(count fail "$LOGS/rerun-${leg/:/-}.log")
    [ "$again" = 0 ] || [ "$f_again" -gt 0 ] || f_again=$f
    failed=$((failed + f_again)) flaky_count=$((flaky_count + f - f_again))
    # shellcheck disable=SC2046
    [ "$again" != 0 ] || flaky+=$(why_failed $(leg_logs "$leg") | grep -v '^    ' || true)$'\n'
  else
    failed=$((failed + ${f:-0}))
  fi
  summary+="$leg: ${p:-0} passed, ${f:-0} failed (exit $rc, $took s)${again:+; its failed files rerun: exit $again}"$'\n'
  if [ "$rc" != 0 ] && [ "$again" != 0 ]; then status=1; print_kept_logs "$KEPT/${leg/:/-}"; fi
done
if [ -n "$watcher" ]; then
  touch "$LOGS/stop"
  while kill -0 "$watcher" 2>/dev/null; do sleep 0.2; done
  printf '\n'
  bun scripts/cpu-by-leg.ts report "$LOGS" || true
fi
printf '\n%s' "$summary"
failed_logs() { # the logs whose failures stand: a leg's (or the check's) first run, or its rerun when it had one
  local leg again
  if [ -f "$LOGS/check.log" ]; then
    if [ -f "$LOGS/rerun-check.rc" ] && read -r again <"$LOGS/rerun-check.rc"; then
      [ "$again" = 0 ] || echo "$LOGS/rerun-check.log"
    else
      echo "$LOGS/check.log"
    fi
  fi
  for leg in "${LEGS[@]}"; do
    if [ -f "$LOGS/rerun-${leg/:/-}.rc" ] && read -r again <"$LOGS/rerun-${leg/:/-}.rc"; then
      [ "$again" = 0 ] || echo "$LOGS/rerun-${leg/:/-}.log"
    else
      leg_logs "$leg"
    fi
  done
}
mapfile -t standing < <(failed_logs)
failures=""
[ "${#standing[@]}" = 0 ] || failures=$(why_failed "${standing[@]}" 2>/dev/null || true)
[ -z "$failures" ] || printf 'failed (a leg named rerun-LEG: in the rerun of its files):\n%s\n' "$failures"
[ -z "${flaky//$'\n'/}" ] || printf 'flaky, failed first and passed on their rerun (the goal is none: read them above):\n%s' "$flaky"
echo "set-up and tests: $((SECONDS - run_began)) s (the tests $((SECONDS - started)) s, ${#LEGS[@]} legs)"
[ ! -d "$KEPT" ] || echo "the failed legs' engine and registry logs: $KEPT"
record_durations || true
echo "$passed passed, $failed failed, $flaky_count flaky"
exit "$status"
