import { describe, expect, test } from "bun:test";
import {
  defaultConfig,
  loadConfig,
  OPTIONS,
  printConfig,
  REDACTED,
  redactConfig,
  secretValues,
} from "../../../src/config/index.ts";
import { isSvcError } from "../../../src/core/errors.ts";
import { createRedactor } from "../../../src/log/index.ts";
import { load, problems, RUNS, tempDir, writeFile } from "./helpers.ts";

const SECRET_KEYS = [
  "http_api.token",
  "registry_username",
  "registry_password",
  "notifications.email.password",
  "notifications.mqtt.password",
  "notifications.pushover.token",
  "release_notes.github_token",
  "release_notes.gitlab_token",
  "release_notes.gitea_token",
  "notifications.pushover.user_key",
  "compose.git_token",
];

function valueAt(config: unknown, path: string[]): unknown {
  return path.reduce<any>((node, part) => node?.[part], config);
}

describe("secrets", () => {
  test("the schema marks exactly the documented secrets", () => {
    expect(
      OPTIONS.filter((o) => o.meta.secret)
        .map((o) => o.key)
        .sort(),
    ).toEqual([...SECRET_KEYS, "registry_credentials", "peers", "http_api.viewer_tokens"].sort());
  });

  test.each(SECRET_KEYS)("%s: a path to a readable file is replaced by its trimmed contents", async (key) => {
    const dir = tempDir();
    const file = writeFile(dir, "secret", `  s3cret-${key}\n\n`);
    const option = OPTIONS.find((o) => o.key === key)!;
    const companion = key === "notifications.pushover.token" ? ["--notifications-pushover-user-key", "k"] : [];
    const { config } = await load({ argv: [...RUNS, ...companion, option.flag, file] });
    expect(valueAt(config, option.path)).toBe(`s3cret-${key}`);
  });

  test("http_api.viewer_tokens: each entry a token or a path to a file holding one; each masked", async () => {
    const dir = tempDir();
    const file = writeFile(dir, "viewer", "from-a-file\n");
    const { config } = await load({ argv: [...RUNS, "--http-api-viewer-tokens", `${file},literal-viewer`] });
    expect(config.http_api.viewer_tokens).toEqual(["from-a-file", "literal-viewer"]);
    expect(redactConfig(config).http_api.viewer_tokens).toEqual([REDACTED, REDACTED]);
    expect(secretValues(config)).toEqual(expect.arrayContaining(["from-a-file", "literal-viewer"]));
  });

  test("a path relative to the working directory works too; a literal stays literal", async () => {
    const dir = tempDir();
    writeFile(dir, "token.txt", "from-file\n");
    expect((await load({ cwd: dir, argv: [...RUNS, "--http-api-token", "token.txt"] })).config.http_api.token).toBe(
      "from-file",
    );
    expect((await load({ argv: [...RUNS, "--http-api-token", "literal-token"] })).config.http_api.token).toBe(
      "literal-token",
    );
  });

  test("a relative path written in the file is relative to the file's folder, not the working directory", async () => {
    const etc = tempDir();
    const elsewhere = tempDir();
    writeFile(etc, "api_token", "next-to-the-file\n");
    writeFile(elsewhere, "api_token", "in-the-working-directory\n");
    const file = writeFile(etc, "svc.toml", 'run_once = true\n[http_api]\ntoken = "api_token"\n');
    const { config } = await load({ cwd: elsewhere, argv: ["-c", file] });
    expect(config.http_api.token).toBe("next-to-the-file");
  });

  test("so is every file path option written in the file (template, TLS files, logs)", async () => {
    const etc = tempDir();
    writeFile(etc, "report.mustache", "{{summary}}\n");
    const file = writeFile(
      etc,
      "svc.toml",
      'run_once = true\naudit_log = "audit.log"\n[notifications]\ntemplate = "report.mustache"\n',
    );
    const { config } = await load({ cwd: tempDir(), argv: ["-c", file] });
    expect(config.notifications.template).toBe(`${etc}/report.mustache`);
    expect(config.audit_log).toBe(`${etc}/audit.log`);
    const fromFlag = await load({ cwd: tempDir(), argv: [...RUNS, "--audit-log", "flag.log"] });
    expect(fromFlag.config.audit_log).toBe("flag.log");
  });

  test("per-registry username and password from files", async () => {
    const dir = tempDir();
    const user = writeFile(dir, "user", "robot\n");
    const pass = writeFile(dir, "pass", "hunter2\n");
    const { config } = await load({
      argv: RUNS,
      env: { SVC_REGISTRY_CREDENTIALS: `host=ghcr.io,username=${user},password=${pass};host=quay.io` },
    });
    expect(config.registry_credentials).toEqual([
      { host: "ghcr.io", username: "robot", password: "hunter2" },
      { host: "quay.io" },
    ]);
  });

  test("an empty secret file is a problem", async () => {
    const empty = writeFile(tempDir(), "empty", "\n  \n");
    expect(await problems({ argv: [...RUNS, "--http-api-token", empty] })).toEqual([
      `--http-api-token: the secret file ${empty} is empty`,
    ]);
  });

  test("a value shaped like a path that is not a readable regular file is a problem naming the option and the path, for every secret option", async () => {
    const dir = tempDir();
    writeFile(dir, "tokn-is-not-here", "x");
    const cases: [string, string][] = [
      ["/run/secrets/svc-tokn", "no such file"],
      ["./tokn", "no such file"],
      ["../tokn", "no such file"],
      ["~/tokn", "no such file"],
      [dir, "not a regular file"], // what Docker creates for a missing bind-mounted file
    ];
    for (const key of SECRET_KEYS) {
      const option = OPTIONS.find((o) => o.key === key)!;
      const companion = key === "notifications.pushover.token" ? ["--notifications-pushover-user-key", "k"] : [];
      for (const [value, why] of cases) {
        const found = await problems({
          cwd: dir,
          argv: [...RUNS, ...companion, option.flag, value],
          env: { HOME: dir },
        });
        expect(found).toContainEqual(
          `${option.flag}: the secret file ${value} cannot be read (${why}); a value shaped like a path must name the file holding the secret`,
        );
      }
    }
    const credentials = await problems({
      argv: RUNS,
      env: { SVC_REGISTRY_CREDENTIALS: "host=ghcr.io,username=me,password=/run/secrets/ghcr" },
    });
    expect(credentials).toEqual([
      expect.stringMatching(
        /^SVC_REGISTRY_CREDENTIALS entry 1 password: the secret file \/run\/secrets\/ghcr cannot be read \(no such file\)/,
      ),
    ]);
  });

  test("~/ is the home folder; a value not shaped like a path that names no file is the secret", async () => {
    const home = tempDir();
    writeFile(home, "token", "from-home\n");
    expect(
      (await load({ argv: [...RUNS, "--http-api-token", "~/token"], env: { HOME: home } })).config.http_api.token,
    ).toBe("from-home");
    expect((await load({ argv: [...RUNS, "--http-api-token", "tokn/with/slashes"] })).config.http_api.token).toBe(
      "tokn/with/slashes",
    );
  });

  test("secret values never appear in configuration errors", async () => {
    try {
      await load({
        argv: [
          "--http-api-token",
          "tok-SECRET-1",
          "--notifications-mqtt-password",
          "mq-SECRET-2",
          "--registry-credentials",
          "host=a,username=u-SECRET-3,passwd=p-SECRET-4",
          "--bogus",
        ],
        env: { SVC_NOTIFICATIONS_PUSHOVER_USER_KEY: "" },
      });
      throw new Error("accepted");
    } catch (error) {
      if (!isSvcError(error)) throw error;
      const text = [error.message, ...error.details].join("\n");
      expect(text).not.toContain("SECRET");
      expect(error.details.length).toBeGreaterThan(1);
    }
  });
});

