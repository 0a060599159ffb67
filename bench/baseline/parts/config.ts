// The bare baseline plus svc's configuration room, loading a configuration as svc does at start.
import { loadConfig } from "../../../src/config/index.ts";
import { serveHealth } from "./serve.ts";

const port = Number(process.argv[2]);
await loadConfig({
  argv: ["--http-api-update", "--http-api-token", "bench-token-0123456789", "--http-api-port", String(port)],
  env: {},
  cwd: "/",
});
serveHealth(port);
