#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine (root, Node/npm only): installs Bun and the
# dependencies, starts the private sandbox (engine, registries), runs every test, and stops
# what it started, whatever the outcome. Extra arguments go to `bun test`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v bun >/dev/null 2>&1; then
  echo "test: installing Bun from the npm registry" >&2
  npm install -g bun >/dev/null 2>&1
fi
bun install --frozen-lockfile >/dev/null

# Our own sandbox folder per run, so a developer's sandbox is left alone.
export SVC_SANDBOX_DIR=${SVC_SANDBOX_DIR:-$PWD/.sandbox/test-$$}
# Ports of their own too, so a developer's running sandbox (5000/5001) does not collide.
export SVC_SANDBOX_REGISTRY_PORT=${SVC_SANDBOX_REGISTRY_PORT:-5100}
export SVC_SANDBOX_AUTH_REGISTRY_PORT=${SVC_SANDBOX_AUTH_REGISTRY_PORT:-5101}
trap 'bash scripts/sandbox.sh down' EXIT
bash scripts/sandbox.sh up
eval "$(bash scripts/sandbox.sh env)"

bun test "$@"
