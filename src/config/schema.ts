/**
 * THE single source of truth for configuration: one declaration whose leaves carry everything
 * else derives from: the meaning (docs, sample, --help), the default as an operator writes it,
 * an example for options unset by default, whether the value is a secret, and the zod schema
 * that validates the value. The TOML key is the path in the declaration; the flag and env name
 * derive from it (`a.b_c` -> `--a-b-c`, `SVC_A_B_C`); the sample table is the parent path.
 *
 * A leaf builds its zod schema the first time it is needed. svc validates only the options a
 * user set (each against its own schema, so a problem names its source), and building all 71
 * schemas took more time at every start than the rest of loading the configuration.
 *
 * builders.ts holds the helpers each leaf is made with; options.ts walks this declaration into
 * the options every other module reads (key, flag, env name, schema, default).
 */
import { isIP } from "node:net";
import { z } from "zod";
import { SERVICES } from "../shoutrrr/index.ts";
import {
  addresses,
  alias,
  bool,
  choice,
  credentials,
  cron,
  DAY,
  digestOptions,
  duration,
  file,
  gitAuthor,
  gitRemote,
  HOUR,
  int,
  type Leaf,
  labelled,
  leaf,
  list,
  nonEmpty,
  notificationUrls,
  optionalDuration,
  optionalUrl,
  parsedText,
  path,
  peers,
  rangeCheck,
  releaseSources,
  ruled,
  servicesBaseUrl,
  size,
  stateDir,
  str,
  type Table,
  table,
  tagPolicy,
  url,
  verifyPolicies,
  wt,
  wtSwitch,
} from "./builders.ts";
import { parseWindows } from "./window.ts";

