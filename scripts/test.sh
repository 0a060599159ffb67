#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine (root, Node/npm only): installs Bun and the
# dependencies, starts the private sandbox (engine, registries), runs every test, and stops
# what it started, whatever the outcome. Extra arguments go to `bun test`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bun >/dev/null 2>&1; then
  echo "test: installing Bun from the npm registry" >&2
  npm install -g bun >/dev/null 2>&1 || { echo "test: npm install -g bun failed" >&2; npm install -g bun; }
fi
bun install --frozen-lockfile >/dev/null

# Our own sandbox folder per run, so a developer's sandbox is left alone.
export SVC_SANDBOX_DIR=${SVC_SANDBOX_DIR:-$PWD/.sandbox/test-$$}
# Ports of their own too, so a developer's running sandbox (5000/5001) does not collide.
export SVC_SANDBOX_REGISTRY_PORT=${SVC_SANDBOX_REGISTRY_PORT:-5100}
export SVC_SANDBOX_AUTH_REGISTRY_PORT=${SVC_SANDBOX_AUTH_REGISTRY_PORT:-5101}
LOG=$(mktemp "${TMPDIR:-/tmp}/svc-test.XXXXXX")
trap 'bash scripts/sandbox.sh down; rm -f "$LOG"' EXIT
# A signal ends the run through the EXIT trap above, so the sandbox never outlives it.
trap 'exit 130' INT
trap 'exit 143' TERM
bash scripts/sandbox.sh up
eval "$(bash scripts/sandbox.sh env)"

status=0
# pipefail: the status is bun test's own (tee does not fail).
# --timeout: bunfig.toml's [test] timeout is not honoured by Bun 1.4.5 (5 s default otherwise).
bun test --timeout 120000 "$@" 2>&1 | tee "$LOG" || status=$?
# One plain closing line that any CI can read, whatever bun test's own summary looks like.
passed=$(awk '/^ *[0-9]+ pass$/ { print $1 }' "$LOG" | tail -1)
failed=$(awk '/^ *[0-9]+ fail$/ { print $1 }' "$LOG" | tail -1)
echo "${passed:-0} passed, ${failed:-0} failed"
exit "$status"
