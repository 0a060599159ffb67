/**
 * What peers answer, fuzzed: random GET /v1/containers answers (entries as svc writes them with
 * hostile text, entries broken on purpose, unknown fields, answers around them that are not
 * svc's) from a loopback stand-in peer, read through GET /v1/peers and the forward the page
 * checks one container with. Every entry svc answers is kept exactly (unknown fields left out),
 * every other is dropped and counted, nothing else comes through, no answer is a 5xx but the
 * peer's own 502. Seeded: the seed is in the test's name (SVC_FUZZ_SEED replays it).
 */
import { afterAll, expect, test } from "bun:test";
import { answerOf, randomEntries } from "../../support/overviews.ts";
import { fuzzSeed, prng } from "../../support/random.ts";
import { bearer, makeApp } from "./fakes.ts";

const SEED = fuzzSeed(Date.now() % 1_000_000);
const ROUNDS = 60;
const auth = bearer();

let answer: unknown = null;
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: () => (typeof answer === "string" ? new Response(answer) : Response.json(answer)),
});
afterAll(() => server.stop(true));

/** Answers around entries that are not svc's at all: the whole answer is refused, the peer unreachable. */
const NOT_AN_ANSWER: unknown[] = [
  null,
  [],
  "<html>",
  { containers: [] },
  { checked_at: "now", host: "h", update: true, containers: [] },
  { checked_at: new Date().toISOString(), host: 1, update: true, containers: [] },
];

test(`peers' answers fuzz (seed ${SEED}): what svc answers is kept as it is, the rest dropped and counted, never a 5xx of svc's own`, async () => {
  const rng = prng(SEED);
  const { request } = makeApp({
    http_api: { ui: true },
    peers: [{ name: "fz", url: `http://127.0.0.1:${server.port}`, token: "t" }],
  });
  for (let round = 0; round < ROUNDS; round++) {
    const whole = !rng.chance(0.1);
    const entries = randomEntries(rng, 1 + rng.int(12));
    answer = whole ? answerOf(entries) : rng.chance(0.5) ? rng.pick(NOT_AN_ANSWER) : "{not json";
    const replay = `round ${round} of seed ${SEED}`;

    const listed = await request("/v1/peers", { headers: auth });
    expect(listed.status, replay).toBe(200);
    const view = ((await listed.json()) as any).peers[0];
    const forwarded = await request("/v1/peers/fz/containers", { headers: auth });
    if (!whole) {
      expect(view.up, replay).toBe(false);
      expect(forwarded.status, replay).toBe(502);
      continue;
    }
    expect(view.up, `${replay}: ${view.error}`).toBe(true);
    expect(forwarded.status, replay).toBe(200);
    const expected = entries.filter((e) => e.kept !== null);
    for (const data of [view.data, await forwarded.json()]) {
      expect(
        data.containers.map((c: any) => c.name),
        replay,
      ).toEqual(expected.map((e) => e.kept));
      for (const [i, kept] of data.containers.entries()) {
        const given = expected[i]!.entry as Record<string, any>;
        // every field svc answers, as the peer gave it (an older peer's missing ones filled in); nothing else
        expect(Object.keys(kept).sort(), replay).toEqual(FIELDS);
        for (const key of FIELDS.filter((field) => field in given)) {
          expect(kept[key], `${replay}: ${kept.name}.${key}`).toEqual(
            key === "policy" ? withoutSurplus(given.policy) : given[key],
          );
        }
      }
    }
    const droppedCount = entries.length - expected.length;
    const named =
      view.dropped.length > 10
        ? 10 + Number(/^and (\d+) more$/.exec(view.dropped.at(-1))?.[1]) - 1
        : view.dropped.length;
    expect(named, `${replay}: ${view.dropped.join("\n")}`).toBe(droppedCount);
  }
});

const FIELDS = [
  "kind",
  "group",
  "name",
  "image",
  "state",
  "would_update",
  "current_digest",
  "available_digest",
  "available_image",
  "reason",
  "version",
  "available_version",
  "update_kind",
  "first_seen_at",
  "created_at",
  "eligible_at",
  "applies_at",
  "applies",
  "policy",
  "snoozed_until",
  "skipped",
  "previous_image_id",
  "link",
  "last_cycle",
  "last_update",
  "release_notes",
  "compose_change",
  "built_from",
  "vulnerabilities",
  "signature",
].sort();

/** A policy without the unknown field the generator adds to it. */
function withoutSurplus(policy: Record<string, unknown>): Record<string, unknown> {
  const { surplus: _, ...rest } = policy;
  return rest;
}
