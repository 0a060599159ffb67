import { describe, expect, test } from "bun:test";
import { checkedReference } from "../../../src/engine/docker.ts";

const DIGEST = `sha256:${"a".repeat(64)}`;

describe("checkedReference", () => {
  test("a tag is pulled at the digest the check found", () => {
    expect(checkedReference("127.0.0.1:5000/app:1.2", DIGEST)).toBe(`127.0.0.1:5000/app@${DIGEST}`);
    expect(checkedReference("nginx:latest", DIGEST)).toBe(`nginx@${DIGEST}`);
    expect(checkedReference("localhost:5000/team/app", DIGEST)).toBe(`localhost:5000/team/app@${DIGEST}`);
  });

  test("a reference that names a digest, or a check without one, is pulled as it is", () => {
    expect(checkedReference(`app:1.2@${DIGEST}`, DIGEST)).toBe(`app:1.2@${DIGEST}`);
    expect(checkedReference("app:1.2", null)).toBe("app:1.2");
    expect(checkedReference("app:1.2", "sha256:short")).toBe("app:1.2");
  });
});
