/** Notification URLs as an operator meets them on the command line: print-config, a bad URL, Watchtower's variable. */
import { expect, test } from "bun:test";
import { runSvc, userEnv } from "../e2e/support.ts";

const TOKEN = "Disc0rd-Secret_T0ken";

test("--print-config masks only the URL's secret; a URL that cannot be used is exit 2 naming the part, never the secret", async () => {
  const encoded = "generic+https://hooks.lan/x?@Authorization=Bearer%20tkSecretNoDigits";
  const env = userEnv({
    WATCHTOWER_NOTIFICATION_URL: `discord://${TOKEN}@123456789012345678 ntfy://ntfy.sh/svc ${encoded}`,
    SVC_LOG_FORMAT: "pretty",
    NO_COLOR: "1",
  });
  const printed = await runSvc(["--print-config", "--run-once"], { env });
  expect(printed.code).toBe(0);
  expect(printed.stdout).toContain(
    'urls = ["discord://[redacted]@123456789012345678", "ntfy://ntfy.sh/svc", "generic+https://hooks.lan/x?@Authorization=[redacted]"]  # from env (WATCHTOWER_NOTIFICATION_URL)',
  );
  expect(printed.stdout + printed.stderr).not.toContain(TOKEN);
  expect(printed.stdout + printed.stderr).not.toContain("tkSecretNoDigits");

  const bad = await runSvc(["--run-once"], {
    env: userEnv({ SVC_NOTIFICATIONS_URLS: `discord://${TOKEN}@hook/other`, NO_COLOR: "1" }),
  });
  expect(bad.code).toBe(2);
  expect(bad.stderr + bad.stdout).toContain("SVC_NOTIFICATIONS_URLS: entry 1: discord://: the path may only be /raw");
  expect(bad.stdout + bad.stderr).not.toContain(TOKEN);
}, 60_000);
