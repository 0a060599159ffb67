import { afterAll, expect, test } from "bun:test";
import { defaultConfig } from "../../src/config/index.ts";
import { createDockerEngine } from "../../src/engine/index.ts";
import { silentLogger } from "../../src/log/index.ts";
import { buildImage, docker, removeContainers, sandbox, uniqueName } from "../harness.ts";

const name = uniqueName("harness");
afterAll(() => {
  removeContainers(name);
  docker(["rmi", "-f", `${sandbox().registry}/${name}:latest`], { allowFailure: true });
});

test("a container created from a pushed image is seen by svc's engine client", async () => {
  const reference = `${sandbox().registry}/${name}:latest`;
  const image = buildImage(reference);
  expect(image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  docker(["run", "-d", "--name", name, "--network", "none", reference]);

  const engine = await createDockerEngine(
    { ...defaultConfig().docker, host: `unix://${sandbox().socketPath}` },
    silentLogger,
  );
  const info = await engine.inspectContainer(name);
  expect(info.Name).toBe(`/${name}`);
  expect(info.State.Running).toBe(true);
  expect(info.Image).toBe(image.id);
});
