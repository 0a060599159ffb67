/**
 * Real notification peers for the integration tests: mosquitto (plain, TLS, mutual TLS), a
 * mosquitto_sub subscriber, an aiosmtpd SMTP server writing each message to a folder, and a
 * test CA made with openssl. Each is started on a free loopback port and stopped by its pid.
 */
import { chmodSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Server, Subprocess } from "bun";
import { freePort, portOpen, waitUntil } from "../../harness.ts";
import { tempDir as removedAtExit } from "../../temp.ts";

export function tempDir(prefix: string): string {
  return removedAtExit(`svc-notify-${prefix}-`);
}

/** Waits until something accepts TCP connections on 127.0.0.1:port. */
export async function waitForPort(port: number, what: string, proc?: Subprocess, logFile?: string): Promise<void> {
  await waitUntil(
    async () => {
      if (proc && proc.exitCode !== null) {
        const log = logFile ? readFileSync(logFile, "utf8") : "";
        throw new Error(`${what} exited with ${proc.exitCode}: ${log}`);
      }
      return portOpen(port);
    },
    15_000,
    what,
  );
}

/** Kills by pid (never by name) and waits for the exit. */
export async function stop(proc: Subprocess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill("SIGTERM");
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([proc.exited, new Promise((resolve) => (timer = setTimeout(resolve, 3000)))]);
  clearTimeout(timer);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
}

