/**
 * Podman's Docker-compatible API (the sandbox's `podman` engine): svc refuses it at startup,
 * before touching any container, and says why. Run with SVC_SANDBOX_ENGINE=podman (README,
 * Engines); on every other engine these tests are skipped.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { docker, inspect, sandbox, uniqueName } from "../../harness.ts";
import { runSvc, userEnv } from "../e2e/support.ts";

const onPodman = process.env.SVC_TEST_ENGINE === "podman";
const name = uniqueName("podman-app");
const volume = uniqueName("podman-data");

describe.skipIf(!onPodman)("svc pointed at Podman", () => {
  afterAll(() => {
    docker(["rm", "-f", name], { allowFailure: true });
    docker(["volume", "rm", "-f", volume], { allowFailure: true });
  });

  test("refuses it at startup with exit 2 and the reason; the container and its volume's data are untouched", async () => {
    const image = `${sandbox().registry}/${uniqueName("podman-img")}:latest`;
    docker(["import", "-c", 'CMD ["/bin/sleep","3600"]', sandbox().rootfs, image]);
    docker(["run", "-d", "--name", name, "--network", "none", "-v", `${volume}:/data`, "-v", "/anon", image]);
    docker(["exec", name, "sh", "-c", "echo kept > /data/file; echo kept > /anon/file"]);
    const before = inspect(name);

    const run = await runSvc(["--run-once", "--docker-host", sandbox().dockerHost, "--log-format", "json", name], { env: userEnv() });
    expect(run.code).toBe(2);
    const output = run.stdout + run.stderr;
    expect(output).toContain("Podman 4.");
    expect(output).toContain("anonymous volumes");
    expect(output).toContain("docker.host");

    const after = inspect(name);
    expect(after.Id).toBe(before.Id);
    expect(after.State.Running).toBe(true);
    expect(docker(["exec", name, "cat", "/data/file", "/anon/file"]).stdout).toBe("kept\nkept");
  }, 60_000);
});
