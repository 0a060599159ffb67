// The bare baseline's job done by svc's HTTP API room (Elysia) instead of a bare Bun.serve.
import { createApp, listen } from "../../../src/api/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";

const port = Number(process.argv[2]);
const config = defaultConfig({ http_api: { update: true, metrics: true, token: "bench-token-0123456789", port } });
const runner = {
  run: async () => null,
  skip: async () => null,
  rollback: async () => null,
  overview: async () => null,
  snooze: async (container: string) => ({ container, until: null }),
  acceptSigner: async (container: string) => ({ container, repository: "", signer: "" }),
  busy: false,
  queuedRequests: () => [],
};
listen(createApp({ config, runner, metrics: new Metrics(), log: silentLogger }), port);
