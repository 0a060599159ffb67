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
#   docker28                  the engine, registry, updater (but compose's and the data guard's) and
#                             e2e tests (but the longest) on Docker 28.5's classic image store (the
#                             store is what differs from the first leg's: the same daemon; docs/testing.md),
#                             but CONTAINERD_ONLY (below)
#   docker20, docker20:e2e    the first two legs' on Debian 12's Docker 20.10, the oldest supported,
#   docker20:swarm            but CONTAINERD_ONLY, and the Swarm tests there
#   podman                    the Podman set on Debian 12's Podman 4.3, rootful (docs/podman.md)
#   podman-rootless           the Podman set on the same Podman as a user the sandbox makes
#   podman5                   the Podman set on sid's Podman 5.8, rootful, in a sid root the sandbox makes
#   podman5-rootless          the Podman set on the same Podman 5.8 as a user the sandbox makes
# Every leg is a sandbox of its own, so that they all run side by side.
# SVC_TEST_ENGINES="docker20" (a space-separated list of legs or engines) runs only those. Extra
# arguments go to `bun test` on one leg, the containerd store's (bash scripts/test.sh tests/build),
# unless SVC_TEST_ENGINES names the legs, then on each. SVC_TEST_JOBS (default 8) legs run at once.
#
# `bun run check` (typecheck, lint, unit tests) runs in the rest leg, beside its tests (so the whole
# matrix runs it), its output first in the report.
#
# --quick: the loop while working (README, "Develop and test"): `bun run check` and the quick
# engine files below, on the sandbox of the environment when one is up (eval "$(bash
# scripts/sandbox.sh env)"), else on a containerd leg of their own; under two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Debian packages and Docker 28.5's download (`sandbox.sh prepare`, a minute or two on a fresh
# machine, mostly waiting for the archive) beside Bun's and the dependencies' install and svc's
# compile below: none needs another, and on a fresh machine they were two minutes one after the other
bash scripts/sandbox.sh prepare &
prepared=$!
if ! command -v bun >/dev/null 2>&1; then
  echo "test: installing Bun from the npm registry" >&2
  npm install -g bun >/dev/null 2>&1 || { echo "test: npm install -g bun failed" >&2; npm install -g bun; }
fi
bun install --frozen-lockfile >/dev/null

# The engine-facing folders, in groups that run side by side, one `bun test` process each
# (docs/testing.md, "The legs"): most of their time is spent waiting for containers, cycles and
# engines, not on the CPU.
#   UNSCOPED  files whose containers carry no svc.scope label, and e2e svc instances that act on
#             every such container: they share an engine one file after the other, so the longest
#             e2e files (E2E_APART) run on an engine of their own, the ENGINE:e2e leg
#   SCOPED    the updater tests: every container and cycle in their own scope, which no
#             unscoped instance touches
#   OWN_ENGINES  the safety tests: engines of their own (of the leg's kind), never the leg's
UNSCOPED=(tests/integration/engine tests/integration/registry tests/integration/e2e)
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
  tests/integration/e2e/data-guard-container.test.ts
  tests/integration/safety/kill-steps.test.ts tests/integration/safety/kill-rollback.test.ts
  tests/integration/swarm/policies.test.ts
)
# The e2e files of CONTAINERD_ONLY but E2E_APART: the docker28-containerd:e2e-once leg, on an engine
# of their own (they took a third of that store's unscoped files' time, its longest process)
mapfile -t E2E_ONCE < <(printf '%s\n' "${CONTAINERD_ONLY[@]}" | grep /e2e/ | grep -vxF "${E2E_APART[@]/#/-e}")
ENGINE_FACING=("${UNSCOPED[@]}" "${SCOPED[@]}" "${OWN_ENGINES[@]}" "${SWARM[@]}")
# the longest first: a freed slot takes the next
ALL_LEGS=(docker28-containerd docker20 docker28-containerd:rest docker28 docker28-containerd:e2e
  docker28-containerd:e2e-once docker20:e2e docker28-containerd:swarm docker20:swarm podman5 podman-rootless podman podman5-rootless)