function openssl(args: string[], cwd: string): void {
  const result = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (result.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${result.stderr.toString()}`);
}

export interface TestPki {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  /** a self-signed server certificate, signed by no CA the client knows */
  selfSignedCert: string;
  selfSignedKey: string;
}

/** A test CA, a server certificate for 127.0.0.1/localhost, a client certificate, and a self-signed one. */
export function makePki(): TestPki {
  // P-256 keys: an RSA key's generation took over 30 s at a loaded machine's worst (a hook timed out)
  const dir = tempDir("pki");
  const san = "subjectAltName=IP:127.0.0.1,DNS:localhost";
  writeFileSync(join(dir, "server.ext"), `${san}\nextendedKeyUsage=serverAuth\n`);
  writeFileSync(join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=svc test CA",
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
    ],
    dir,
  );
  for (const who of ["server", "client"]) {
    openssl(
      [
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        `/CN=svc test ${who}`,
        "-keyout",
        `${who}.key`,
        "-out",
        `${who}.csr`,
      ],
      dir,
    );
    openssl(
      [
        "x509",
        "-req",
        "-in",
        `${who}.csr`,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        `${who}.ext`,
        "-out",
        `${who}.crt`,
      ],
      dir,
    );
  }
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "2",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      san,
      "-keyout",
      "self.key",
      "-out",
      "self.crt",
    ],
    dir,
  );
  // mosquitto started as root drops to its own user: it must be able to read these test files.
  chmodSync(dir, 0o755);
  for (const file of readdirSync(dir)) chmodSync(join(dir, file), 0o644);
  return {
    dir,
    caCert: join(dir, "ca.crt"),
    serverCert: join(dir, "server.crt"),
    serverKey: join(dir, "server.key"),
    clientCert: join(dir, "client.crt"),
    clientKey: join(dir, "client.key"),
    selfSignedCert: join(dir, "self.crt"),
    selfSignedKey: join(dir, "self.key"),
  };
}

export interface Mosquitto {
  port: number;
  proc: Subprocess;
  dir: string;
}

export interface MosquittoTls {
  cert: string;
  key: string;
  ca: string;
  requireClientCert: boolean;
}

export async function startMosquitto(tls?: MosquittoTls, extra: string[] = []): Promise<Mosquitto> {
  const dir = tempDir("mosquitto");
  const port = freePort();
  const lines = [`listener ${port} 127.0.0.1`, "allow_anonymous true", "persistence false", ...extra];
  if (tls) {
    lines.push(`cafile ${tls.ca}`, `certfile ${tls.cert}`, `keyfile ${tls.key}`);
    if (tls.requireClientCert) lines.push("require_certificate true");
  }
  const conf = join(dir, "mosquitto.conf");
  writeFileSync(conf, `${lines.join("\n")}\n`);
  const log = join(dir, "mosquitto.log");
  const proc = Bun.spawn(["mosquitto", "-c", conf], { stdout: "ignore", stderr: Bun.file(log) });
  await waitForPort(port, `mosquitto on ${port}`, proc, log);
  return { port, proc, dir };
}

export interface Subscriber {
  proc: Subprocess;
  /** resolves with the one message received (mosquitto_sub -C 1) */
  message: Promise<string>;
}

/** `mosquitto_sub -C 1 -q qos`; resolves once it is subscribed (so no message is missed). */
export async function subscribe(
  broker: Mosquitto,
  topic: string,
  qos: 0 | 1 | 2,
  tlsArgs: string[] = [],
): Promise<Subscriber> {
  const proc = Bun.spawn(
    [
      "stdbuf",
      "-oL",
      "mosquitto_sub",
      "-h",
      "127.0.0.1",
      "-p",
      String(broker.port),
      "-t",
      topic,
      "-q",
      String(qos),
      "-C",
      "1",
      "-d",
      ...tlsArgs,
    ],
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  // With -d, mosquitto_sub prints its debug lines (SUBACK) on stdout before the payload;
  // stdbuf makes it line-buffered on a pipe, so SUBACK is seen when it happens.
  const reader = proc.stdout.getReader();
  let buffer = "";
  const decoder = new TextDecoder();
  const deadline = Date.now() + 15_000;
  while (!/received SUBACK/i.test(buffer)) {
    if (Date.now() > deadline) throw new Error(`mosquitto_sub did not subscribe: ${buffer}`);
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`mosquitto_sub exited: ${buffer} ${await new Response(proc.stderr).text()}`);
    buffer += decoder.decode(chunk.value, { stream: true });
  }
  const message = (async () => {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
    }
    return buffer;
  })();
  return { proc, message };
}

/** The payload line of a `mosquitto_sub -d` output, with the QoS the subscriber received it at. */
export function payloadOf(output: string): { payload: string; qos: number | null } {
  const lines = output.split("\n");
  const received = lines.findIndex((l) => l.includes("received PUBLISH"));
  const qos = received >= 0 ? Number(/q(\d)/.exec(lines[received]!)?.[1] ?? NaN) : null;
  const payload = lines.find((l) => l.startsWith("{")) ?? "";
  return { payload, qos };
}

const SMTP_HANDLER = `
import sys, os, json, time, ssl, email
from email import policy
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

out_dir, port = sys.argv[1], int(sys.argv[2])
cert = os.environ.get("SMTP_CERT")
key = os.environ.get("SMTP_KEY")
user = os.environ.get("SMTP_USER")
password = os.environ.get("SMTP_PASSWORD")

class Writer:
    counter = 0
    async def handle_DATA(self, server, session, envelope):
        Writer.counter += 1
        msg = email.message_from_bytes(envelope.original_content, policy=policy.default)
        text = msg.get_body(preferencelist=("plain",))
        html = msg.get_body(preferencelist=("html",))
        name = os.path.join(out_dir, "msg-%04d" % Writer.counter)
        with open(name + ".tmp", "w") as f:
            json.dump({"mail_from": envelope.mail_from, "rcpt_tos": envelope.rcpt_tos,
                       "from": str(msg["from"]), "to": str(msg["to"]), "subject": str(msg["subject"]),
                       "content_type": msg.get_content_type(),
                       "text": text.get_content() if text is not None else None,
                       "html": html.get_content() if html is not None else None,
                       "tls": session.ssl is not None, "helo": session.host_name,
                       "login": session.auth_data.login.decode() if session.auth_data else None}, f)
        os.rename(name + ".tmp", name + ".json")
        return "250 OK"

def authenticate(server, session, envelope, mechanism, auth_data):
    if isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password:
        return AuthResult(success=True, auth_data=auth_data)
    return AuthResult(success=False, handled=False)

kwargs = {}
if cert:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)
    if os.environ.get("SMTP_IMPLICIT_TLS"):
        kwargs["ssl_context"] = ctx
    else:
        kwargs["tls_context"] = ctx
if user:
    kwargs["authenticator"] = authenticate
    kwargs["auth_require_tls"] = True
    kwargs["auth_required"] = True
controller = Controller(Writer(), hostname="127.0.0.1", port=port, **kwargs)
controller.start()
try:
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    pass
finally:
    controller.stop()
`;

/** The python that has aiosmtpd (Debian's; a pyenv python on PATH may not). */
function pythonWithAiosmtpd(): string {
  for (const candidate of ["/usr/bin/python3", "python3"]) {
    const probe = Bun.spawnSync([candidate, "-c", "import aiosmtpd"], { stdout: "ignore", stderr: "ignore" });
    if (probe.exitCode === 0) return candidate;
  }
  throw new Error("no python3 with aiosmtpd (apt-get install -y python3-aiosmtpd)");
}

export interface SmtpServer {
  port: number;
  proc: Subprocess;
  dir: string;
  messages(): ReceivedMail[];
}

export interface ReceivedMail {
  mail_from: string;
  rcpt_tos: string[];
  from: string;
  to: string;
  subject: string;
  content_type: string;
  text: string | null;
  html: string | null;
  /** the message came over a STARTTLS-upgraded connection (false for implicit TLS: aiosmtpd sees no upgrade) */
  tls: boolean;
  /** the user it authenticated as */
  login: string | null;
  /** the name the client gave in EHLO/HELO */
  helo: string | null;
}

/** aiosmtpd on a free port; with a certificate it offers STARTTLS, with a login it requires AUTH. */
export async function startSmtp(
  options: { cert?: string; key?: string; user?: string; password?: string; implicitTls?: boolean; port?: number } = {},
): Promise<SmtpServer> {
  const dir = tempDir("smtp");
  const script = join(dir, "handler.py");
  writeFileSync(script, SMTP_HANDLER);
  const inbox = join(dir, "inbox");
  Bun.spawnSync(["mkdir", "-p", inbox]);
  const port = options.port ?? freePort();
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  if (options.implicitTls) env.SMTP_IMPLICIT_TLS = "1";
  if (options.cert && options.key) Object.assign(env, { SMTP_CERT: options.cert, SMTP_KEY: options.key });
  if (options.user) Object.assign(env, { SMTP_USER: options.user, SMTP_PASSWORD: options.password ?? "" });
  const log = join(dir, "smtp.log");
  const proc = Bun.spawn([pythonWithAiosmtpd(), script, inbox, String(port)], {
    env,
    stdout: "ignore",
    stderr: Bun.file(log),
  });
  await waitForPort(port, `aiosmtpd on ${port}`, proc, log);
  return {
    port,
    proc,
    dir,
    messages: () =>
      readdirSync(inbox)
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => JSON.parse(readFileSync(join(inbox, f), "utf8")) as ReceivedMail),
  };
}

export function removeDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

export { sampleReport } from "../../unit/notify/fixtures.ts";

// ---- the HTTP services of the notification URLs, on loopback ----

/** Every secret of the URLs below: none may appear in any log line. */
export const SECRETS = {
  discord: "Disc0rd-W3bhook_T0ken",
  telegramBot: "110201543:AAHdqTcvSecretTelegram",
  slackHook: "XXXXSlackH00kSecret",
  slackBot: "1234-5678-SlackB0tSecret",
  gotify: "AGotifySecret123",
  ntfy: "ntfyPa55Secret",
  pushoverToken: "azGDORePK8gMaC0QOYAMyEEuzJnyUi",
  pushoverUser: "uQiRzpo4DXghDmr9QzzfQu27cmVRsG",
  teams: "TeamsSig9Secret",
  matrix: "MatrixPa55Secret",
  generic: "GenericKey7Secret",
};

export interface Received {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: string;
}

/**
 * A stand-in for each service's API: answers as the service does, and refuses (400) a request
 * missing what the service requires. Records every request.
 */
export function serviceReceiver(tls?: { cert: string; key: string }): {
  server: Server<undefined>;
  received: Received[];
  base: string;
} {
  const received: Received[] = [];
  const json = (body: unknown, status = 200) => Response.json(body, { status });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    ...(tls ? { tls } : {}),
    async fetch(request) {
      const url = new URL(request.url);
      const body = await request.text();
      received.push({
        method: request.method,
        path: url.pathname,
        query: url.searchParams,
        headers: Object.fromEntries(request.headers),
        body,
      });
      const data = (() => {
        try {
          return JSON.parse(body) as Record<string, any>;
        } catch {
          return {} as Record<string, any>;
        }
      })();
      const path = url.pathname;
      if (path.startsWith("/api/webhooks/"))
        return typeof data.content === "string" && data.content.length <= 2000
          ? new Response(null, { status: 204 })
          : json({ message: "Cannot send an empty message" }, 400);
      if (/^\/bot[^/]+\/sendMessage$/.test(path)) {
        if (data.chat_id === "-100404")
          return json({ ok: false, error_code: 400, description: "Bad Request: chat not found" }, 400);
        return data.chat_id && typeof data.text === "string" && data.text.length <= 4096
          ? json({ ok: true, result: { message_id: 1 } })
          : json({ ok: false, description: "Bad Request: message text is empty" }, 400);
      }
      if (path.startsWith("/services/"))
        return typeof data.text === "string" ? new Response("ok") : new Response("no_text", { status: 400 });
      if (path === "/api/chat.postMessage")
        return json(
          request.headers.get("authorization")?.startsWith("Bearer xoxb-") && data.channel
            ? { ok: true }
            : { ok: false, error: "not_authed" },
        );
      if (path.endsWith("/message"))
        return request.headers.get("x-gotify-key") && typeof data.message === "string"
          ? json({ id: 1 })
          : json({ error: "Unauthorized" }, 401);
      // ntfy: a POST to the topic's path, the message as the body, the rest in headers (docs.ntfy.sh/publish)
      if (path.startsWith("/ntfy/"))
        return request.method === "POST" && body.length > 0
          ? json({ id: "x", event: "message", topic: path.slice(1) })
          : json({ error: "invalid request" }, 400);
      if (path === "/1/messages.json") {
        const form = new URLSearchParams(body);
        return form.get("token") && form.get("user") && form.get("message")
          ? json({ status: 1, request: "r" })
          : json({ status: 0, errors: ["token is invalid"] }, 400);
      }
      if (path.startsWith("/workflows/"))
        return data.attachments?.[0]?.contentType === "application/vnd.microsoft.card.adaptive"
          ? new Response(null, { status: 202 })
          : json({ error: "bad card" }, 400);
      if (path === "/_matrix/client/v3/login")
        return data.password
          ? json({ access_token: "syt_matrix_access", user_id: "@bot:lan" })
          : json({ errcode: "M_FORBIDDEN" }, 403);
      if (path.startsWith("/_matrix/client/v3/join/")) return json({ room_id: "!joined:lan" });
      if (path.startsWith("/_matrix/client/v3/rooms/"))
        return request.headers.get("authorization") === "Bearer syt_matrix_access" && data.msgtype === "m.text"
          ? json({ event_id: "$e" })
          : json({ errcode: "M_UNKNOWN_TOKEN" }, 401);
      if (path.startsWith("/generic/")) return new Response("ok");
      // Mattermost and Rocket.Chat incoming webhooks: a JSON text (docs.mattermost.com, docs.rocket.chat)
      if (path.startsWith("/hooks/"))
        return typeof data.text === "string" && data.text !== ""
          ? new Response("ok")
          : json({ message: "Unable to parse incoming data" }, 400);
      // Google Chat: key and token in the query, a JSON text
      if (path.startsWith("/v1/spaces/"))
        return url.searchParams.get("key") && url.searchParams.get("token") && typeof data.text === "string"
          ? json({ name: "spaces/x/messages/y" })
          : json({ error: { code: 400 } }, 400);
      // Pushbullet: the access token in its header, a note with a body
      if (path === "/v2/pushes")
        return request.headers.get("access-token") && data.type === "note" && typeof data.body === "string"
          ? json({ type: "note", iden: "x", active: true })
          : json({ error: { code: "invalid_access_token" } }, 401);
      // signal-cli-rest-api: number and recipients, 201 Created with a timestamp
      if (path === "/v2/send")
        return data.number &&
          Array.isArray(data.recipients) &&
          data.recipients.length > 0 &&
          typeof data.message === "string"
          ? json({ timestamp: "1" }, 201)
          : json({ error: "Couldn't process request - invalid request" }, 400);
      // Bark: device_key and body in the JSON
      if (path.endsWith("/push") && data.device_key === "RefusedDevice")
        return json({ code: 400, message: "failed to push", timestamp: 1 });
      if (path.endsWith("/push"))
        return data.device_key && typeof data.body === "string"
          ? json({ code: 200, message: "success", timestamp: 1 })
          : json({ code: 400, message: "device key is empty" }, 400);
      return new Response("not found", { status: 404 });
    },
  });
  return { server, received, base: `${tls ? "https" : "http"}://127.0.0.1:${server.port}` };
}

