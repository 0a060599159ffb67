/**
 * A built service follows its bases: recorded on first sight, stale once one moves, never for a
 * base pinned by digest; one digest request per distinct base, shared by every container that
 * names it.
 */
import { describe, expect, test } from "bun:test";
import type { Engine } from "../../../src/engine/port.ts";
import type { ImageRef, RegistryCheckSession } from "../../../src/registry/port.ts";
import { inMemory } from "../../../src/state/index.ts";
import { checkBases, readBaseline } from "../../../src/updater/check/bases.ts";
import { createChecker } from "../../../src/updater/check/check.ts";
import { previousTag } from "../../../src/updater/containers/rebuild.ts";

const A = `sha256:${"a".repeat(64)}`;
const B = `sha256:${"b".repeat(64)}`;
const C = `sha256:${"c".repeat(64)}`;

/** A registry whose tags name the digests of `now`; counts the digest requests, as the real session shares them per reference. */
function registry(now: Record<string, string>) {
  const asked: string[] = [];
  const answers = new Map<string, Promise<string>>();
  const session = {
    digest: (ref: ImageRef) => {
      if (ref.digest) return Promise.resolve(ref.digest);
      let answer = answers.get(ref.normalized);
      if (!answer) {
        asked.push(ref.original);
        const digest = now[ref.original];
        answer = digest ? Promise.resolve(digest) : Promise.reject(new Error(`${ref.original}: manifest unknown`));
        answers.set(ref.normalized, answer);
      }
      return answer;
    },
  } as unknown as RegistryCheckSession;
  return { session, asked, now };
}

const bases = (...references: string[]) => references.map((reference) => ({ reference, platform: null }));

describe("checkBases", () => {
  test("first sight records each base's digest and finds nothing moved", async () => {
    const memory = inMemory();
    const r = registry({ "busybox:1.36": A, "alpine:3.20": B });
    const found = await checkBases(r.session, memory, "web", bases("busybox:1.36", "alpine:3.20"));
    expect(found.moved).toEqual([]);
    expect(found.recorded).toEqual(["busybox:1.36", "alpine:3.20"]);
    expect([...readBaseline(memory, "web")]).toEqual([
      ["busybox:1.36", A],
      ["alpine:3.20", B],
    ]);
  });

  test("a moved base is named with both digests; the baseline stays until a rebuild", async () => {
    const memory = inMemory();
    await checkBases(registry({ "busybox:1.36": A }).session, memory, "web", bases("busybox:1.36"));
    const found = await checkBases(registry({ "busybox:1.36": C }).session, memory, "web", bases("busybox:1.36"));
    expect(found.moved.map((b) => [b.reference, b.built, b.now])).toEqual([["busybox:1.36", A, C]]);
    expect(readBaseline(memory, "web").get("busybox:1.36")).toBe(A);
  });

  test("a container on another image than the one recorded was rebuilt by hand: its bases are recorded anew", async () => {
    const memory = inMemory();
    const check = (digest: string, image: string) =>
      checkBases(registry({ "busybox:1.36": digest }).session, memory, "web", bases("busybox:1.36"), undefined, image);
    await check(A, "sha256:old");
    expect((await check(C, "sha256:old")).moved.map((b) => b.reference)).toEqual(["busybox:1.36"]);
    // `docker compose build --pull` and `up -d` by its user: the image it runs is built from C
    const found = await check(C, "sha256:new");
    expect(found.moved).toEqual([]);
    expect(found.recorded).toEqual(["busybox:1.36"]);
    expect(readBaseline(memory, "web").get("busybox:1.36")).toBe(C);
  });

  test("a base pinned by digest is never asked and never moves", async () => {
    const memory = inMemory();
    const r = registry({ "busybox:1.36": C });
    const found = await checkBases(r.session, memory, "web", bases(`busybox:1.36@${A}`));
    expect(r.asked).toEqual([]);
    expect(found.moved).toEqual([]);
    expect(found.bases[0]).toMatchObject({ pinned: true, built: A, now: A });
  });

  test("a base the Dockerfile no longer names is forgotten; a new one recorded", async () => {
    const memory = inMemory();
    await checkBases(registry({ "busybox:1.36": A }).session, memory, "web", bases("busybox:1.36"));
    await checkBases(registry({ "alpine:3.20": B }).session, memory, "web", bases("alpine:3.20"));
    expect([...readBaseline(memory, "web").keys()]).toEqual(["alpine:3.20"]);
  });

  test("a registry error is thrown with the base named", async () => {
    expect(checkBases(registry({}).session, inMemory(), "web", bases("gone:1"))).rejects.toThrow("base gone:1");
  });
});

