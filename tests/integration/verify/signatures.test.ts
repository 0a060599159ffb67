/**
 * Signatures made by cosign 3.1 in the sandbox's registry, verified in-process before an update
 * runs (docs/verification.md): the bundle and the legacy format with a key pair; refused for
 * another key, another digest and another repository; svc's own image checked as any other.
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Config, DeepPartial } from "../../../src/config/index.ts";
import { generateKeyPair, sign } from "../../support/cosign.ts";
import { entryOf, Fixture, inspect, makeUpdater } from "../updater/support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const keys = fx.tempDir("keys");
const publicKey = generateKeyPair(keys);
const others = fx.tempDir("others");
const otherKey = generateKeyPair(others);
const repositoryOf = (ref: string) => ref.slice(0, ref.lastIndexOf(":"));

/** A running container of `what`, and a newer image of its tag in the registry. */
function staleContainer(what: string) {
  const v1 = fx.image(what);
  const app = fx.run(what, v1.ref);
  const v2 = fx.image(what);
  return { app, v1, v2, repository: repositoryOf(v1.ref) };
}

function policy(repository: string, key: string, mode: "enforce" | "warn" = "enforce"): DeepPartial<Config> {
  return { verify: [{ images: [repository], keys: [key], mode, transparency_log: false }] };
}

describe("a policy with a key", () => {
  for (const format of ["bundle", "legacy"] as const) {
    test(`an image signed in the ${format} format is verified and updated`, async () => {
      const { app, v2, repository } = staleContainer(`signed-${format}`);
      sign(keys, repository, v2.digest!, format);
      const h = await makeUpdater({ containers: [app], ...policy(`${repository}*`, publicKey) });
      const entry = entryOf(await h.updater.run("api"), app);
      expect(entry.state).toBe("updated");
      expect(inspect(app).Image).toBe(v2.id);
      expect(entry.signature).toMatchObject({
        status: "verified",
        format: format === "bundle" ? "bundle" : "simple",
        found_in: format === "bundle" ? "referrers tag" : "legacy tag",
        digest: v2.digest,
        policy: "enforce",
        reason: null,
      });
      expect(entry.signature?.signer).toMatch(/^key SHA256:/);
    }, 120_000);
  }

  test("signed with another key: held, the container left on its image", async () => {
    const { app, v1, v2, repository } = staleContainer("other-key");
    sign(others, repository, v2.digest!, "bundle");
    sign(others, repository, v2.digest!, "legacy");
    const h = await makeUpdater({ containers: [app], ...policy(repository, publicKey) });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("held");
    expect(entry.reason).toStartWith("signature not verified: not signed by SHA256:");
    expect(entry.signature).toMatchObject({ status: "held", signer: null, policy: "enforce" });
    expect(inspect(app).Image).toBe(v1.id);
    expect(h.audit.entries.filter((e) => e.action === "pull")).toEqual([]);
    void otherKey;
  }, 120_000);

  test("a signature of another digest: held, no signature found for the new one", async () => {
    const { app, v1, v2, repository } = staleContainer("other-digest");
    // the publisher signed the image before; the tag now names one nobody signed
    sign(keys, repository, v1.digest!, "bundle");
    const h = await makeUpdater({ containers: [app], ...policy(repository, publicKey) });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("held");
    expect(entry.reason).toBe("signature not verified: no signature found");
    expect(entry.new_digest).toBe(v2.digest);
    expect(inspect(app).Image).toBe(v1.id);
  }, 120_000);

  for (const format of ["bundle", "legacy"] as const) {
    test(`an earlier image's ${format} signature replayed for the new digest: held, naming the digest it signs`, async () => {
      const { app, v1, v2, repository } = staleContainer(`replayed-${format}`);
      // cosign's signature of v1, copied to where the signature of v2 is looked for
      sign(keys, repository, v1.digest!, format);
      const where = (digest: string) => `${digest.replace(":", "-")}${format === "legacy" ? ".sig" : ""}`;
      await retag(repository, where(v1.digest!), where(v2.digest!));
      const h = await makeUpdater({ containers: [app], ...policy(repository, publicKey) });
      const entry = entryOf(await h.updater.run("api"), app);
      expect(entry.state).toBe("held");
      expect(entry.reason).toContain(
        `${format === "legacy" ? "the legacy signature" : "the statement"} signs another digest, not ${v2.digest}`,
      );
      expect(inspect(app).Image).toBe(v1.id);
    }, 120_000);
  }

  test("a legacy signature made for another repository: held, naming it", async () => {
    const { app, v1, v2, repository } = staleContainer("other-ref");
    // the same image in another repository, signed there; its signature copied beside this one
    const elsewhere = `${repository}-elsewhere`;
    await copyManifest(repository, elsewhere, v2.digest!);
    sign(keys, elsewhere, v2.digest!, "legacy");
    await copyManifest(elsewhere, repository, `${v2.digest!.replace(":", "-")}.sig`);
    const h = await makeUpdater({ containers: [app], ...policy(repository, publicKey) });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("held");
    expect(entry.reason).toContain("the legacy signature names another repository");
    expect(inspect(app).Image).toBe(v1.id);
  }, 120_000);

  test("mode warn: an unsigned image is updated, shown unverified", async () => {
    const { app, v2, repository } = staleContainer("warn");
    const h = await makeUpdater({ containers: [app], ...policy(repository, publicKey, "warn") });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("updated");
    expect(inspect(app).Image).toBe(v2.id);
    expect(entry.signature).toMatchObject({ status: "unverified", policy: "warn", reason: "no signature found" });
  }, 120_000);
});

