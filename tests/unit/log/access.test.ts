import { describe, expect, test } from "bun:test";
import { accessLine } from "../../../src/log/access.ts";
import { type AccessFields, createRedactor, redactAuthorization } from "../../../src/log/index.ts";
import { testLogging } from "./helpers.ts";

const DOCUMENTED_FIELDS = [
  "remote_addr",
  "host",
  "uri",
  "path",
  "method",
  "protocol",
  "scheme",
  "user_agent",
  "authorization",
  "status",
  "duration_ms",
];

const request = (over: Partial<AccessFields> = {}): AccessFields => ({
  remote_addr: "127.0.0.1:51234",
  host: "localhost:8080",
  uri: "/v1/update?container=app",
  path: "/v1/update",
  method: "POST",
  protocol: "HTTP/1.1",
  scheme: "http",
  user_agent: "curl/8.5.0",
  authorization: "Bearer [redacted]",
  status: 200,
  duration_ms: 12,
  ...over,
});

describe("redactAuthorization", () => {
  test("no header gives an empty string", () => {
    expect(redactAuthorization(null)).toBe("");
    expect(redactAuthorization(undefined)).toBe("");
    expect(redactAuthorization("")).toBe("");
    expect(redactAuthorization("   ")).toBe("");
  });

  test("keeps the type, never the credential", () => {
    expect(redactAuthorization("Bearer abc.def.ghi")).toBe("Bearer [redacted]");
    expect(redactAuthorization("bearer   tok")).toBe("bearer [redacted]");
    expect(redactAuthorization("Basic dXNlcjpwYXNz")).toBe("Basic [redacted]");
  });

  test("a header without a type (a bare credential) is masked whole", () => {
    expect(redactAuthorization("mysecrettoken")).toBe("[redacted]");
    expect(redactAuthorization("Bearer")).toBe("[redacted]");
    expect(redactAuthorization('a"b c')).toBe("[redacted]");
    expect(redactAuthorization(`${"x".repeat(40)} y`)).toBe("[redacted]");
  });

  test("a first word that is no authentication scheme is never shown: it may be the credential", () => {
    expect(redactAuthorization("ghp_16C7e42F292c6912E7710c838347Ae178B4a x")).toBe("[redacted]");
    expect(redactAuthorization("s3cret-token-value Bearer")).toBe("[redacted]");
    expect(redactAuthorization("Token abc")).toBe("Token [redacted]");
    expect(redactAuthorization('Digest username="a", response="b"')).toBe("Digest [redacted]");
  });
});

describe("access entry shape (docs/api.md)", () => {
  test("{timestamp, level, target: svc::access, fields} with exactly the documented fields", () => {
    const entry = JSON.parse(accessLine(request(), createRedactor([]), new Date("2026-01-01T00:00:00.000Z")));
    expect(Object.keys(entry)).toEqual(["timestamp", "level", "target", "fields"]);
    expect(entry).toMatchObject({ timestamp: "2026-01-01T00:00:00.000Z", level: "info", target: "svc::access" });
    expect(Object.keys(entry.fields)).toEqual(DOCUMENTED_FIELDS);
    expect(entry.fields).toEqual(request());
  });

  test("extra properties are not written; status and duration are integers", () => {
    const withExtra = { ...request({ duration_ms: 12.7, status: 404 }), cookie: "session=1" } as AccessFields;
    const entry = JSON.parse(accessLine(withExtra, createRedactor([]), new Date()));
    expect(Object.keys(entry.fields)).toEqual(DOCUMENTED_FIELDS);
    expect(entry.fields.duration_ms).toBe(13);
    expect(entry.fields.status).toBe(404);
  });

  test("a secret in the URI or user agent is redacted", () => {
    const entry = JSON.parse(
      accessLine(
        request({ uri: "/v1/update?token=tok-999", user_agent: "x tok-999" }),
        createRedactor(["tok-999"]),
        new Date(),
      ),
    );
    expect(entry.fields.uri).toBe("/v1/update?token=[redacted]");
    expect(entry.fields.user_agent).toBe("x [redacted]");
  });
});

describe("log_access_to_stdout", () => {
  test("works without access_log: the entry goes to stdout with a message", async () => {
    const logging = testLogging({ log_format: "json", log_access_to_stdout: true, log_level: "error" });
    expect(logging.access.enabled).toBe(true);
    logging.access.write(request({ status: 409 }));
    await logging.close();
    const [line] = logging.stdout.json;
    expect(line).toMatchObject({ level: "info", target: "svc::access", message: "POST /v1/update?container=app 409" });
    expect(line.fields).toEqual(request({ status: 409 }));
  });

  test("write() returns before anything is written (never blocks a response)", async () => {
    const logging = testLogging({ log_format: "json", log_access_to_stdout: true });
    logging.access.write(request());
    expect(logging.stdout.lines).toEqual([]);
    await logging.flush();
    expect(logging.stdout.lines).toHaveLength(1);
    await logging.close();
  });

  test("without access_log and log_access_to_stdout the sink is disabled and writes nothing", async () => {
    const logging = testLogging({ log_format: "json" });
    expect(logging.access.enabled).toBe(false);
    logging.access.write(request());
    await logging.close();
    expect(logging.stdout.lines).toEqual([]);
  });
});
