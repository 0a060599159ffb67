/** The capped JSON read every caller maps to its own error: each outcome, told apart. */
import { describe, expect, test } from "bun:test";
import { z } from "zod";
import { parseJsonBytes, readBoundedJson } from "../../../src/core/bounded.ts";

const SHAPE = z.object({ ok: z.boolean(), items: z.array(z.string()) });
const answer = (body: string | null) => new Response(body);

describe("readBoundedJson", () => {
  test("a body within the cap: its JSON, checked against the schema when one is given", async () => {
    expect(await readBoundedJson(answer('{"ok":true,"items":["a"],"more":1}'), 64, SHAPE)).toEqual({
      value: { ok: true, items: ["a"] },
    });
    expect(await readBoundedJson(answer("[1,2]"), 64)).toEqual({ value: [1, 2] });
  });

  test("over the cap, as streamed or as announced: over_cap, whatever the body holds", async () => {
    expect(await readBoundedJson(answer(`"${"x".repeat(100)}"`), 64)).toEqual({ error: "over_cap" });
    const announced = new Response("{}", { headers: { "content-length": "1000" } });
    expect(await readBoundedJson(announced, 64)).toEqual({ error: "over_cap" });
  });

  test("no body, a body that is not JSON, JSON of another shape: each its own error", async () => {
    expect(await readBoundedJson(answer(null), 64)).toEqual({ error: "empty" });
    expect(await readBoundedJson(answer(""), 64)).toEqual({ error: "empty" });
    expect(await readBoundedJson(answer("<html>"), 64)).toEqual({ error: "not_json" });
    const wrong = await readBoundedJson(answer('{"ok":true,"items":[1]}'), 64, SHAPE);
    expect(wrong).toMatchObject({ error: "not_shape", path: ["items", 0] });
    expect("message" in wrong && wrong.message).toBeTruthy();
  });

  test("bytes already read whole parse the same way", () => {
    expect(parseJsonBytes(new TextEncoder().encode('{"ok":false,"items":[]}'), SHAPE)).toEqual({
      value: { ok: false, items: [] },
    });
    expect(parseJsonBytes(new Uint8Array(0))).toEqual({ error: "empty" });
  });
});
