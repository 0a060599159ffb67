/**
 * svc's own computation of compose's config hash, the parts that need no compose: Go's float32
 * printing, the JSON of keys compose-go types as structs, and the refusals on input svc cannot
 * follow (a hash svc is not sure of is never used; tests/integration/updater/compose-hash.test.ts
 * holds the hashes against compose itself).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { computeServiceHash } from "../../../src/compose/index.ts";
import { goFloat32 } from "../../../src/compose/servicehash.ts";
import { tempDir } from "../../temp.ts";

async function hashOf(files: Record<string, string>, service = "web") {
  const dir = tempDir("svc-servicehash-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  return computeServiceHash({
    name: "p",
    service,
    workingDir: dir,
    configFiles: [join(dir, "compose.yaml")],
    envFiles: [],
  });
}

describe("float32 as Go's encoding/json prints it (strconv.FormatFloat(f, 'f', -1, 32))", () => {
  const rows: [unknown, number][] = [
    [0.1, 0.1],
    ["0.3", 0.3],
    [1.5, 1.5],
    ["0.001", 0.001],
    ["0.0001", 0.0001],
    [2, 2],
    [16777217, 16777216],
    [0.1 + 0.2, 0.3],
  ];
  for (const [input, printed] of rows)
    test(`${String(input)} -> ${printed}`, () => expect(goFloat32(input, "cpus")).toBe(printed));

  test("what Go prints with an exponent, and what is no number, give no hash", () => {
    expect(() => goFloat32(1e-7, "cpus")).toThrow("exponent");
    expect(() => goFloat32("1e3", "cpus")).toThrow("not a number");
    expect(() => goFloat32("half", "cpus")).toThrow("not a number");
  });
});

describe("keys compose-go types as structs and pointers", () => {
  test("deploy with replicas only: resources and placement printed empty, replicas dropped (types.go DeployConfig, hash.go ServiceHash)", async () => {
    const answer = await hashOf({ "compose.yaml": "services:\n  web:\n    image: a\n    deploy: {replicas: 3}\n" });
    expect("json" in answer && answer.json).toBe(
      '{"command":null,"deploy":{"resources":{},"placement":{}},"entrypoint":null,"image":"a","networks":{"default":null}}',
    );
  });

  test("env_file is dropped, its variables under the service's own (types/project.go WithServicesEnvironmentResolved)", async () => {
    const answer = await hashOf({
      "compose.yaml": "services:\n  web:\n    image: a\n    env_file: a.env\n    environment: [B=own]\n",
      "a.env": "A=1\nB=file\n",
    });
    expect("json" in answer && answer.json).toBe(
      '{"command":null,"entrypoint":null,"environment":{"A":"1","B":"own"},"image":"a","networks":{"default":null}}',
    );
  });
});

describe("input svc does not follow gives no hash, with the reason", () => {
  const rows: [string, Record<string, string>, string][] = [
    [
      "a required env file that is missing",
      { "compose.yaml": "services:\n  web:\n    image: a\n    env_file: gone.env\n" },
      "svc cannot see",
    ],
    [
      "an env file larger than svc reads",
      {
        "compose.yaml": "services:\n  web:\n    image: a\n    env_file: big.env\n",
        "big.env": `A=${"x".repeat(1024 * 1024 + 1)}\n`,
      },
      "is larger than",
    ],
    [
      "an escape in an env file's double quotes",
      { "compose.yaml": "services:\n  web:\n    image: a\n    env_file: a.env\n", "a.env": 'A="x\\n$B"\n' },
      "an escape",
    ],
    [
      "an extra host compose refuses",
      { "compose.yaml": 'services:\n  web:\n    image: a\n    extra_hosts: ["=1.2.3.4"]\n' },
      "an extra host name compose refuses",
    ],
    [
      "a deploy setting compose-go does not know",
      { "compose.yaml": "services:\n  web:\n    image: a\n    deploy: {replicaz: 2}\n" },
      "a deploy setting svc does not model (replicaz)",
    ],
    [
      "two devices with one target",
      { "compose.yaml": "services:\n  web:\n    image: a\n    devices: [/dev/a:/dev/x, /dev/b:/dev/x]\n" },
      "two devices with one target",
    ],
    [
      "deploy set by a service and the one it extends",
      {
        "compose.yaml":
          "services:\n  base:\n    image: a\n    deploy: {mode: global}\n  web:\n    extends: base\n    deploy: {replicas: 2}\n",
      },
      "deploy set in two layers",
    ],
  ];
  for (const [what, files, reason] of rows)
    test(what, async () => {
      const answer = await hashOf(files);
      expect("unknown" in answer && answer.unknown).toContain(reason);
    });
});