describe("redaction", () => {
  const config = defaultConfig({
    http_api: { token: "tok-1" },
    registry_username: "user-2",
    registry_password: "pass-3",
    registry_credentials: [{ host: "ghcr.io", username: "cu-4", password: "cp-5" }, { host: "quay.io" }],
    notifications: {
      email: { password: "ep-6", user: "mailuser" },
      mqtt: { password: "mp-7" },
      pushover: { token: "pt-8", user_key: "pu-9" },
    },
  });

  test("redactConfig replaces every secret and leaves the rest", () => {
    const redacted = redactConfig(config);
    expect(redacted.http_api.token).toBe(REDACTED);
    expect(redacted.registry_username).toBe(REDACTED);
    expect(redacted.registry_password).toBe(REDACTED);
    expect(redacted.registry_credentials).toEqual([
      { host: "ghcr.io", username: REDACTED, password: REDACTED },
      { host: "quay.io" },
    ]);
    expect(redacted.notifications.email).toMatchObject({ password: REDACTED, user: "mailuser" });
    expect(redacted.notifications.mqtt.password).toBe(REDACTED);
    expect(redacted.notifications.pushover).toMatchObject({ token: REDACTED, user_key: REDACTED });
    expect(redacted.notifications.mqtt.username).toBeUndefined();
    expect(config.http_api.token).toBe("tok-1"); // the original is untouched
    const text = JSON.stringify(redacted);
    for (const secret of secretValues(config)) expect(text).not.toContain(secret);
  });

  test("secretValues lists every secret, longest first, and the log room's redactor removes them", () => {
    const secrets = secretValues(config);
    expect(secrets.sort()).toEqual(
      ["cp-5", "cu-4", "ep-6", "mp-7", "pass-3", "pt-8", "pu-9", "tok-1", "user-2"].sort(),
    );
    expect(createRedactor(secretValues(config))("login user-2 with pass-3 at ghcr.io")).toBe(
      `login ${REDACTED} with ${REDACTED} at ghcr.io`,
    );
    expect(secretValues(defaultConfig())).toEqual([]);
  });

  test("--print-config output shows no secret and says where values came from", async () => {
    const result = await load({
      argv: [...RUNS, "--http-api-token", "tok-PRINT"],
      env: { SVC_REGISTRY_CREDENTIALS: "host=ghcr.io,username=u-PRINT,password=p-PRINT" },
      toml: 'log_level = "warn"',
    });
    const text = printConfig(result);
    expect(text).not.toContain("PRINT");
    expect(text).toContain(`token = "${REDACTED}"  # from flag (--http-api-token)`);
    expect(text).toContain('log_level = "warn"  # from file (svc.toml:1)');
    expect(text).toContain('poll_interval = "1h"  # from flag (--poll-interval)');
    expect(text).toContain('stop_timeout = "10s"  # from default');
    expect(text).toContain("# audit_log is unset  # from default");
    // It is TOML, and loading it back gives the same configuration (secrets aside).
    const back = await load({
      toml: text,
      argv: ["--http-api-token", "tok-PRINT"],
      env: { SVC_REGISTRY_CREDENTIALS: "host=ghcr.io,username=u-PRINT,password=p-PRINT" },
    });
    expect(back.config).toEqual(result.config);
  });

  // A token given as git_remote's user name (GitHub takes `https://TOKEN@github.com/...`) is the
  // token itself: refused at start as a password there is, never printed nor logged.
  test.each([
    ["a GitHub token as the user name", "https://ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/me/stacks.git"],
    ["a GitLab token as the user name", "https://glpat-xxxxxxxxxxxxxxxxxxxx1@gitlab.com/me/stacks.git"],
    ["a Gitea/Forgejo token as the user name", `https://${"a1".repeat(20)}@codeberg.org/me/stacks.git`],
    ["a user name and a password", "https://me:s3cret-pass@github.com/me/stacks.git"],
  ])(
    "compose.git_remote holding %s is refused, and neither --print-config nor the refusal shows it",
    async (_, url) => {
      const secret = new URL(url).password || new URL(url).username;
      const refused = (await problems({ argv: [...RUNS, "--compose-git-remote", url] })).join("\n");
      expect(refused).toContain("give the token in compose.git_token");
      expect(refused).not.toContain(secret);
      const result = await loadConfig({
        argv: [...RUNS, "--compose-git-remote", url],
        env: {},
        cwd: tempDir(),
        keepGoing: true,
      });
      const text = printConfig(result);
      expect(text).toContain("git_remote");
      expect(text).not.toContain(secret);
    },
  );

  test("compose.git_remote's user name of another form is masked in --print-config and the logs", async () => {
    const url = "https://svc-bot-7d0c1f@github.com/me/stacks.git";
    const { config } = await load({ argv: [...RUNS, "--compose-git-remote", url] });
    expect(config.compose.git_remote).toBe(url);
    const text = printConfig(await load({ argv: [...RUNS, "--compose-git-remote", url] }));
    expect(text).toContain(`git_remote = "https://${REDACTED}@github.com/me/stacks.git"`);
    expect(text).not.toContain("svc-bot-7d0c1f");
    expect(createRedactor(secretValues(config))(`pushing as svc-bot-7d0c1f to ${url}`)).not.toContain("svc-bot-7d0c1f");
  });
});
