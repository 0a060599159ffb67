// The floor of the chosen stack: the bare baseline's job done by Elysia, with the libraries svc
// loads before it answers (consola, zod) imported first, and none of svc's own code.
// With "all" (the footprint row), those svc loads after it listens (dockerode, croner) are
// imported then too; the start-up row leaves them out, for the strictest floor. Compiled like svc.
import { createConsola } from "consola/core";
import { Elysia } from "elysia";
import { z } from "zod";

const port = Number(process.argv[2] ?? 8080);
const loaded: unknown[] = [createConsola, z];
new Elysia()
  .get("/v1/health", () => Response.json({ status: "ok" }))
  .listen({ port, hostname: "0.0.0.0", reusePort: false, development: false });
if (process.argv[3] === "all") {
  const [{ default: Docker }, { Cron }] = await Promise.all([import("dockerode"), import("croner")]);
  loaded.push(Docker, Cron);
}
// kept reachable, so that no import can be dropped as unused
(globalThis as { stackFloor?: unknown[] }).stackFloor = loaded;
