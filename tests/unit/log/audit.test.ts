import { describe, expect, test } from "bun:test";
import { auditLine } from "../../../src/log/audit.ts";
import { createRedactor } from "../../../src/log/index.ts";
import { testLogging } from "./helpers.ts";

const none = createRedactor([]);
const at = new Date("2026-05-06T07:08:09.010Z");

describe("audit entry shape (docs/api.md)", () => {
  test("{timestamp, level, target: svc::audit, fields: {action, container, container_id, image, trigger, session_id}}", () => {
    const line = auditLine(
      {
        action: "create",
        container: "app",
        container_id: "abc123",
        image: "nginx:1.27",
        trigger: "schedule",
        session_id: "s-1",
      },
      none,
      at,
    );
    expect(line).not.toContain("\n");
    const entry = JSON.parse(line);
    expect(entry).toEqual({
      timestamp: "2026-05-06T07:08:09.010Z",
      level: "info",
      target: "svc::audit",
      fields: {
        action: "create",
        container: "app",
        container_id: "abc123",
        image: "nginx:1.27",
        trigger: "schedule",
        session_id: "s-1",
      },
    });
    expect(Object.keys(entry.fields)).toEqual([
      "action",
      "container",
      "container_id",
      "image",
      "trigger",
      "session_id",
    ]);
  });

  test("a failed action carries error and level error", () => {
    const entry = JSON.parse(
      auditLine(
        { action: "pull", image: "nginx:1.27", trigger: "api", session_id: "s-2", error: "manifest unknown" },
        none,
        at,
      ),
    );
    expect(entry.level).toBe("error");
    expect(entry.fields).toEqual({
      action: "pull",
      container: null,
      container_id: null,
      image: "nginx:1.27",
      trigger: "api",
      session_id: "s-2",
      error: "manifest unknown",
    });
  });

  test("unknown keys are null, never missing: the shape is the same for every entry", () => {
    const entry = JSON.parse(auditLine({ action: "image_remove", trigger: "startup" }, none, at));
    expect(entry.fields).toEqual({
      action: "image_remove",
      container: null,
      container_id: null,
      image: null,
      trigger: "startup",
      session_id: null,
    });
  });

  test("a compose or unit file change keeps its file and change (compose_write, unit_revert)", () => {
    for (const action of ["compose_write", "compose_revert", "unit_write", "unit_revert"] as const) {
      const entry = JSON.parse(
        auditLine(
          {
            action,
            container: "app",
            file: "/srv/app/compose.yaml,/srv/app/.env",
            change: ".env line 3 (APP_TAG): 2.3.1 -> 2.4.0",
            trigger: "schedule",
            session_id: "s-3",
          },
          none,
          at,
        ),
      );
      expect(entry.fields.file).toBe("/srv/app/compose.yaml,/srv/app/.env");
      expect(entry.fields.change).toBe(".env line 3 (APP_TAG): 2.3.1 -> 2.4.0");
    }
  });

  test("secrets in an error are redacted", () => {
    const entry = JSON.parse(
      auditLine({ action: "pull", trigger: "api", error: "401 for user:hunter22" }, createRedactor(["hunter22"]), at),
    );
    expect(entry.fields.error).toBe("401 for user:[redacted]");
  });
});

describe("log_audit_to_stdout", () => {
  test("entries go to stdout (with a message, as every JSON log line has one)", async () => {
    const logging = testLogging({ log_format: "json", log_level: "error", log_audit_to_stdout: true });
    logging.audit.record({
      action: "stop",
      container: "app",
      container_id: "c1",
      image: "app:1",
      trigger: "schedule",
      session_id: "s",
    });
    logging.audit.record({ action: "start", container: "app", trigger: "schedule", error: "port taken" });
    await logging.close();
    // log_level does not hide what the operator asked for explicitly; errors stay on stdout with the rest.
    const [stop, start] = logging.stdout.json;
    expect(stop).toMatchObject({
      level: "info",
      target: "svc::audit",
      message: "stop app",
      fields: { action: "stop", container: "app", container_id: "c1" },
    });
    expect(Object.keys(stop)).toEqual(["timestamp", "level", "target", "message", "fields"]);
    expect(start).toMatchObject({ level: "error", message: "start app failed", fields: { error: "port taken" } });
    expect(logging.stderr.lines).toEqual([]);
  });

  test("off by default: nothing on stdout", async () => {
    const logging = testLogging({ log_format: "json" });
    logging.audit.record({ action: "stop", container: "app", trigger: "schedule" });
    await logging.close();
    expect(logging.stdout.lines).toEqual([]);
  });

  test("in logfmt the stdout copy is a logfmt line", async () => {
    const logging = testLogging({ log_format: "logfmt", log_audit_to_stdout: true });
    logging.audit.record({ action: "rename", container: "app", trigger: "api" });
    await logging.close();
    expect(logging.stdout.text).toContain('target=svc::audit message="rename app" action=rename container=app');
  });
});