# What a change most likely broke, each file quick (docs/testing.md has every file's time): the
# engine client, a registry check, an update, svc run once as a user runs it (a rollback too).
QUICK=(tests/integration/harness.test.ts tests/integration/engine/engine.test.ts
  tests/integration/registry/check.test.ts tests/integration/updater/update.test.ts
  tests/integration/e2e/run-once.test.ts)
if [ "${1:-}" = "--quick" ]; then
  shift
  wait "$prepared"
  if [ -n "${SVC_TEST_DOCKER_HOST:-}" ] && docker -H "$SVC_TEST_DOCKER_HOST" version >/dev/null 2>&1; then
    echo "test: quick, on the sandbox at $SVC_TEST_DOCKER_HOST" >&2
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
# Eight legs at once, the eight longer than 500 s, and the light ones beside them; Podman's four
# take the first freed slots, the longest first. Measured (docs/testing.md,
# "The whole matrix"): with nine slots (the Swarm leg of 20.10 from the start, Podman's in its freed
# slot) or ten (Podman's rootless leg too) the load rose to 50-66, every leg stretched and the run
# took longer (812 s, 837 s, against 737 s with eight and its 40 s tail), and Podman's rootless leg
# took 73 CPU s where it takes 41 at the end's lower load
JOBS=${SVC_TEST_JOBS:-8}
# A light leg mostly waits (the Swarm leg of 20.10: some 30 CPU s in its 160-410 s, most of it
# Swarm's convergence): it starts with the eight and holds no slot, so Podman's legs still wait for
# the first freed ones. Started ninth, it ended every run 40-55 s after the others, half idle
LIGHT_LEGS=" docker20:swarm "
light_leg() { [[ $LIGHT_LEGS == *" $1 "* ]]; }

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
# Everything the tests make in a temporary folder goes under the run's own, so that a run that is
# stopped half-way leaves nothing behind: the engines a test brings up there (the safety tests'
# own, in svc-safety-*) are taken down with the legs'.
# (readable by all, as /tmp is: a rootless engine's user and mosquitto's read test files there)
export TMPDIR=$LOGS/tmp
mkdir -p "$TMPDIR"
chmod 755 "$LOGS"
chmod 1777 "$TMPDIR"
# The engines (dockerd, containerd and its shims, Podman, the registries, the CLIs: all Go) on one
# scheduler thread each: a dozen Go daemons side by side on two cores, each running its garbage
# collector and idle scheduler threads on both, cost more CPU for the same requests (docs/testing.md,
# "The whole matrix"); what they do is the same
export GOMAXPROCS=1
stop_descendants() { # stop_descendants PID: every process below PID, deepest first, by process id
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    stop_descendants "$child"
    kill -KILL "$child" 2>/dev/null || true
  done
}
cleanup() {
  local i dir
  touch "$LOGS/stop" 2>/dev/null || true
  # a run stopped half-way: its `bun test` processes and the svc processes they started first
  stop_descendants $$
  # the sid root's making, when it has not ended (its process group: debootstrap and what it runs)
  [ ! -f "$LOGS/podman5-root.pid" ] || [ -f "$LOGS/podman5-root.rc" ] ||
    kill -KILL -- "-$(cat "$LOGS/podman5-root.pid")" 2>/dev/null || true
  for dir in "$TMPDIR"/svc-safety-*/; do
    [ -f "$dir/dockerd.pid" ] || [ -f "$dir/registry.pid" ] || continue
    # (registry port 1: a port no sandbox takes, so no rootless user is named after it)
    SVC_SANDBOX_DIR=${dir%/} SVC_SANDBOX_REGISTRY_PORT=1 bash scripts/sandbox.sh down || true
  done
  for i in "${!LEGS[@]}"; do (eval "$(leg_env "$i" "${LEGS[$i]}")"; bash scripts/sandbox.sh down) || true; done
  # and what a test started that outlived its parent (a registry of its own, a broker): each runs
  # from the run's own folder, named in its command line
  pkill -KILL -f -- "$LOGS/" 2>/dev/null || true
  rmdir "$BASE" 2>/dev/null || true
  rm -rf "$LOGS"
}
trap cleanup EXIT
# A signal ends the run through the EXIT trap above, so no sandbox outlives it.
trap 'exit 130' INT
trap 'exit 143' TERM

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
    podman|podman-rootless|podman5|podman5-rootless) echo tests/integration/podman/podman.test.ts ;;
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
    # the classic store of Docker 28.5: what depends on the image store (the safety tests are
    # about svc's protocol, compose's files and the data guard's volumes are no image store's:
    # all three run on the containerd store of the same daemon and on 20.10's classic store)
    docker28) scoped_groups | engine_specific "$1" | awk '{ line = ""; for (i = 1; i <= NF; i++) if ($i !~ /\/(compose|data-guard)/) line = line (line == "" ? "" : " ") $i; if (line != "") print line }' ;;
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