/** One URL of each HTTP form, all pointed at the receiver. */
export function urlsFor(port: number) {
  const at = `127.0.0.1:${port}`;
  return {
    discord: `discord://${SECRETS.discord}@123456789012345678?username=svc`,
    telegram: `telegram://${SECRETS.telegramBot}@telegram?chats=@svc_news,12345`,
    slackHook: `slack://hook:T0001-B0002-${SECRETS.slackHook}@webhook?botname=svc`,
    slackBot: `slack://xoxb:${SECRETS.slackBot}@C001CH4NN3L`,
    gotify: `gotify://${at}/gotify/${SECRETS.gotify}?disabletls=yes`,
    ntfy: `ntfy://svc:${SECRETS.ntfy}@${at}/ntfy/svc-alerts?scheme=http&tags=whale`,
    pushover: `pushover://shoutrrr:${SECRETS.pushoverToken}@${SECRETS.pushoverUser}/?devices=phone`,
    teams: `teams+http://${at}/workflows/0a1b2c3d/triggers/manual/paths/invoke?api-version=2016-06-01&sig=${SECRETS.teams}`,
    matrix: `matrix://bot:${SECRETS.matrix}@${at}/?rooms=%23ops:lan&disabletls=yes`,
    generic: `generic://${at}/generic/hook?disabletls=yes&@X-Api-Key=${SECRETS.generic}`,
  };
}
