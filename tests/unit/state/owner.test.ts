/** Which process uses a state file: the service's claim, and the lease of whoever acts on the containers. */
import { expect, test } from "bun:test";
import { existsSync, readFileSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  claimState,
  isOwnerChallenge,
  liveOwner,
  newOwnerNonce,
  ownerProof,
  tryLease,
} from "../../../src/state/owner.ts";
import { tempDir } from "../../temp.ts";

const UNUSED_PID = 4_194_303;

test("one lease at a time: the second process is told who holds it; released, it is free again", () => {
  const file = join(tempDir("owner"), "svc", "state.json");
  const first = tryLease(file, "svc rollback");
  expect("release" in first).toBe(true);
  // another process's lease, as it would be written: this one is then refused
  if ("release" in first) first.release();
  writeFileSync(`${file}.busy`, JSON.stringify({ pid: process.ppid, host: hostname(), what: "a cycle of svc" }));
  expect(tryLease(file, "svc rollback")).toEqual({
    holder: { pid: process.ppid, host: hostname(), what: "a cycle of svc" },
  });
  // a lease its holder stopped touching is taken over, whoever it names
  writeFileSync(`${file}.busy`, JSON.stringify({ pid: process.ppid, host: "another-host", what: "a cycle of svc" }));
  expect("holder" in tryLease(file, "svc rollback")).toBe(true);
  utimesSync(`${file}.busy`, new Date(Date.now() - 600_000), new Date(Date.now() - 600_000));
  const stale = tryLease(file, "svc rollback");
  expect("release" in stale).toBe(true);
  if ("release" in stale) stale.release();
  // a lease of a process that is gone is taken over
  writeFileSync(`${file}.busy`, JSON.stringify({ pid: UNUSED_PID, host: hostname(), what: "a cycle of svc" }));
  const taken = tryLease(file, "svc rollback");
  expect("release" in taken).toBe(true);
  if ("release" in taken) taken.release();
  expect(existsSync(`${file}.busy`)).toBe(false);
});

test("the service's claim names its API's address and port, and is no one's once the service is gone", () => {
  const file = join(tempDir("owner"), "state.json");
  const release = claimState(file, { address: "::1", port: 8080 });
  expect(JSON.parse(readFileSync(`${file}.owner`, "utf8"))).toMatchObject({ api_address: "::1", api_port: 8080 });
  // this very process is not a live owner for itself (a restart in the same container)
  expect(liveOwner(file)).toBeUndefined();
  writeFileSync(
    `${file}.owner`,
    JSON.stringify({ pid: process.ppid, host: hostname(), api_port: 8080, started_at: "now" }),
  );
  expect(liveOwner(file)).toMatchObject({ pid: process.ppid, api_port: 8080 });
  writeFileSync(
    `${file}.owner`,
    JSON.stringify({ pid: UNUSED_PID, host: hostname(), api_port: 8080, started_at: "now" }),
  );
  expect(liveOwner(file)).toBeUndefined();
  release(); // not ours any more: left alone
  expect(existsSync(`${file}.owner`)).toBe(true);
});

test("the claim holds the service's nonce, in a file only its user reads; a proof answers one challenge and gives the nonce away to no one", () => {
  const file = join(tempDir("owner"), "state.json");
  const nonce = newOwnerNonce();
  claimState(file, { address: "127.0.0.1", port: 8080 }, nonce);
  expect(JSON.parse(readFileSync(`${file}.owner`, "utf8")).nonce).toBe(nonce);
  expect(statSync(`${file}.owner`).mode & 0o077).toBe(0);
  const challenge = newOwnerNonce();
  expect(isOwnerChallenge(challenge)).toBe(true);
  expect(ownerProof(nonce, challenge)).toBe(ownerProof(nonce, challenge));
  expect(ownerProof(nonce, challenge)).not.toBe(ownerProof(nonce, newOwnerNonce()));
  expect(ownerProof(nonce, challenge)).not.toBe(ownerProof(newOwnerNonce(), challenge));
  expect(ownerProof(nonce, challenge)).not.toContain(nonce);
  for (const bad of [null, "", "A".repeat(64), "a".repeat(63), `${"a".repeat(64)}\n`])
    expect(isOwnerChallenge(bad)).toBe(false);
});
