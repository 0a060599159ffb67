/** MQTT channel against a real mosquitto: plain, TLS, mutual TLS; QoS 1 and 2; failures logged. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";

setDefaultTimeout(120_000);
// how long a message may take to arrive: a hang limit, with room for a loaded machine
const HANG_LIMIT_MS = 60_000;

import { join } from "node:path";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createNotifications } from "../../../src/notify/index.ts";
import { freePort } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import {
  type Mosquitto,
  makePki,
  payloadOf,
  removeDir,
  sampleReport,
  startMosquitto,
  stop,
  subscribe,
  type TestPki,
  tempDir,
} from "./peers.ts";

let pki: TestPki;
let plain: Mosquitto;
let tls: Mosquitto;
let mutual: Mosquitto;
let selfSigned: Mosquitto;

beforeAll(async () => {
  pki = makePki();
  [plain, tls, mutual, selfSigned] = await Promise.all([
    startMosquitto(),
    startMosquitto({ ca: pki.caCert, cert: pki.serverCert, key: pki.serverKey, requireClientCert: false }),
    startMosquitto({ ca: pki.caCert, cert: pki.serverCert, key: pki.serverKey, requireClientCert: true }),
    startMosquitto({ ca: pki.caCert, cert: pki.selfSignedCert, key: pki.selfSignedKey, requireClientCert: false }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([plain, tls, mutual, selfSigned].map((m) => stop(m?.proc)));
  for (const m of [plain, tls, mutual, selfSigned]) removeDir(m?.dir);
  removeDir(pki?.dir);
}, 30_000);

function mqttConfig(mqtt: DeepPartial<Config["notifications"]["mqtt"]>): Config {
  return defaultConfig({ notifications: { mqtt } });
}

const clientTlsArgs = () => ["--cafile", pki.caCert];
const mutualTlsArgs = () => ["--cafile", pki.caCert, "--cert", pki.clientCert, "--key", pki.clientKey];

async function publishAndReceive(broker: Mosquitto, config: Config, qos: 0 | 1 | 2, subArgs: string[] = []) {
  const topic = config.notifications.mqtt.topic!;
  const subscriber = await subscribe(broker, topic, qos, subArgs);
  const log = recordingLogger();
  const notifications = await createNotifications(config, log, { retryDelayMs: 50, timeoutMs: 5000 });
  const report = sampleReport();
  try {
    notifications.publish(report);
    await notifications.flush();
    const output = await Promise.race([
      subscriber.message,
      Bun.sleep(HANG_LIMIT_MS).then(() => "timeout: nothing received"),
    ]);
    return { report, received: payloadOf(output), log };
  } finally {
    await notifications.close();
    await stop(subscriber.proc);
  }
}

describe("mqtt channel", () => {
  for (const scheme of ["tcp", "mqtt"]) {
    test(`${scheme}:// publishes the report JSON with QoS 1 (plain)`, async () => {
      const topic = `svc/test/${crypto.randomUUID()}`;
      const config = mqttConfig({ broker: `${scheme}://127.0.0.1:${plain.port}`, topic, qos: 1 });
      const { report, received, log } = await publishAndReceive(plain, config, 1);
      expect(JSON.parse(received.payload)).toEqual(report);
      expect(received.qos).toBe(1);
      expect(
        log.lines.some((l) => l.level === "info" && l.message === "notification sent" && l.fields.channel === "mqtt"),
      ).toBe(true);
    });
  }

  test("QoS 2 is honoured end to end", async () => {
    const topic = `svc/test/${crypto.randomUUID()}`;
    const config = mqttConfig({ broker: `mqtt://127.0.0.1:${plain.port}`, topic, qos: 2, client_id: "svc-test-fixed" });
    const { report, received } = await publishAndReceive(plain, config, 2);
    expect(JSON.parse(received.payload)).toEqual(report);
    expect(received.qos).toBe(2);
  });

  for (const scheme of ["mqtts", "ssl"]) {
    test(`${scheme}:// connects over TLS, verified with tls_ca_cert (QoS 1)`, async () => {
      const topic = `svc/test/${crypto.randomUUID()}`;
      const config = mqttConfig({
        broker: `${scheme}://127.0.0.1:${tls.port}`,
        topic,
        qos: 1,
        tls_ca_cert: pki.caCert,
      });
      const { report, received } = await publishAndReceive(tls, config, 1, clientTlsArgs());
      expect(JSON.parse(received.payload)).toEqual(report);
      expect(received.qos).toBe(1);
    });
  }

  test("a TLS field turns TLS on for a tcp:// broker", async () => {
    const topic = `svc/test/${crypto.randomUUID()}`;
    const config = mqttConfig({ broker: `tcp://127.0.0.1:${tls.port}`, topic, qos: 1, tls_ca_cert: pki.caCert });
    const { report, received } = await publishAndReceive(tls, config, 1, clientTlsArgs());
    expect(JSON.parse(received.payload)).toEqual(report);
  });

  test("mutual TLS with a client certificate (QoS 2)", async () => {
    const topic = `svc/test/${crypto.randomUUID()}`;
    const config = mqttConfig({
      broker: `mqtts://127.0.0.1:${mutual.port}`,
      topic,
      qos: 2,
      tls_ca_cert: pki.caCert,
      tls_cert: pki.clientCert,
      tls_key: pki.clientKey,
    });
    const { report, received } = await publishAndReceive(mutual, config, 2, mutualTlsArgs());
    expect(JSON.parse(received.payload)).toEqual(report);
    expect(received.qos).toBe(2);
  });

  test("mutual TLS without a client certificate fails, is logged, and does not throw", async () => {
    const config = mqttConfig({
      broker: `mqtts://127.0.0.1:${mutual.port}`,
      topic: "svc/test/x",
      qos: 1,
      tls_ca_cert: pki.caCert,
    });
    const log = recordingLogger();
    const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 3000, attempts: 2 });
    expect(() => notifications.publish(sampleReport())).not.toThrow();
    await notifications.close();
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields.channel).toBe("mqtt");
    expect(failure?.fields.attempts).toBe(2);
    expect(String(failure?.fields.reason)).not.toBe("");
  });

  test("a self-signed broker certificate is refused without tls_skip_verify", async () => {
    const config = mqttConfig({ broker: `mqtts://127.0.0.1:${selfSigned.port}`, topic: "svc/test/x", qos: 1 });
    const log = recordingLogger();
    const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 3000, attempts: 2 });
    notifications.publish(sampleReport());
    await notifications.close();
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields.channel).toBe("mqtt");
    expect(String(failure?.fields.reason)).toMatch(/certif|self.signed|verify/i);
    expect(log.lines.filter((l) => l.message === "notification failed, retrying")).toHaveLength(1);
  });

  test("tls_skip_verify accepts the self-signed broker", async () => {
    const topic = `svc/test/${crypto.randomUUID()}`;
    const config = mqttConfig({ broker: `mqtts://127.0.0.1:${selfSigned.port}`, topic, qos: 1, tls_skip_verify: true });
    const { report, received } = await publishAndReceive(selfSigned, config, 1, [
      "--insecure",
      "--cafile",
      pki.selfSignedCert,
    ]);
    expect(JSON.parse(received.payload)).toEqual(report);
  });

  test("a broker that is down is logged with the channel and reason; publish does not throw", async () => {
    const config = mqttConfig({
      broker: `mqtt://127.0.0.1:${freePort()}`,
      topic: "svc/test/x",
      password: "mqtt-secret-pw",
      username: "u",
    });
    const log = recordingLogger();
    const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 3000, attempts: 3 });
    notifications.publish(sampleReport());
    await notifications.flush();
    const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
    expect(failure?.fields).toMatchObject({ channel: "mqtt", attempts: 3 });
    expect(String(failure?.fields.reason)).toMatch(/ECONNREFUSED|refused|closed/i);
    expect(log.text()).not.toContain("mqtt-secret-pw");
    await notifications.close();
  });

  test("a broker that accepts TCP but never answers runs into the connect timeout", async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const config = mqttConfig({ broker: `mqtt://127.0.0.1:${silent.port}`, topic: "svc/test/x" });
      const log = recordingLogger();
      const notifications = await createNotifications(config, log, { retryDelayMs: 10, timeoutMs: 500, attempts: 2 });
      notifications.publish(sampleReport());
      await notifications.close();
      const failure = log.lines.find((l) => l.level === "error" && l.message === "notification failed");
      expect(failure?.fields.channel).toBe("mqtt");
      expect(String(failure?.fields.reason)).toMatch(/time|CONNACK/i);
    } finally {
      silent.stop(true);
    }
  });

  test("mqtt:// and mqtts:// notification URLs (the fork's shoutrrr form) publish the message text on the same client", async () => {
    // plain, QoS 1, retained: a subscriber that comes after the publication still gets it
    const log = recordingLogger();
    const urls = [
      `mqtt://svc:MqttUrlSecret1@127.0.0.1:${plain.port}/svc/url/plain?qos=1&retained=yes&clientid=svc-url-test`,
    ];
    const plainNotifications = await createNotifications(defaultConfig({ notifications: { urls } }), log, {
      retryDelayMs: 50,
      timeoutMs: 5000,
      hostname: "nas",
    });
    plainNotifications.publish(sampleReport());
    await plainNotifications.close();
    const late = await subscribe(plain, "svc/url/plain", 1);
    const output = await Promise.race([late.message, Bun.sleep(HANG_LIMIT_MS).then(() => "timeout: nothing received")]);
    await stop(late.proc);
    expect(output).toContain("svc on nas: 1 updated, 1 failed");
    expect(output).toContain("updated web: 127.0.0.1:5000/web:latest");
    expect(log.text()).not.toContain("MqttUrlSecret1");

    // TLS to a self-signed broker: refused, then accepted with disabletlsverification=yes
    const url = (extra: string) => `mqtts://127.0.0.1:${selfSigned.port}/svc/url/tls${extra}`;
    const refusedLog = recordingLogger();
    const refused = await createNotifications(defaultConfig({ notifications: { urls: [url("")] } }), refusedLog, {
      retryDelayMs: 10,
      timeoutMs: 3000,
      attempts: 1,
    });
    refused.publish(sampleReport());
    await refused.close();
    expect(refusedLog.lines.some((l) => l.message === "notification failed")).toBe(true);
    const subscriber = await subscribe(selfSigned, "svc/url/tls", 0, ["--cafile", pki.selfSignedCert, "--insecure"]);
    const accepted = await createNotifications(
      defaultConfig({ notifications: { urls: [url("?disabletlsverification=yes")] } }),
      recordingLogger(),
      { timeoutMs: 5000, hostname: "nas" },
    );
    accepted.publish(sampleReport());
    await accepted.flush();
    const tlsOutput = await Promise.race([
      subscriber.message,
      Bun.sleep(HANG_LIMIT_MS).then(() => "timeout: nothing received"),
    ]);
    await accepted.close();
    await stop(subscriber.proc);
    expect(tlsOutput).toContain("svc on nas: 1 updated, 1 failed");
  });

  test("after close nothing is left open: a process that published and closed exits by itself", async () => {
    const dir = tempDir("exit");
    const script = join(dir, "publish-and-close.ts");
    const src = join(import.meta.dir, "../../../src");
    await Bun.write(
      script,
      `import { defaultConfig } from ${JSON.stringify(join(src, "config/index.ts"))};
import { createNotifications } from ${JSON.stringify(join(src, "notify/index.ts"))};
import { silentLogger } from ${JSON.stringify(join(src, "log/index.ts"))};
const report = JSON.parse(process.argv[2]);
const n = await createNotifications(defaultConfig({ notifications: { mqtt: { broker: "mqtt://127.0.0.1:${plain.port}", topic: "svc/test/exit", qos: 2 } } }), silentLogger);
n.publish(report);
await n.close();
console.log("closed");
`,
    );
    const child = Bun.spawn(["bun", script, JSON.stringify(sampleReport())], { stdout: "pipe", stderr: "pipe" });
    // Generous (a Bun start that loads the sources takes seconds at load): only a connection or
    // timer left behind (keep-alive 60 s) would keep it running this long.
    const guard = setTimeout(() => child.kill("SIGKILL"), 50_000);
    const code = await child.exited;
    clearTimeout(guard);
    removeDir(dir);
    expect(await new Response(child.stdout).text()).toBe("closed\n");
    expect(child.signalCode).toBeNull();
    expect(code).toBe(0);
  });
});
