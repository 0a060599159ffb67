/**
 * The Git room's pure parts (docs/compose.md, "Git"): pkt-lines (gitprotocol-common), git config
 * syntax (git-config, "Syntax"), the remote's address, branch names (git-check-ref-format) and the
 * text of commits and requests.
 */
import { describe, expect, test } from "bun:test";
import { branchOf } from "../../../src/git/index.ts";
import { commitMessage, pullRequestBody, versionOf } from "../../../src/git/message.ts";
import { parseRemote, pktLines } from "../../../src/git/push.ts";
import { parseConfig } from "../../../src/git/repo.ts";
import type { ReleaseNotes } from "../../../src/releases/index.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

describe("pkt-lines (gitprotocol-common)", () => {
  test("lines and flushes", () => {
    expect(pktLines(bytes("000eunpack ok\n0000"))).toEqual([
      { flush: false, text: "unpack ok\n" },
      { flush: true, text: "" },
    ]);
  });
  test.each(["0003", "zzzz", "00ffshort"])("refuses %j", (bad) => {
    expect(() => pktLines(bytes(bad))).toThrow(/pkt-line/);
  });
});

describe("git config (git-config, Syntax)", () => {
  const config = parseConfig(
    '[core]\n\trepositoryformatversion = 0\n\tbare = false ; a comment\n[extensions]\n\tobjectFormat = sha256\n[remote "origin"]\n\turl = "https://x/y.git"\n[core] worktree = /elsewhere\n[user]\n\tsigningkey\n',
  );
  test.each([
    ["core.repositoryformatversion", "0"],
    ["core.bare", "false"],
    ["extensions.objectformat", "sha256"],
    ["remote.origin.url", "https://x/y.git"],
    ["core.worktree", "/elsewhere"],
    ["user.signingkey", "true"],
  ])("%s = %s", (key, value) => {
    expect(config.get(key)?.at(-1)).toBe(value);
  });
});