describe("the check of a built container", () => {
  const checker = (session: RegistryCheckSession, memory = inMemory(), rolledBack = inMemory()) =>
    createChecker({ engine: {} as Engine, session, images: [], rolledBack, buildBases: memory });
  const input = (name: string, refs: string[], heldBecause: string | null = null) => ({
    name,
    image: "p-web",
    imageId: `sha256:${"9".repeat(64)}`,
    noPull: false,
    built: { bases: bases(...refs), problem: null, heldBecause },
  });

  test("fresh at first sight, stale once a base moves, naming it", async () => {
    const memory = inMemory();
    const first = await checker(registry({ "busybox:1.36": A }).session, memory).check(input("web", ["busybox:1.36"]));
    expect(first.state).toBe("fresh");
    const later = await checker(registry({ "busybox:1.36": B }).session, memory).check(input("web", ["busybox:1.36"]));
    expect(later).toMatchObject({ state: "stale", oldDigest: A, newDigest: B });
    expect(later.bases?.moved.map((b) => b.reference)).toEqual(["busybox:1.36"]);
  });

  test("held with the reason when svc does not rebuild it", async () => {
    const memory = inMemory();
    await checker(registry({ "busybox:1.36": A }).session, memory).check(input("web", ["busybox:1.36"]));
    const later = await checker(registry({ "busybox:1.36": B }).session, memory).check(
      input("web", ["busybox:1.36"], "no compose CLI here"),
    );
    expect(later.held).toBe(true);
    expect(later.reason).toBe(
      "base busybox:1.36 moved sha256:aaaaaaaaaaaa -> sha256:bbbbbbbbbbbb; not rebuilt: no compose CLI here",
    );
  });

  test("a digest rolled back is not rebuilt again until a newer one", async () => {
    const memory = inMemory();
    const rolledBack = inMemory();
    await checker(registry({ "busybox:1.36": A }).session, memory, rolledBack).check(input("web", ["busybox:1.36"]));
    rolledBack.set("web", B);
    const later = await checker(registry({ "busybox:1.36": B }).session, memory, rolledBack).check(
      input("web", ["busybox:1.36"]),
    );
    expect(later.state).toBe("skipped");
    expect(later.reason).toContain("was rolled back before");
  });

  test("one digest request per distinct base, however many services name it", async () => {
    const r = registry({ "busybox:1.36": A, "alpine:3.20": B });
    const c = checker(r.session);
    await Promise.all([
      c.check(input("web", ["busybox:1.36", "alpine:3.20"])),
      c.check(input("api", ["busybox:1.36"])),
      c.check(input("worker", ["alpine:3.20", `busybox:1.36@${C}`])),
    ]);
    expect(r.asked.sort()).toEqual(["alpine:3.20", "busybox:1.36"]);
  });

  test("bases that cannot be read: skipped with the reason", async () => {
    const verdict = await checker(registry({}).session).check({
      ...input("web", []),
      built: { bases: null, problem: "svc cannot see /srv/app/Dockerfile", heldBecause: null },
    });
    expect(verdict).toMatchObject({ state: "skipped", reason: "svc cannot see /srv/app/Dockerfile" });
  });
});

describe("the name a rebuilt service's earlier image keeps", () => {
  test("<repository>:svc-previous, whatever the tag or digest", () => {
    expect(previousTag("web-app")).toBe("web-app:svc-previous");
    expect(previousTag("me/web:dev")).toBe("me/web:svc-previous");
    expect(previousTag("127.0.0.1:5000/web")).toBe("127.0.0.1:5000/web:svc-previous");
    expect(previousTag(`r.example:5000/web:1@${A}`)).toBe("r.example:5000/web:svc-previous");
  });
});