describe("svc's own image (a self-update)", () => {
  test("unsigned under an enforcing policy: held, svc's container left on its image, nothing pulled", async () => {
    const { app, v1, repository } = staleContainer("self-unsigned");
    const h = await makeUpdater(
      { containers: [app], ...policy(repository, publicKey) },
      { selfContainerId: inspect(app).Id },
    );
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("held");
    expect(entry.reason).toBe("signature not verified: no signature found");
    expect(entry.signature).toMatchObject({ status: "held", policy: "enforce" });
    expect(inspect(app).Image).toBe(v1.id);
    expect(h.audit.entries.filter((e) => e.action === "pull")).toEqual([]);
  }, 120_000);

  test("signed by the policy's key: verified, the update would go ahead", async () => {
    const { app, v2, repository } = staleContainer("self-signed");
    sign(keys, repository, v2.digest!, "bundle");
    const h = await makeUpdater(
      { containers: [app], ...policy(repository, publicKey) },
      { selfContainerId: inspect(app).Id },
    );
    // a dry run: the handover to a new svc needs svc itself in the container (e2e/self.test.ts)
    const entry = entryOf(await h.updater.run("api", undefined, { dryRun: true }), app);
    expect(entry.state).toBe("stale");
    expect(entry.signature).toMatchObject({ status: "verified", policy: "enforce", reason: null });
  }, 120_000);
});

describe("without a policy", () => {
  test("an unsigned image updates as ever, shown unsigned", async () => {
    const { app, v2 } = staleContainer("unsigned");
    const h = await makeUpdater({ containers: [app] });
    const entry = entryOf(await h.updater.run("api"), app);
    expect(entry.state).toBe("updated");
    expect(inspect(app).Image).toBe(v2.id);
    expect(entry.signature).toEqual({
      status: "unsigned",
      signer: null,
      format: null,
      found_in: null,
      digest: null,
      policy: "pinned",
      reason: null,
    });
  }, 120_000);
});

/** Copies a manifest (and its blobs) from one repository of the sandbox's registry to another. */
async function copyManifest(from: string, to: string, reference: string): Promise<void> {
  const [host, fromName] = split(from);
  const [, toName] = split(to);
  const accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";
  const got = await fetch(`http://${host}/v2/${fromName}/manifests/${reference}`, { headers: { Accept: accept } });
  if (!got.ok) throw new Error(`GET ${reference}: ${got.status}`);
  const type = got.headers.get("content-type")!;
  const body = new Uint8Array(await got.arrayBuffer());
  const manifest = JSON.parse(new TextDecoder().decode(body));
  for (const blob of [manifest.config, ...(manifest.layers ?? [])]) {
    const bytes = await (await fetch(`http://${host}/v2/${fromName}/blobs/${blob.digest}`)).arrayBuffer();
    const start = await fetch(`http://${host}/v2/${toName}/blobs/uploads/`, { method: "POST" });
    const location = new URL(start.headers.get("location")!, `http://${host}`);
    location.searchParams.set("digest", blob.digest);
    const put = await fetch(location, { method: "PUT", body: bytes });
    if (!put.ok) throw new Error(`PUT blob: ${put.status}`);
  }
  const put = await fetch(`http://${host}/v2/${toName}/manifests/${reference}`, {
    method: "PUT",
    headers: { "Content-Type": type },
    body,
  });
  if (!put.ok) throw new Error(`PUT manifest: ${put.status} ${await put.text()}`);
}

/** The manifest `from` names in a repository of the sandbox's registry, put under the tag `to` as well. */
async function retag(repository: string, from: string, to: string): Promise<void> {
  const [host, name] = split(repository);
  const accept = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
  ].join(", ");
  const got = await fetch(`http://${host}/v2/${name}/manifests/${from}`, { headers: { Accept: accept } });
  if (!got.ok) throw new Error(`GET ${from}: ${got.status}`);
  const put = await fetch(`http://${host}/v2/${name}/manifests/${to}`, {
    method: "PUT",
    headers: { "Content-Type": got.headers.get("content-type")! },
    body: new Uint8Array(await got.arrayBuffer()),
  });
  if (!put.ok) throw new Error(`PUT ${to}: ${put.status} ${await put.text()}`);
}

function split(repository: string): [string, string] {
  const slash = repository.indexOf("/");
  return [repository.slice(0, slash), repository.slice(slash + 1)];
}