run_check() { # `bun run check` into $LOGS/check.log, its exit code and seconds into check.rc
  local began=$SECONDS status=0
  bun run check >"$LOGS/check.log" 2>&1 </dev/null || status=$?
  echo "$status $((SECONDS - began))" >"$LOGS/check.rc"
}

run_leg() { # run_leg INDEX LEG [bun test args]
  local i=$1 leg=$2 began=$SECONDS; shift 2
  local status=0 check=""
  # the rest leg (and the quick one) runs the check beside its tests: it needs no engine
  case "$leg" in *:rest|*:quick) run_check & check=$! ;; esac
  {
    eval "$(leg_env "$i" "$leg")"
    if podman5_root_ready "$leg" && bash scripts/sandbox.sh up; then
      eval "$(bash scripts/sandbox.sh env)"
      local group n=0 sides=()
      # --timeout: bunfig.toml's [test] timeout is not honoured by Bun 1.4.5 (5 s default otherwise)
      # (extra arguments name what to run: then nothing beside)
      if [ $# -eq 0 ]; then
        while read -r group; do
          n=$((n + 1))
          # shellcheck disable=SC2086
          { echo "----- $leg, beside: $group -----"; bun test --timeout "$HANG_MS" $group; } >"$LOGS/${leg/:/-}.part$n.log" 2>&1 </dev/null &
          sides+=($!)
        done < <(beside_of "$leg")
      fi
      # shellcheck disable=SC2046
      bun test --timeout "$HANG_MS" $(tests_of "$leg") "$@" || status=$?
      for n in "${sides[@]}"; do wait "$n" || status=1; done
    else
      status=1
    fi
    # (and every leg's with SVC_SANDBOX_ENGINE_DEBUG=1: the engines' requests, to count)
    [ "$status" = 0 ] && [ "${SVC_SANDBOX_ENGINE_DEBUG:-0}" != 1 ] || bash scripts/sandbox.sh logs "$KEPT/${leg/:/-}" || true
    bash scripts/sandbox.sh down || true
  } >"$LOGS/${leg/:/-}.log" 2>&1
  [ -z "$check" ] || wait "$check" || true
  echo "$status $((SECONDS - began))" >"$LOGS/${leg/:/-}.rc"
}

# svc compiled once for every leg (the binary users download): the tests start it some two
# thousand times, each start a fifth of the CPU of `bun src/main.ts` (tests/support/svc-command.ts)
bun build.ts --outdir "$LOGS/bin" >/dev/null
export SVC_TEST_BINARY=$LOGS/bin/svc

