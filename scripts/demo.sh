#!/usr/bin/env bash
# svc's whole job in a minute, on a machine with no engine of its own (Debian, root, Node/npm):
# installs Bun and the dependencies if missing, starts a private sandbox (engine and registry),
# runs a container on a local-registry image, publishes a newer image under the same tag, runs
# `svc --run-once` against the sandbox engine and shows what changed. Everything it started is
# stopped when it ends, whatever the outcome, and nothing is left behind: svc's state_dir is in the
# sandbox's folder, which `sandbox.sh down` removes.
#   bash scripts/demo.sh        (or: bun run demo)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

if ! command -v bun >/dev/null 2>&1; then
  say "installing Bun from the npm registry"
  npm install -g bun >/dev/null 2>&1 || { echo "demo: npm install -g bun failed" >&2; npm install -g bun; }
fi
bun install --frozen-lockfile >/dev/null

# A sandbox of its own (folder and registry ports), so a developer's sandbox (5000/5001) and a
# test run (5100/5101) are left alone.
export SVC_SANDBOX_DIR=${SVC_DEMO_SANDBOX_DIR:-$PWD/.sandbox/demo-$$}
export SVC_SANDBOX_REGISTRY_PORT=${SVC_DEMO_REGISTRY_PORT:-5200}
export SVC_SANDBOX_AUTH_REGISTRY_PORT=${SVC_DEMO_AUTH_REGISTRY_PORT:-5201}
# read: svc refuses SVC_* variables it does not know (a typo must not pass silently)
unset SVC_DEMO_SANDBOX_DIR SVC_DEMO_REGISTRY_PORT SVC_DEMO_AUTH_REGISTRY_PORT
RECEIVER_PID=""
cleanup() {
  [ -z "$RECEIVER_PID" ] || kill "$RECEIVER_PID" 2>/dev/null || true
  say "stopping the demo sandbox"
  bash scripts/sandbox.sh down
}
trap cleanup EXIT
say "starting a private Docker engine and registry (first run installs Debian packages)"
bash scripts/sandbox.sh up
eval "$(bash scripts/sandbox.sh env)"

dock() { docker -H "$SVC_TEST_DOCKER_HOST" "$@"; }
IMAGE="$SVC_TEST_REGISTRY/demo/app:latest"
APP=svc-demo-app
# A process that stops on SIGTERM (a bare sleep as PID 1 ignores it, and every stop would wait
# the whole stop timeout).
CMD='CMD ["/bin/sh","-c","trap \"exit 0\" TERM; while true; do sleep 1; done"]'

publish() { # publish VERSION: a busybox image that knows its version, pushed under the same tag
  local root="$SVC_SANDBOX_DIR/demo-rootfs"
  rm -rf "$root"; mkdir -p "$root"
  tar -C "$root" -xf "$SVC_TEST_ROOTFS"
  echo "$1" >"$root/version"
  tar -C "$root" -c . | dock import -c "$CMD" -c "LABEL demo.version=$1" - "$IMAGE" >/dev/null
  dock push -q "$IMAGE" >/dev/null
}

show() {
  dock ps -a --filter "name=^/$APP\$" --format 'table {{.Names}}\t{{.Image}}\t{{.Status}}\t{{.Label "demo.version"}}'
  printf 'image id: %s, /version inside: %s\n' \
    "$(dock inspect -f '{{.Image}}' "$APP" | cut -c1-19)" "$(dock exec "$APP" cat /version)"
}

say "publishing $IMAGE (version 1) and running a container on it"
publish 1
dock run -d --name "$APP" --network none --restart unless-stopped \
  -e GREETING=hello -l demo.owner=you --hostname demo-host "$IMAGE" >/dev/null
show

say "publishing a newer $IMAGE (version 2) under the same tag"
publish 2

# A webhook receiver on loopback, to show the session report exactly as svc delivers it.
REPORT="$SVC_SANDBOX_DIR/report.json"
SVC_DEMO_REPORT="$REPORT" bun -e '
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(request) {
    await Bun.write(process.env.SVC_DEMO_REPORT, await request.text());
    return new Response(null, { status: 204 });
  } });
  console.log(server.port);
' >"$SVC_SANDBOX_DIR/receiver.port" &
RECEIVER_PID=$!
for _ in $(seq 50); do [ -s "$SVC_SANDBOX_DIR/receiver.port" ] && break; sleep 0.1; done
WEBHOOK="http://127.0.0.1:$(cat "$SVC_SANDBOX_DIR/receiver.port")/svc"

# Its decisions and history in the sandbox's folder, removed with it: the next svc of this machine
# (/var/lib/svc as root) never shows the demo's history.
STATE="$SVC_SANDBOX_DIR/state"
say "svc --run-once --docker-host $SVC_TEST_DOCKER_HOST --state-dir $STATE --notifications-webhook-url $WEBHOOK $APP"
code=0
bun src/main.ts --run-once --docker-host "$SVC_TEST_DOCKER_HOST" --state-dir "$STATE" --log-format pretty \
  --notifications-webhook-url "$WEBHOOK" "$APP" || code=$?

say "the session report (as the webhook received it)"
if [ -s "$REPORT" ]; then bun -e 'console.log(JSON.stringify(await Bun.file(process.argv[1]).json(), null, 2))' "$REPORT"
else echo "(no report arrived)"; fi

say "after the cycle (same name, settings kept, new image)"
show
dock inspect -f 'env: {{join .Config.Env " "}}  labels: {{json .Config.Labels}}  hostname: {{.Config.Hostname}}  restart: {{.HostConfig.RestartPolicy.Name}}' "$APP"
dock rm -f "$APP" >/dev/null
exit "$code"
