/**
 * TEMPORARY STUB: the contract every room codes against. The config room replaces this file
 * with the zod-schema-derived implementation and keeps these exports and this exact shape:
 * keys as in TOML (snake_case, nested by table), durations resolved to milliseconds,
 * secrets resolved from files, arrays never undefined.
 */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
export type LogFormat = "auto" | "json" | "logfmt" | "pretty";

export interface RegistryCredential {
  host: string;
  username?: string;
  password?: string;
}

export interface Config {
  log_level: LogLevel;
  log_format: LogFormat;
  audit_log?: string;
  log_access_to_stdout: boolean;
  log_audit_to_stdout: boolean;
  /** milliseconds */
  poll_interval?: number;
  schedule?: string;
  run_once: boolean;
  update_on_start: boolean;
  registry_username?: string;
  registry_password?: string;
  registry_credentials: RegistryCredential[];
  /** hosts (host[:port]) spoken to over plain HTTP besides loopback ones */
  insecure_registries: string[];
  /** concurrent registry checks */
  registry_concurrency: number;
  /** milliseconds, per registry request */
  registry_timeout: number;
  head_warn_strategy: "auto" | "always" | "never";
  label_enable: boolean;
  /** only containers whose `svc.scope` label equals this; unset = containers without a scope label */
  scope?: string;
  disable_containers: string[];
  containers: string[];
  include_restarting: boolean;
  global_takes_precedence: boolean;
  revive_stopped: boolean;
  monitor_only: boolean;
  no_pull: boolean;
  cleanup: boolean;
  /** milliseconds */
  stop_timeout: number;
  http_api: {
    update: boolean;
    metrics: boolean;
    token?: string;
    port: number;
    metrics_no_auth: boolean;
    access_log?: string;
  };
  docker: {
    host: string;
    tls_verify: boolean;
    tls_ca_cert?: string;
    tls_cert?: string;
    tls_key?: string;
    api_version?: string;
  };
  rollback: {
    on_exit_code: boolean;
    on_healthcheck: boolean;
    on_timeout: boolean;
    /** milliseconds */
    startup_timeout: number;
  };
  notifications: {
    /** milliseconds */
    delay: number;
    template?: string;
    notify_on_every_cycle: boolean;
    webhook: { url?: string; headers?: string; tls_skip_verify: boolean; /** ms */ timeout: number };
    email: {
      server?: string;
      port: number;
      from?: string;
      to: string[];
      user?: string;
      password?: string;
      tls_skip_verify: boolean;
    };
    mqtt: {
      broker?: string;
      topic?: string;
      qos: 0 | 1 | 2;
      client_id?: string;
      username?: string;
      password?: string;
      tls_skip_verify: boolean;
      tls_ca_cert?: string;
      tls_cert?: string;
      tls_key?: string;
    };
    pushover: { token?: string; user_key?: string; api_url: string };
  };
}

/** Built-in defaults; `overrides` is deep-merged (tests use it to build configs). */
export function defaultConfig(overrides: DeepPartial<Config> = {}): Config {
  const base: Config = {
    log_level: "info",
    log_format: "auto",
    log_access_to_stdout: false,
    log_audit_to_stdout: false,
    run_once: false,
    update_on_start: false,
    registry_credentials: [],
    insecure_registries: [],
    registry_concurrency: 8,
    registry_timeout: 30_000,
    head_warn_strategy: "auto",
    label_enable: false,
    disable_containers: [],
    containers: [],
    include_restarting: false,
    global_takes_precedence: false,
    revive_stopped: false,
    monitor_only: false,
    no_pull: false,
    cleanup: false,
    stop_timeout: 10_000,
    http_api: { update: false, metrics: false, port: 8080, metrics_no_auth: false },
    docker: { host: "unix:///var/run/docker.sock", tls_verify: false },
    rollback: { on_exit_code: true, on_healthcheck: true, on_timeout: true, startup_timeout: 30_000 },
    notifications: {
      delay: 0,
      notify_on_every_cycle: false,
      webhook: { tls_skip_verify: false, timeout: 10_000 },
      email: { port: 587, to: [], tls_skip_verify: false },
      mqtt: { qos: 0, tls_skip_verify: false },
      pushover: { api_url: "https://api.pushover.net" },
    },
  };
  return deepMerge(base, overrides);
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends (infer U)[] ? U[] : T[K] extends object ? DeepPartial<T[K]> : T[K] };

function deepMerge<T>(base: T, overrides: unknown): T {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) return (overrides ?? base) as T;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    const current = out[key];
    out[key] = typeof current === "object" && current !== null && !Array.isArray(current) ? deepMerge(current, value) : value;
  }
  return out as T;
}