export const CONFIG = table("General options", {
  log_level: alias(
    choice(["trace", "debug", "info", "warn", "error"], "info", "Log verbosity"),
    wt("WATCHTOWER_LOG_LEVEL", ["--log-level"], (t) =>
      t
        .trim()
        .toLowerCase()
        .replace(/^(panic|fatal)$/, "error"),
    ),
    wtSwitch("WATCHTOWER_DEBUG", ["--debug", "-d"], "debug"),
    wtSwitch("WATCHTOWER_TRACE", ["--trace"], "trace"),
  ),
  log_format: alias(
    choice(
      ["auto", "json", "logfmt", "pretty"],
      "auto",
      "Log output format; auto is pretty on a terminal and json when piped",
    ),
    wt("WATCHTOWER_LOG_FORMAT", ["--log-format", "-l"], (t) => t.trim().toLowerCase()),
  ),
  audit_log: path("Append-only NDJSON audit log of every change made to the engine", "/var/log/svc/audit.log"),
  log_access_to_stdout: bool(false, "Also print access-log events to stdout"),
  log_audit_to_stdout: bool(false, "Also print audit-log events to stdout"),
  poll_interval: ruled(
    alias(
      optionalDuration("Time between update checks", "6h", { min: 1, max: 366 * DAY }),
      wt("WATCHTOWER_POLL_INTERVAL", ["--interval", "-i"]),
    ),
    { exclusiveWith: ["schedule", "run_once"] },
  ),
  schedule: ruled(
    alias(
      cron("Cron update schedule (5 or 6 fields, time zone from TZ)", "0 0 4 * * *"),
      wt("WATCHTOWER_SCHEDULE", ["--schedule", "-s"]),
    ),
    { exclusiveWith: ["poll_interval", "run_once"] },
  ),
  run_once: ruled(
    alias(bool(false, "Run one update cycle and exit (no HTTP API)"), wt("WATCHTOWER_RUN_ONCE", ["--run-once", "-R"])),
    { exclusiveWith: ["poll_interval", "schedule"] },
  ),
  update_on_start: bool(false, "Also run a cycle right after start"),
  state_dir: stateDir(
    "Folder for the decisions that must survive a restart (digests rolled back or skipped, stale digests already announced, when each newer digest was first seen, the images svc rollback and cleanup_delay need, the Home Assistant entities announced), in state.json, created for svc's user only; when it cannot be written, svc says so at start and keeps them in memory",
  ),
  history_size: int(
    100,
    "Session reports kept for the history (GET /v1/history, the dashboard), in history.json under state_dir when set, else in memory (0: none)",
    0,
    10000,
  ),
  peers: peers(
    "Other svc instances the dashboard shows beside this one, each reached through its API with its own token (name, url, token or a path to a file holding it, ca_cert for a private CA)",
  ),
  verify: verifyPolicies(
    "Signatures images must carry before they run (docs/verification.md): images (globs), keys (PEM files or inline PEM) or issuer with identity or identity_regexp (keyless), mode (enforce: held when unverified; warn), transparency_log",
  ),
  trusted_root: path(
    "A Sigstore trusted root (trusted_root.json) for keyless signatures of a private Sigstore, instead of the public one svc ships and refreshes (docs/verification.md)",
    "/etc/svc/trusted_root.json",
  ),
  peer_timeout: duration(
    "2s",
    "How long the dashboard waits for a peer before showing it unreachable with its last known state",
    { min: 1, max: HOUR },
  ),
  dry_run: bool(
    false,
    "Decide everything and change nothing: each cycle reports what it would update (no pull, stop or restart, no notification, no metrics)",
  ),
  registry_username: alias(
    str(
      "Global registry user, or a path to a file holding it; with the password, sent (by svc and by the engine) only to a registry that asks for credentials, and to its token service only when that is on the registry's own site",
      "/run/secrets/registry_username",
      { secret: true },
    ),
    wt("REPO_USER", []),
  ),
  registry_password: alias(
    str("Global registry password, or a path to a file holding it", "/run/secrets/registry_password", { secret: true }),
    wt("REPO_PASS", []),
  ),
  registry_credentials: credentials({
    kind: "credentials",
    fields: ["host", "username", "password"],
    secretFields: ["username", "password"],
    description:
      "Per-registry credentials (host, username, password); an entry without username and password forces anonymous access",
    default: [],
    example: [{ host: "ghcr.io", username: "me", password: "/run/secrets/ghcr_token" }],
    secret: true,
  }),
  insecure_registries: list("Registry hosts (host[:port]) spoken to over plain HTTP besides loopback ones", [
    "registry.lan:5000",
  ]),
  registry_concurrency: int(8, "Registry checks run at the same time", 1, 64),
  registry_timeout: duration("30s", "Timeout of one registry request", { min: 1, max: HOUR }),
  head_warn_strategy: alias(
    choice(
      ["auto", "always", "never"],
      "auto",
      "Logging of a failed manifest HEAD request: auto, always (warn) or never (debug)",
    ),
    wt("WATCHTOWER_WARN_ON_HEAD_FAILURE", ["--warn-on-head-failure"]),
  ),
  label_enable: alias(
    bool(false, "Opt-in mode: update only containers labelled svc.enable=true"),
    wt("WATCHTOWER_LABEL_ENABLE", ["--label-enable"]),
  ),
  scope: alias(
    str("Only containers whose svc.scope label equals this (unset: containers without a scope label)", "production"),
    wt("WATCHTOWER_SCOPE", ["--scope"], (t) => (t.trim() === "none" ? undefined : t)),
  ),
  disable_containers: alias(
    list("Container names always excluded", ["database"]),
    wt("WATCHTOWER_DISABLE_CONTAINERS", ["--disable-containers", "-x"], (t) =>
      t
        .trim()
        .split(/[\s,]+/)
        .join(","),
    ),
  ),
  containers: list("When non-empty, only these containers are updated (also given as arguments)", ["web", "worker"]),
  include_restarting: alias(
    bool(false, "Include containers in the restarting state"),
    wt("WATCHTOWER_INCLUDE_RESTARTING", ["--include-restarting"]),
  ),
  global_takes_precedence: bool(false, "Global settings override per-container svc.* labels"),
  revive_stopped: alias(
    bool(false, "Also start stopped (exited, created) containers when a newer image is found"),
    wt("WATCHTOWER_REVIVE_STOPPED", ["--revive-stopped"]),
  ),
  monitor_only: labelled(
    alias(
      bool(false, "Detect stale images but never restart containers"),
      wt("WATCHTOWER_MONITOR_ONLY", ["--monitor-only"]),
    ),
    "svc.monitor_only",
    { watchtower: "com.centurylinklabs.watchtower.monitor-only" },
  ),
  no_pull: labelled(
    alias(bool(false, "Do not pull; use the locally cached image"), wt("WATCHTOWER_NO_PULL", ["--no-pull"])),
    "svc.no_pull",
    { watchtower: "com.centurylinklabs.watchtower.no-pull" },
  ),
  cleanup: alias(
    bool(false, "Remove the old image after a successful update"),
    wt("WATCHTOWER_CLEANUP", ["--cleanup", "-c"]),
  ),
  cleanup_delay: duration(
    "0s",
    "With cleanup: keep the old image this long after the update that left it (so svc rollback can go back to it), then remove it in a later cycle",
    { max: 366 * DAY },
  ),
  cleanup_keep: int(
    0,
    "With cleanup: keep the images the last this-many updates of each container left, however old (0: cleanup_delay alone decides)",
    0,
    100,
  ),
  stop_timeout: labelled(
    alias(
      duration("10s", "Wait for a graceful stop before a forced kill", { max: HOUR }),
      wt("WATCHTOWER_TIMEOUT", ["--stop-timeout"]),
    ),
    "svc.stop_timeout",
  ),
  lifecycle_hooks: alias(
    bool(
      false,
      "Run the lifecycle hooks containers' labels set (svc.hooks.*, or Watchtower's lifecycle labels); off by default, as in Watchtower, since images bring labels with them",
    ),
    wt("WATCHTOWER_LIFECYCLE_HOOKS", ["--enable-lifecycle-hooks"]),
  ),
  hook_timeout: labelled(
    duration("60s", "Time a lifecycle hook may run before it counts as failed", {
      min: 1,
      max: DAY,
    }),
    "svc.hooks.timeout",
    { only: "shortens" },
  ),
  tag_policy: labelled(
    tagPolicy(
      "Move containers to newer version tags (docs/policies.md): off, semver:patch|minor|major (+pre: pre-releases too), or regex[(natural|lexical|semver)]:<pattern> matching whole tags",
    ),
    "svc.tag_policy",
  ),
  service_update_timeout: duration(
    "10m",
    "Swarm services (docs/swarm.md): wait this long for Swarm's rolling update of a service to complete, roll back or pause; past it the service is reported failed (rolled back when it has no failure action of its own and rollback.on_timeout is set)",
    { min: 1, max: DAY },
  ),
  update_window: labelled(
    parsedText(
      'When updates may be applied (docs/windows.md): "[DAYS ]HH:MM-HH:MM" in the time zone from TZ, several separated by ";" ("Sat,Sun 02:00-05:00; Wed 22:00-23:00"), crossing midnight allowed; outside it a stale target is pending; checking goes on at every cycle, and an update asked for by name applies at once',
      "Sat,Sun 02:00-05:00",
      parseWindows,
    ),
    "svc.update_window",
    { only: "narrows" },
  ),
  pre_pull: bool(
    true,
    "With update_window: pull a newer image as soon as it is found, outside the window, so the window holds only the stop and the start",
  ),
  data_guard: labelled(
    choice(
      ["off", "volumes", "all"],
      "off",
      "Copy a container's data with each update and put it back when the update is rolled back (docs/data-guard.md): off, volumes (the named and anonymous volumes it mounts read-write) or all (bind mounts too)",
    ),
    "svc.data_guard",
  ),
  data_guard_max_size: size(
    "1GiB",
    "With data_guard: the most one container's copy may take (all its guarded mounts together); above it, or when data_guard_dir lacks the room, data_guard_over decides",
  ),
  data_guard_over: choice(
    ["hold", "skip"],
    "hold",
    "With data_guard: a copy over data_guard_max_size or the room left: hold (the update waits, the reason gives the numbers) or skip (update without a copy, said in the report)",
  ),
  data_guard_dir: path(
    "Folder for data_guard's copies (default: data-guard under state_dir); a copy leaves at least 10% of its filesystem (at most 1 GiB) free",
    "/var/lib/svc/data-guard",
  ),
  data_guard_keep: duration(
    "7d",
    "With data_guard: keep a container's copy this long after its new version started (svc rollback NAME --with-data goes back to it), or until its next update",
    { min: 1, max: 366 * DAY },
  ),
  min_image_age: labelled(
    duration(
      "0s",
      "Apply a newer image only once it is this old, counted from the later of when svc first saw the digest and the image's creation time; until then the container is stale, with the time it becomes eligible",
      { max: 366 * DAY },
    ),
    "svc.min_image_age",
  ),

  hold_breaking: labelled(
    bool(
      false,
      "Hold an update whose release notes say it breaks (a new major version, BREAKING in the notes: docs/release-notes.md) until it is asked for by name (the dashboard's Update, POST /v1/update naming it)",
    ),
    "svc.hold_breaking",
  ),

  release_notes: table("Release notes between the running and the newer version (docs/release-notes.md)", {
    enabled: bool(
      true,
      "Read the releases between the running and the newer version of each stale target from its source repository (GitHub, GitLab, Gitea/Forgejo)",
    ),
    github_api_url: url(
      "GitHub API base URL (a GitHub Enterprise server: its /api/v3; its host's repositories are then read there, and github.com's still through api.github.com)",
      ["http", "https"],
      "https://api.github.com",
    ),
    github_token: str(
      "GitHub token (60 requests an hour without one), or a path to a file holding it; sent only to github_api_url's host",
      "/run/secrets/github_token",
      { secret: true },
    ),
    gitlab_api_url: url(
      "GitLab API base URL (a self-hosted GitLab: its /api/v4; its host's repositories are then read there, and gitlab.com's are not)",
      ["http", "https"],
      "https://gitlab.com/api/v4",
    ),
    gitlab_token: str("GitLab token, or a path to a file holding it", "/run/secrets/gitlab_token", { secret: true }),
    gitea_api_url: url(
      "Gitea/Forgejo API base URL (a self-hosted one: its /api/v1; its host's repositories are then read there, and codeberg.org's are not)",
      ["http", "https"],
      "https://codeberg.org/api/v1",
    ),
    gitea_token: str("Gitea/Forgejo token, or a path to a file holding it", "/run/secrets/gitea_token", {
      secret: true,
    }),
    timeout: duration("10s", "Timeout of one request to a source host", { min: 1, max: HOUR }),
    cache_for: duration(
      "5m",
      "A repository's releases read less than this long ago are used without asking its host again (0s: a conditional request every cycle)",
      { max: DAY },
    ),
    max_releases: int(50, "Releases shown per target; the rest are counted", 1, 500),
    sources: releaseSources(
      "Source repositories of images without an org.opencontainers.image.source label (image, source: a repository URL)",
    ),
  }),

  vulnerabilities: table(
    "Known vulnerabilities of the running and the newer image, asked of OSV (docs/vulnerabilities.md)",
    {
      enabled: bool(
        false,
        "Read each stale container's running and newer image's OS packages and ask OSV about both in one request: this sends package names and versions to osv_url",
      ),
      osv_url: url(
        "OSV API base URL (a mirror that answers as api.osv.dev does)",
        ["http", "https"],
        "https://api.osv.dev",
      ),
      timeout: duration("30s", "Timeout of one request to OSV", { min: 1, max: HOUR }),
      hold_if_introduces: choice(
        ["off", "critical", "high", "medium", "low"],
        "off",
        "Hold an update that brings in a known vulnerability of this severity or above, until updated by name (off: never)",
      ),
      min_image_age_unless_fixes: choice(
        ["off", "critical", "high", "medium", "low"],
        "off",
        "Apply an update min_image_age holds at once when it fixes a known vulnerability of this severity or above (off: min_image_age always waits); the newer image is pulled to be read",
      ),
      on_lookup_failure: choice(
        ["ignore", "hold"],
        "ignore",
        "When an image's packages or OSV could not be read: ignore (update, and say so) or hold the update until updated by name",
      ),
    },
  ),

  compose: table("Compose projects: a tag move is written into the project's files (docs/compose.md)", {
    write: labelled(
      bool(
        true,
        "Write a compose container's tag move into its compose file or .env (only the version's characters); a digest update of the same tag never touches a file",
      ),
      "svc.compose.write",
    ),
    git: choice(
      ["off", "commit", "push", "pull_request"],
      "off",
      'When a compose project folder is a Git work tree (docs/compose.md, "Git"): off; commit (a commit of the changed files on the current branch); push (that commit, then pushed to git_remote); pull_request (a branch svc/<service>-<version> pushed to git_remote and a pull/merge request opened or updated on its GitHub, GitLab or Gitea/Forgejo, and nothing applied by svc)',
    ),
    git_remote: gitRemote(
      "The repository pushed to (push, pull_request): its https:// address (http:// only to this machine); its host tells the forge as for release notes (docs/release-notes.md)",
      ["https", "http"],
      "https://github.com/me/stacks.git",
    ),
    git_token: str(
      "Token for git_remote and its forge's API (pushes and pull requests), or a path to a file holding it",
      "/run/secrets/git_token",
      { secret: true },
    ),
    git_author: gitAuthor("Author and committer of svc's commits, as Name <email>", "svc <svc@localhost>"),
    rebuild: bool(
      true,
      'Rebuild a service compose builds (build:) when an image it is built FROM moves, with the compose CLI (docker compose build --pull), else through the Engine API build endpoint (POST /build), then recreate its container as any update (docs/compose.md, "Built services"); false: a moved base is only reported',
    ),
    build_timeout: duration(
      "30m",
      "How long one rebuild may take before it is stopped (a stopped build changes nothing)",
      {
        min: 10_000,
        max: 6 * HOUR,
      },
    ),
    git_safe_directories: list(
      'Work trees svc may commit in though another user owns them, as Git\'s safe.directory: a path, a path ending in /* for those under it, or * (docs/compose.md, "Git")',
      ["/srv/stacks"],
    ),
  }),

  http_api: table("HTTP API options", {
    update: alias(
      bool(
        false,
        "Enable the actions: POST /v1/update, /v1/check, /v1/skip, /v1/snooze, /v1/rollback, and the dashboard's buttons (docs/api.md)",
      ),
      wt("WATCHTOWER_HTTP_API_UPDATE", ["--http-api-update"]),
    ),
    metrics: alias(bool(false, "Enable GET /v1/metrics"), wt("WATCHTOWER_HTTP_API_METRICS", ["--http-api-metrics"])),
    token: alias(
      str("Bearer token for authenticated endpoints, or a path to a file holding it", "/run/secrets/svc_token", {
        secret: true,
      }),
      wt("WATCHTOWER_HTTP_API_TOKEN", ["--http-api-token"]),
    ),
    port: int(8080, "Listening port", 1, 65535),
    public_url: optionalUrl(
      "The page's address as people open it: notifications link each stale, held or failed target to its row there (docs/notifications.md)",
      ["http", "https"],
      "https://svc.example.lan",
    ),
    address: leaf(
      {
        kind: "string",
        description:
          "Listening address: 0.0.0.0 every IPv4 address, :: every address, 127.0.0.1 this machine only (docs/security.md)",
        default: "0.0.0.0",
      },
      () =>
        z
          .string()
          .refine((value) => isIP(value) !== 0, {
            error: 'must be an IP address such as "0.0.0.0", "127.0.0.1" or "::"',
          })
          .default("0.0.0.0"),
    ),
    metrics_no_auth: bool(false, "Serve metrics without a token"),
    access_log: path("Access log file (NDJSON, one entry per request)", "/var/log/svc/access.log"),
    ui: bool(
      false,
      "Serve the dashboard at / (docs/dashboard.md): a page that signs in with the token; read-only unless update is on",
    ),
    viewer_tokens: list(
      "Read-only tokens (docs/dashboard.md, roles): they see everything the API shows and change nothing (403 on every action); each a token or a path to a file holding it",
      ["/run/secrets/svc_viewer_token"],
      { secret: true },
    ),
    trusted_proxy_header: ruled(
      str(
        "Header an identity proxy (Authelia, Authentik, oauth2-proxy) sets to the signed-in user's name; read only on requests from http_api.trusted_proxies (docs/dashboard.md, roles)",
        "Remote-User",
      ),
      { requires: ["http_api.trusted_proxies"] },
    ),
    trusted_proxies: addresses(
      "The addresses of the identity proxy whose trusted_proxy_header is believed; from any other address the header is ignored",
      ["127.0.0.1"],
    ),
    trusted_proxy_role: choice(
      ["viewer", "admin"] as const,
      "viewer",
      "What a user signed in by the trusted proxy may do: viewer (see everything, change nothing) or admin (everything the token may)",
    ),
  }),

  docker: table("Container engine options", {
    host: alias(
      url(
        "Engine socket or TCP address",
        ["unix", "tcp", "http", "https"],
        "unix:///var/run/docker.sock",
        "DOCKER_HOST, else unix:///var/run/docker.sock",
      ),
      wt("DOCKER_HOST", ["--host", "-H"]),
    ),
    tls_verify: ruled(
      alias(bool(false, "Verify TLS certificates for TCP connections"), wt("DOCKER_TLS_VERIFY", ["--tlsverify"])),
      {
        requires: ["docker.tls_ca_cert", "docker.tls_cert", "docker.tls_key"],
      },
    ),
    tls_ca_cert: file("CA certificate", "/etc/svc/tls/ca.pem"),
    tls_cert: file("Client certificate", "/etc/svc/tls/cert.pem"),
    tls_key: file("Client key", "/etc/svc/tls/key.pem"),
    config: path(
      "Folder of the Docker CLI's config.json (registry logins, credential helpers); DOCKER_CONFIG, else ~/.docker",
      "/root/.docker",
    ),
    api_version: alias(
      leaf(
        { kind: "string", description: "Override the negotiated engine API version (major.minor)", example: "1.41" },
        () =>
          nonEmpty()
            .regex(/^\d+\.\d+$/, { error: 'must look like "1.41"' })
            .optional(),
      ),
      wt("DOCKER_API_VERSION", ["--api-version", "-a"]),
    ),
  }),

  rollback: table("Rollback options", {
    on_exit_code: bool(true, "Roll back if the new container exits with a non-zero code"),
    on_healthcheck: bool(true, "Roll back if the new container's healthcheck reports unhealthy"),
    on_timeout: bool(true, "Roll back if the container is not running (healthy) within startup_timeout"),
    startup_timeout: duration("30s", "Wait for the new container to become healthy before rolling back", {
      min: 1,
      max: DAY,
    }),
  }),

  notifications: table("Notification options", {
    delay: alias(
      duration("0s", "Delay between cycle completion and dispatch", { max: DAY }),
      wt("WATCHTOWER_NOTIFICATIONS_DELAY", ["--notifications-delay"]),
    ),
    template: file(
      'Template file (mustache) for the reports of e-mail, Pushover and the chat services among notifications.urls (docs/notifications.md, "Templates")',
      "/etc/svc/report.mustache",
    ),
    notify_on_every_cycle: bool(false, "Notify after every cycle regardless of outcome"),
    urls: alias(
      notificationUrls(
        `Notification URLs in shoutrrr's forms (${Object.keys(SERVICES).join(", ")}: docs/notifications.md), each its own channel; separated by spaces in env and flags`,
        ["discord://token@123456789012345678", "ntfy://ntfy.sh/svc-alerts"],
      ),
      wt("WATCHTOWER_NOTIFICATION_URL", ["--notification-url"]),
    ),
    urls_digest: digestOptions(" to each notification URL").digest,
    urls_immediate_on_failure: digestOptions().immediate_on_failure,
    services_base_url: servicesBaseUrl(),
    hostname: alias(
      str("Host name shown in notification titles and reports (default: the machine's)", "nas"),
      wt("WATCHTOWER_NOTIFICATIONS_HOSTNAME", ["--notifications-hostname"]),
    ),
    title_tag: alias(
      str("Tag shown as [tag] before every notification title and e-mail subject", "prod"),
      wt("WATCHTOWER_NOTIFICATION_TITLE_TAG", ["--notification-title-tag"]),
      wt("WATCHTOWER_NOTIFICATION_EMAIL_SUBJECTTAG", ["--notification-email-subjecttag"]),
    ),
    webhook: table("Webhook channel", {
      url: ruled(
        optionalUrl("Endpoint receiving the report by HTTP POST", ["http", "https"], "https://hooks.example.com/svc"),
        { enables: "webhook" },
      ),
      headers: str("Extra request headers as comma-separated Key: Value pairs", "X-Source: svc, X-Env: prod"),
      template: file(
        "Body template (mustache) instead of the SessionReport JSON; values are JSON-escaped when content_type is JSON (docs/notifications.md)",
        "/etc/svc/ntfy.mustache",
      ),
      content_type: leaf(
        {
          kind: "string",
          description:
            "Content-Type of the body (with template); JSON types (application/json, +json) escape values for JSON",
          default: "application/json",
        },
        () =>
          nonEmpty()
            .regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, { error: 'must be a media type like "application/json"' })
            .default("application/json"),
      ),
      tls_skip_verify: bool(false, "Skip TLS verification"),
      timeout: duration("10s", "Timeout of the webhook request", { min: 1, max: HOUR }),
      ...digestOptions(),
    }),
    email: table("E-mail channel", {
      server: ruled(
        alias(
          str("SMTP host", "smtp.example.com"),
          wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER", ["--notification-email-server"]),
        ),
        {
          enables: "email",
          requires: ["notifications.email.from", "notifications.email.to"],
        },
      ),
      port: alias(
        int(587, "SMTP port", 1, 65535),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_PORT", ["--notification-email-server-port"]),
      ),
      from: alias(
        str("Sender address", "svc@example.com"),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_FROM", ["--notification-email-from"]),
      ),
      to: alias(
        list("Recipient addresses", ["ops@example.com"]),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_TO", ["--notification-email-to"]),
      ),
      user: alias(
        str("SMTP user", "svc"),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_USER", ["--notification-email-server-user"]),
      ),
      password: alias(
        str("SMTP password, or a path to a file holding it", "/run/secrets/smtp_password", { secret: true }),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_PASSWORD", ["--notification-email-server-password"]),
      ),
      tls_skip_verify: alias(
        bool(false, "Skip TLS verification"),
        wt("WATCHTOWER_NOTIFICATION_EMAIL_SERVER_TLS_SKIP_VERIFY", ["--notification-email-server-tls-skip-verify"]),
      ),
      ...digestOptions(),
    }),
    mqtt: table("MQTT channel", {
      broker: ruled(
        optionalUrl(
          "Broker address (tcp:// or mqtt:// plain, mqtts:// or ssl:// TLS)",
          ["tcp", "mqtt", "mqtts", "ssl"],
          "mqtt://broker.lan:1883",
        ),
        {
          enables: "mqtt",
          requires: ["notifications.mqtt.topic"],
        },
      ),
      topic: str("Topic for reports", "svc/reports"),
      qos: leaf(
        { kind: "integer", description: "0 at most once, 1 at least once, 2 exactly once", default: 0, min: 0, max: 2 },
        () =>
          z
            .number()
            .refine(rangeCheck(0, 2), { error: "must be 0, 1 or 2" })
            .transform((n) => n as 0 | 1 | 2)
            .default(0),
      ),
      client_id: str("Client ID (generated when unset)", "svc-host1"),
      username: str("Broker user", "svc"),
      password: str("Broker password, or a path to a file holding it", "/run/secrets/mqtt_password", { secret: true }),
      tls_skip_verify: bool(false, "Skip certificate verification"),
      tls_ca_cert: file("CA certificate (PEM)", "/etc/svc/mqtt/ca.pem"),
      tls_cert: file("Client certificate for mutual TLS (PEM)", "/etc/svc/mqtt/cert.pem"),
      tls_key: file("Client key for mutual TLS (PEM)", "/etc/svc/mqtt/key.pem"),
      homeassistant_discovery: bool(
        false,
        "Also publish Home Assistant MQTT discovery: an update entity per container (docs/notifications.md)",
      ),
      discovery_prefix: leaf(
        { kind: "string", description: "Home Assistant's discovery prefix", default: "homeassistant" },
        () => nonEmpty().default("homeassistant"),
      ),
      homeassistant_install: bool(
        false,
        "Let Home Assistant act: Install on each update entity, Check now and Roll back buttons, through svc's command topics (docs/home-assistant.md)",
      ),
      homeassistant_user: leaf(
        {
          kind: "string",
          description:
            "Home Assistant's broker user: the one level of svc's command topics svc listens to, and the actor in the audit log (docs/home-assistant.md)",
          default: "homeassistant",
        },
        () =>
          nonEmpty()
            .refine((user) => !/[+#/]/.test(user), { error: "must be one topic level: no /, + or #" })
            .default("homeassistant"),
      ),
      ...digestOptions(),
    }),
    pushover: table("Pushover channel", {
      token: ruled(
        str("Application token, or a path to a file holding it", "/run/secrets/pushover_token", { secret: true }),
        {
          enables: "pushover",
          requires: ["notifications.pushover.user_key"],
        },
      ),
      user_key: str("User or group key, or a path to a file holding it", "/run/secrets/pushover_user", {
        secret: true,
      }),
      api_url: url(
        "Pushover API base URL (tests point it at a local server)",
        ["http", "https"],
        "https://api.pushover.net",
      ),
      ...digestOptions(),
    }),
  }),
});

/** The value of a node: a leaf's parsed value, a table's object (options unset by default are optional keys). */
type ValueOf<N> = N extends Leaf<infer S> ? z.output<S> : N extends Table<infer Shape> ? TableValue<Shape> : never;
type OptionalKeys<Shape> = { [K in keyof Shape]: undefined extends ValueOf<Shape[K]> ? K : never }[keyof Shape];
type TableValue<Shape> = Simplify<
  { [K in Exclude<keyof Shape, OptionalKeys<Shape>>]: ValueOf<Shape[K]> } & {
    [K in OptionalKeys<Shape>]?: ValueOf<Shape[K]>;
  }
>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};

export type Config = ValueOf<typeof CONFIG>;
export type LogLevel = Config["log_level"];
export type LogFormat = Config["log_format"];
export type RegistryCredential = Config["registry_credentials"][number];
