// The bare baseline plus svc's engine room (dockerode), negotiated with the engine and listing
// its containers and images, as svc does at start and in each check.
import { defaultConfig } from "../../../src/config/index.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { serveHealth } from "./serve.ts";

const [portText, host] = process.argv.slice(2);
const engine = await createDockerEngine({ ...defaultConfig().docker, host: host! }, silentLogger);
await engine.listContainers();
await engine.listImages();
serveHealth(Number(portText));
