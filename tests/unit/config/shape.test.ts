/**
 * The Config inferred from the schema has exactly the shape the other rooms were promised (the
 * foundation stub, copied here). Checked by the type checker (`bunx tsc --noEmit -p .`); the
 * runtime test below checks the same for the defaults' keys.
 */
import { expect, test } from "bun:test";
import { defaultConfig, type Config } from "../../../src/config/index.ts";

type LogLevel = "trace" | "debug" | "info" | "warn" | "error";
type LogFormat = "auto" | "json" | "logfmt" | "pretty";

interface RegistryCredential {
  host: string;
  username?: string;
  password?: string;
}
interface PromisedConfig {
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
    config?: string;
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
    webhook: { url?: string; headers?: string; template?: string; content_type: string; tls_skip_verify: boolean; /** ms */ timeout: number };
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
      homeassistant_discovery: boolean;
      discovery_prefix: string;
    };
    pushover: { token?: string; user_key?: string; api_url: string };
  };
}

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Required<T> = { [K in keyof T]-?: T[K] extends object ? Required<T[K]> : T[K] };
const sameShape: Equals<Required<Config>, Required<PromisedConfig>> = true;
const assignable: PromisedConfig = defaultConfig();
const back: Config = assignable;

test("the inferred Config keeps the promised shape", () => {
  expect(sameShape).toBe(true);
  expect(Object.keys(back).sort()).toEqual(Object.keys(defaultConfig()).sort());
});