# The packages and Docker 28.5 are there before any engine starts; the sid root of Podman 5.8
# (podman5's legs, podman-rootless's quadlet generator: debootstrap, about a minute on a fresh
# machine, mostly downloads) is made beside the first legs, since those legs start last, and each of
# them waits for it (podman5_root_ready)
wait "$prepared" || { echo "test: scripts/sandbox.sh prepare failed (above)" >&2; exit 1; }
needs_podman5_root() { case "$1" in podman5* | podman-rootless) return 0 ;; *) return 1 ;; esac; }
for leg in "${LEGS[@]}"; do
  needs_podman5_root "$leg" || continue
  # (a session of its own outside this shell's jobs, which the legs' `wait -n` counts; `cleanup`
  # stops it by its process group when the run ends first)
  # shellcheck disable=SC2016
  (setsid bash -c 'status=0; SVC_SANDBOX_ENGINE=podman5 bash scripts/sandbox.sh prepare >"$1.log" 2>&1 || status=$?
    echo "$status" >"$1.rc"' sh "$LOGS/podman5-root" </dev/null & echo $! >"$LOGS/podman5-root.pid")
  break
done
podman5_root_ready() { # podman5_root_ready LEG: a leg that needs the sid root waits for it; 1 when it could not be made
  needs_podman5_root "$1" || return 0
  until [ -f "$LOGS/podman5-root.rc" ]; do sleep 1; done
  [ "$(cat "$LOGS/podman5-root.rc")" = 0 ] || { cat "$LOGS/podman5-root.log"; return 1; }
}

# SVC_TEST_CPU=1: where the run's CPU goes, leg by leg (docs/testing.md, "Where the CPU goes")
# (started outside this shell's jobs, which the legs' `wait` waits for; it ends when $LOGS/stop is made)
watcher=""
if [ "${SVC_TEST_CPU:-0}" = 1 ]; then
  (bun scripts/cpu-by-leg.ts watch "$LOGS" </dev/null & echo $! >"$LOGS/watcher.pid")
  read -r watcher <"$LOGS/watcher.pid"
fi

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
rerun_leg() { # rerun_leg INDEX LEG FILE...: those files once more, alone on a fresh sandbox of the leg
  local i=$1 leg=$2 status=0; shift 2
  {
    eval "$(leg_env "$i" "$leg")"
    if podman5_root_ready "$leg" && bash scripts/sandbox.sh up; then
      eval "$(bash scripts/sandbox.sh env)"
      bun test --timeout "$HANG_MS" "$@" || status=$?
    else
      status=1
    fi
    bash scripts/sandbox.sh down || true
  } >"$LOGS/rerun-${leg/:/-}.log" 2>&1 </dev/null
  echo "$status" >"$LOGS/rerun-${leg/:/-}.rc"
}
# A leg whose only failures are tests that fail (a time limit passed at a load of 40 and more, two
# cores for a dozen engines) runs the files that hold them once more near the end, when the machine
# is quieter: a test that passes then is reported by name as passed on its rerun, one that fails
# again fails the run. A leg that failed otherwise (its sandbox, an error between tests, the
# check) is not rerun. SVC_TEST_RERUN=0 turns this off.
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
legs_left() { # how many legs have not ended
  local leg n=0
  for leg in "${LEGS[@]}"; do [ -f "$LOGS/${leg/:/-}.rc" ] || n=$((n + 1)); done
  echo "$n"
}
rerun_ended_legs() { # the reruns of the legs that ended, each once
  local i
  for i in "${!LEGS[@]}"; do
    [ -z "${rerun_looked[$i]:-}" ] && [ -f "$LOGS/${LEGS[$i]/:/-}.rc" ] || continue
    rerun_looked[$i]=1
    mapfile -t files < <(rerunnable "${LEGS[$i]}")
    [ "${#files[@]}" -gt 0 ] || continue
    echo "test: ${LEGS[$i]}: rerunning alone: ${files[*]}" >&2
    rerun_leg "$i" "${LEGS[$i]}" "${files[@]}" &
  done
}

started=$SECONDS
running=0
declare -A light=() # the process ids of the light legs started
for i in "${!LEGS[@]}"; do
  if ! light_leg "${LEGS[$i]}"; then
    while [ "$running" -ge "$JOBS" ]; do
      ended=""
      wait -n -p ended || true
      [ -n "${light[$ended]:-}" ] || running=$((running - 1))
    done
  fi
  echo "test: ${LEGS[$i]}: $({ tests_of "${LEGS[$i]}"; beside_of "${LEGS[$i]}"; } | wc -w | sed 's/^0$/every/') test folders and files" >&2
  run_leg "$i" "${LEGS[$i]}" "$@" &
  if light_leg "${LEGS[$i]}"; then light[$!]=1; else running=$((running + 1)); fi
done
# The reruns start once two legs or fewer are left (every leg started by then): the machine is
# quieter, and they overlap the run's last legs rather than follow them (Podman's, the last to
# start, often end the run 20-50 s after the others)
declare -A rerun_looked=()
while left=$(legs_left) && [ "$left" -gt 0 ]; do
  [ "$left" -gt 2 ] || rerun_ended_legs
  sleep 2
done
rerun_ended_legs
mapfile -t files < <(rerunnable_check)
if [ "${#files[@]}" -gt 0 ]; then
  echo "test: check: rerunning alone: ${files[*]}" >&2
  { bun test --timeout 120000 "${files[@]}" >"$LOGS/rerun-check.log" 2>&1 </dev/null; echo $? >"$LOGS/rerun-check.rc"; } &
fi
wait

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
status=0 passed=0 failed=0 summary="" flaky=""
if [ -f "$LOGS/check.log" ]; then
  printf '\n===== bun run check =====\n'
  cat "$LOGS/check.log"
  read -r rc took <"$LOGS/check.rc" 2>/dev/null || rc=1 took=?
  again=""
  if [ -f "$LOGS/rerun-check.rc" ]; then
    printf '\n===== bun run check: the unit test files that failed, rerun alone =====\n'
    cat "$LOGS/rerun-check.log"
    read -r again <"$LOGS/rerun-check.rc" || again=1
    [ "$again" != 0 ] || flaky+=$(why_failed "$LOGS/check.log" | grep -v '^    ' || true)$'\n'
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
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
  again=""
  if [ -f "$LOGS/rerun-${leg/:/-}.rc" ]; then
    printf '\n===== %s: the files that failed, rerun alone =====\n' "$leg"
    cat "$LOGS/rerun-${leg/:/-}.log"
    read -r again <"$LOGS/rerun-${leg/:/-}.rc" || again=1
    # shellcheck disable=SC2046
    [ "$again" != 0 ] || flaky+=$(why_failed $(leg_logs "$leg") | grep -v '^    ' || true)$'\n'
  fi
  summary+="$leg: ${p:-0} passed, ${f:-0} failed (exit $rc, $took s)${again:+; its failed files rerun alone: exit $again}"$'\n'
  if [ "$rc" != 0 ] && [ "$again" != 0 ]; then status=1; print_kept_logs "$KEPT/${leg/:/-}"; fi
done
if [ -n "$watcher" ]; then
  touch "$LOGS/stop"
  while kill -0 "$watcher" 2>/dev/null; do sleep 0.2; done
  printf '\n'
  bun scripts/cpu-by-leg.ts report "$LOGS" || true
fi
printf '\n%s' "$summary"
failures=$(why_failed "$LOGS"/*.log 2>/dev/null || true)
[ -z "$failures" ] || printf 'failed (a leg named rerun-LEG: in the rerun of its files):\n%s\n' "$failures"
[ -z "${flaky//$'\n'/}" ] || printf 'passed on their rerun alone (failed first at load; read them above):\n%s' "$flaky"
echo "legs: ${#LEGS[@]}, $((SECONDS - started)) s"
[ ! -d "$KEPT" ] || echo "the failed legs' engine and registry logs: $KEPT"
reran_passed=$(printf '%s' "$flaky" | grep -c . || true)
echo "$passed passed, $failed failed${flaky:+; $reran_passed failures (tests, errors between tests) passed on their rerun alone}"
exit "$status"
