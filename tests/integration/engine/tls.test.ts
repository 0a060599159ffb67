/**
 * TLS to the engine: the sandbox engine is put behind a TLS listener on a loopback port that
 * demands a client certificate signed by the test CA (as `dockerd --tlsverify` does), and svc
 * connects with the `docker` table's tls_* options. Also: an engine that accepts the connection
 * and never answers gives an error in bounded time, not a hang.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { isSvcError } from "../../../src/core/errors.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { sandbox } from "../../harness.ts";

let dir: string;
let server: tls.Server;
let silent: net.Server;
let tlsHost: string;
let silentHost: string;
const file = (name: string) => join(dir, name);

function openssl(args: string): void {
  const proc = Bun.spawnSync(["sh", "-c", `openssl ${args}`], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  if (proc.exitCode !== 0) throw new Error(`openssl ${args}: ${proc.stderr.toString()}`);
}

async function rejection(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return { kind: error.kind, message: error.message };
  }
  throw new Error("did not reject");
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "svc-engine-tls-"));
  openssl(
    "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=svc-test-ca",
  );
  writeFileSync(file("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  openssl(
    "req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=localhost",
  );
  openssl(
    "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 -extfile server.ext",
  );
  writeFileSync(file("client.ext"), "extendedKeyUsage=clientAuth\n");
  openssl("req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem -out client.csr -subj /CN=svc");
  openssl(
    "x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 1 -extfile client.ext",
  );
  // a second, unrelated CA: its certificate must not be trusted for the server
  openssl(
    "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other.key -out other-ca.pem -days 1 -subj /CN=other-ca",
  );

  server = tls.createServer(
    {
      key: readFileSync(file("server.key")),
      cert: readFileSync(file("server.pem")),
      ca: readFileSync(file("ca.pem")),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (client) => {
      const engine = net.connect(sandbox().socketPath);
      client.pipe(engine).pipe(client);
      engine.on("error", () => client.destroy());
      client.on("error", () => engine.destroy());
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  tlsHost = `tcp://127.0.0.1:${(server.address() as net.AddressInfo).port}`;

  silent = net.createServer(() => {}); // accepts, never answers
  await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
  silentHost = `tcp://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
});

afterAll(() => {
  server?.close();
  silent?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("TLS", () => {
  test("tls_verify with CA, client certificate and key reaches the engine", async () => {
    const engine = await createDockerEngine(
      {
        host: tlsHost,
        tls_verify: true,
        tls_ca_cert: file("ca.pem"),
        tls_cert: file("cert.pem"),
        tls_key: file("key.pem"),
      },
      silentLogger,
    );
    expect((await engine.info()).product).toStartWith("Docker ");
    expect(Array.isArray(await engine.listContainers())).toBe(true);
  });

  test("tls_verify refuses a server whose certificate the CA did not sign", async () => {
    const engine = await createDockerEngine(
      {
        host: tlsHost,
        tls_verify: true,
        tls_ca_cert: file("other-ca.pem"),
        tls_cert: file("cert.pem"),
        tls_key: file("key.pem"),
      },
      silentLogger,
    );
    const error = await rejection(engine.info());
    expect(error.kind).toBe("engine");
    expect(error.message).toStartWith(`cannot reach the Docker engine at ${tlsHost}: `);
    expect(error.message).toMatch(/certificate/i);
  });

  test("without tls_verify the server certificate is not checked, the client certificate is still sent", async () => {
    const engine = await createDockerEngine(
      { host: tlsHost, tls_verify: false, tls_cert: file("cert.pem"), tls_key: file("key.pem") },
      silentLogger,
    );
    expect((await engine.info()).product).toStartWith("Docker ");
  });

  test("an engine demanding a client certificate refuses a client without one", async () => {
    const host = tlsHost.replace("tcp://", "https://");
    const engine = await createDockerEngine({ host, tls_verify: false }, silentLogger);
    const error = await rejection(engine.info());
    expect(error.message).toStartWith(`cannot reach the Docker engine at ${host}: `);
  });

  test("a missing TLS file is a configuration error naming the option", async () => {
    const error = await rejection(
      createDockerEngine(
        {
          host: tlsHost,
          tls_verify: true,
          tls_ca_cert: file("absent.pem"),
          tls_cert: file("cert.pem"),
          tls_key: file("key.pem"),
        },
        silentLogger,
      ),
    );
    expect(error.kind).toBe("config");
    expect(error.message).toBe(`docker.tls_ca_cert: cannot read ${file("absent.pem")} (ENOENT)`);
    const missing = await rejection(
      createDockerEngine({ host: tlsHost, tls_verify: true, tls_ca_cert: file("ca.pem") }, silentLogger),
    );
    expect(missing.message).toBe("docker.tls_cert is required when docker.tls_verify is true");
  });
});

test("an engine that never answers gives an engine error once the time is up, not a hang", async () => {
  const engine = await createDockerEngine({ host: silentHost, tls_verify: false }, silentLogger, {
    negotiationMs: 500,
    responseMs: 500,
  });
  const error = await rejection(engine.listContainers());
  expect(error.kind).toBe("engine");
  expect(error.message).toBe(`cannot reach the Docker engine at ${silentHost}: no answer within 0.5 s`);
});
