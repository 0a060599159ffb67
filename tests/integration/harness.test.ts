import { afterAll, expect, test } from "bun:test";
import Docker from "dockerode";
import { buildImage, docker, removeContainers, sandbox, uniqueName } from "../harness.ts";

const name = uniqueName("harness");
afterAll(() => {
  removeContainers(name);
  docker(["rmi", "-f", `${sandbox().registry}/${name}:latest`], { allowFailure: true });
});

test("a container created from a pushed image is seen by dockerode", async () => {
  const reference = `${sandbox().registry}/${name}:latest`;
  const image = buildImage(reference);
  expect(image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  docker(["run", "-d", "--name", name, "--network", "none", reference]);

  const engine = new Docker({ socketPath: sandbox().socketPath });
  const info = await engine.getContainer(name).inspect();
  expect(info.Name).toBe(`/${name}`);
  expect(info.State.Running).toBe(true);
  expect(info.Image).toBe(image.id);
});
