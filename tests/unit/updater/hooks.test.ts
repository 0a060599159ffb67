import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { hookFor } from "../../../src/updater/containers/hooks.ts";

const labels = (timeout?: string) => ({
  "svc.hooks.pre_update": "backup",
  ...(timeout === undefined ? {} : { "svc.hooks.timeout": timeout }),
});

test("hooks are off by default: a label runs nothing until lifecycle_hooks is on", () => {
  expect(defaultConfig().lifecycle_hooks).toBe(false);
  expect(hookFor(labels(), "pre_update", defaultConfig())).toBeUndefined();
  expect(hookFor(labels(), "pre_update", defaultConfig({ lifecycle_hooks: true }))).toEqual({
    name: "pre_update",
    command: "backup",
    timeoutMs: 60_000,
  });
});

test("svc.hooks.timeout shortens hook_timeout, never lengthens it", () => {
  const on = defaultConfig({ lifecycle_hooks: true, hook_timeout: 120_000 });
  expect(hookFor(labels("5s"), "pre_update", on)?.timeoutMs).toBe(5_000);
  expect(hookFor(labels("1d"), "pre_update", on)?.timeoutMs).toBe(120_000);
  expect(hookFor(labels("soon"), "pre_update", on)?.timeoutMs).toBe(120_000);
});