describe("the remote's address", () => {
  test.each([
    ["https://github.com/me/stacks.git", { url: "https://github.com/me/stacks.git", username: undefined }],
    [
      "https://me@gitlab.example.com/group/stacks.git/",
      { url: "https://gitlab.example.com/group/stacks.git", username: "me" },
    ],
    ["http://127.0.0.1:3000/me/stacks.git", { url: "http://127.0.0.1:3000/me/stacks.git", username: undefined }],
  ])("%s", (written, parsed) => {
    expect(parseRemote(written)).toEqual(parsed);
  });
  test.each([
    ["http://git.example.com/me/stacks.git", /https:\/\//],
    ["https://me:secret@github.com/me/stacks.git", /must not hold a password/],
    ["ssh://git@github.com/me/stacks.git", /https:\/\//],
    ["stacks", /not a URL/],
  ])("refuses %s", (written, problem) => {
    const parsed = parseRemote(written);
    expect("problem" in parsed && parsed.problem).toMatch(problem);
    expect(JSON.stringify(parsed)).not.toContain("secret");
  });
});

describe("branch names (git-check-ref-format)", () => {
  test.each([
    ["web", "1.25.4", "svc/web-1.25.4"],
    ["my_app", "v2.0.0-rc.1", "svc/my_app-v2.0.0-rc.1"],
    ["web", "1..2", "svc/web-1.2"],
    ["web", "x.lock", "svc/web-x-lock"],
    ["we b@{x}", "~^:?*[", "svc/we-b-x-x"],
  ])("%s %s -> %s", (service, version, branch) => {
    expect(branchOf([{ service, to: version }])).toBe(branch);
  });
});

describe("what svc writes", () => {
  const notes: ReleaseNotes = {
    source: "https://github.com/acme/app",
    source_from: "label",
    from_version: "1.0.0",
    to_version: "2.0.0",
    releases: [
      {
        version: "2.0.0",
        title: "Big one",
        published_at: null,
        url: "https://github.com/acme/app/releases/tag/v2.0.0",
        breaking: true,
        notes: "Config moved.",
        notes_cut: false,
      },
      { version: "1.1.0", title: "1.1.0", published_at: null, url: null, breaking: false, notes: "", notes_cut: false },
    ],
    more: 3,
    breaking: 1,
    problem: null,
  };
  const change = { moves: [{ service: "app", from: "1.0.0", to: "2.0.0", notes }], files: [{ path: "compose.yaml" }] };

  test("the commit message: service, versions, summary, link", () => {
    expect(commitMessage(change)).toBe(
      "app: 1.0.0 -> 2.0.0\n\n- 2.0.0: Big one (breaking)\n- 1.1.0\n- and 3 more\n\nhttps://github.com/acme/app/releases/tag/v2.0.0\n",
    );
  });
  test("without notes, the commit says so", () => {
    expect(commitMessage({ ...change, moves: [{ ...change.moves[0]!, notes: null }] })).toBe(
      "app: 1.0.0 -> 2.0.0\n\nRelease notes: not read.\n",
    );
  });
  test("a stack's services moved together: one commit names them all", () => {
    const db = { service: "db", from: "16.1", to: "16.2", notes: null };
    const stack = { ...change, moves: [...change.moves, db] };
    expect(commitMessage(stack)).toBe(
      "app 1.0.0 -> 2.0.0, db 16.1 -> 16.2\n\napp 1.0.0 -> 2.0.0:\n- 2.0.0: Big one (breaking)\n- 1.1.0\n- and 3 more\n\nhttps://github.com/acme/app/releases/tag/v2.0.0\n\ndb 16.1 -> 16.2:\nRelease notes: not read.\n",
    );
    expect(pullRequestBody(stack)).toContain("## db\n\n**Breaking:** unknown (no release notes).");
    expect(branchOf(stack.moves)).toBe("svc/app-2.0.0+db-16.2");
  });

  test("the request's body: the breaking flag, each release's notes", () => {
    const body = pullRequestBody(change);
    expect(body).toStartWith(
      "svc moves **app** from `1.0.0` to `2.0.0` (`compose.yaml`).\n\n**Breaking:** one release between the two versions says it breaks.",
    );
    expect(body).toContain(
      "### 2.0.0: Big one (breaking)\n\n<https://github.com/acme/app/releases/tag/v2.0.0>\n\nConfig moved.",
    );
    expect(body).toContain("And 3 more releases: https://github.com/acme/app.");
  });
  test("image references are shown by their tags", () => {
    expect(versionOf("127.0.0.1:5000/acme/app:1.2.3")).toBe("1.2.3");
    expect(versionOf("app:1.2.3@sha256:" + "a".repeat(64))).toBe("1.2.3");
    expect(versionOf("2.4.0")).toBe("2.4.0");
    expect(versionOf("registry.lan:5000/app")).toBe("registry.lan:5000/app");
    const moves = [{ service: "app", from: "ghcr.io/acme/app:1.0.0", to: "ghcr.io/acme/app:2.0.0", notes: null }];
    expect(commitMessage({ moves, files: [] })).toStartWith("app: 1.0.0 -> 2.0.0\n");
    expect(branchOf(moves)).toBe("svc/app-2.0.0");
  });

  test("a report's summary of the notes (count, breaking, link) in the commit and the request", () => {
    const summary = {
      link: "https://github.com/acme/app/releases/tag/v2.0.0",
      source: "https://github.com/acme/app",
      count: 3,
      breaking: 1,
    };
    const moves = [{ service: "app", from: "1.0.0", to: "2.0.0", notes: summary }];
    expect(commitMessage({ moves, files: [] })).toBe(
      "app: 1.0.0 -> 2.0.0\n\nRelease notes: 3 releases, 1 breaking.\n\nhttps://github.com/acme/app/releases/tag/v2.0.0\n",
    );
    const body = pullRequestBody({ moves, files: [{ path: "compose.yaml" }] });
    expect(body).toContain(
      "**Breaking:** one release between the two versions says it breaks.\n\nRelease notes: 3 releases, 1 breaking.\n\n<https://github.com/acme/app/releases/tag/v2.0.0>",
    );
  });

  test("the body is capped below GitHub's 65536 characters", () => {
    const long = {
      ...notes,
      releases: Array.from({ length: 20 }, (_, n) => ({
        ...notes.releases[0]!,
        version: `2.0.${n}`,
        notes: "x".repeat(8000),
      })),
    };
    expect(pullRequestBody({ ...change, moves: [{ ...change.moves[0]!, notes: long }] }).length).toBeLessThan(65536);
  });
});
