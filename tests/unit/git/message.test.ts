/**
 * A release's notes and title go into svc's pull request body and commit message: there they
 * must not close the operator's issues when the request is merged (or the commit lands on the
 * default branch), ping anyone, or load an image. Each forge's own closing rule is written here as
 * that forge states it (the rows name where), and none may match what svc writes.
 */
import { describe, expect, test } from "bun:test";
import { commitMessage, pullRequestBody } from "../../../src/git/message.ts";
import type { ReleaseNotes } from "../../../src/releases/index.ts";

const ZERO_WIDTH = /\u200b/g;

/** An issue reference each forge reads: `#1`, `owner/repo#1`, and the address. */
const REFERENCE = String.raw`(?:[\w.-]+\/[\w.-]+)?#\d+|https?:\/\/\S+\/issues\/\d+`;

/** How each forge finds a closing statement, as it documents it. */
const FORGE_RULES: Record<string, RegExp> = {
  // docs.github.com, "Linking a pull request to an issue", "Linking a pull request to an issue
  // using a keyword": KEYWORD #ISSUE, KEYWORD OWNER/REPOSITORY#ISSUE, and the issue's URL; any case, a colon allowed
  github: new RegExp(String.raw`\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:${REFERENCE})`, "i"),
  // docs.gitlab.com, "Managing issues", "Default closing pattern" (gitlab.yml's issue_closing_pattern)
  gitlab: new RegExp(
    String.raw`\b(?:[Cc]los(?:e[sd]?|ing)|\b[Ff]ix(?:e[sd]|ing)?|\b[Rr]esolv(?:e[sd]?|ing)|\b[Ii]mplement(?:s|ed|ing)?)(?::?) +(?:(?:issues? +)?(?:${REFERENCE}))`,
  ),
  // go-gitea/gitea and Forgejo, modules/references/references.go: the default close and reopen
  // keywords ([repository.pull-request] CLOSE_KEYWORDS, REOPEN_KEYWORDS), any case, a colon allowed
  gitea: new RegExp(
    String.raw`(?:\s|^|\(|\[)(?:close|closes|closed|fix|fixes|fixed|resolve|resolves|resolved|reopen|reopens|reopened):?\s+(?:${REFERENCE})`,
    "im",
  ),
};

/** Each forge's keywords (the sources above), each written before each form of reference. */
const KEYWORDS = [
  ...["close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved"], // GitHub, GitLab, Gitea
  ...["closing", "fixing", "resolving", "implement", "implements", "implemented", "implementing"], // GitLab
  ...["reopen", "reopens", "reopened"], // Gitea/Forgejo (reopen)
];
const STATEMENTS = KEYWORDS.flatMap((word) => [
  `${word} #1`,
  `${word[0]!.toUpperCase()}${word.slice(1)}: acme/stacks#12`,
  `${word.toUpperCase()} https://github.com/acme/stacks/issues/3`,
  `(${word} issue #4)`,
  `_${word}_ #5`,
]);

function notesWith(title: string, text: string): ReleaseNotes {
  return {
    source: "https://github.com/acme/app",
    source_from: "label",
    from_version: "1.0.0",
    to_version: "2.0.0",
    releases: [
      {
        version: "2.0.0",
        title,
        published_at: null,
        url: "https://github.com/acme/app/releases/tag/v2.0.0",
        breaking: false,
        notes: text,
        notes_cut: false,
      },
    ],
    more: 0,
    breaking: 0,
    problem: null,
  };
}

const written = (title: string, text: string) => {
  const change = {
    moves: [{ service: "app", from: "1.0.0", to: "2.0.0", notes: notesWith(title, text) }],
    files: [{ path: "compose.yaml" }],
  };
  return { body: pullRequestBody(change), message: commitMessage(change) };
};

describe("closing keywords in release notes close nothing", () => {
  // every forge's rule finds the statement as a release writes it: the rows can fail
  test.each(Object.keys(FORGE_RULES))("%s's rule reads the statements as written", (forge) => {
    const found = STATEMENTS.filter((statement) => FORGE_RULES[forge]!.test(statement));
    expect(found.length).toBeGreaterThanOrEqual(27);
  });

  test.each(STATEMENTS)(
    "%s: in a title and the notes, no forge's rule matches svc's body or commit message",
    (statement) => {
      const { body, message } = written(`Release, ${statement}`, `- a change\n\n${statement}\n\nThanks! ${statement}.`);
      for (const [forge, rule] of Object.entries(FORGE_RULES)) {
        expect({ forge, body: rule.test(body) }).toEqual({ forge, body: false });
        expect({ forge, message: rule.test(message) }).toEqual({ forge, message: false });
      }
      // the words are still there to read
      expect(body.replace(ZERO_WIDTH, "")).toContain(statement.replace(/[[\]]/g, ""));
    },
  );
});

describe("mentions and images in release notes", () => {
  test("no mention pings, no image or HTML loads, links stay readable", () => {
    const { body, message } = written(
      "@everyone look",
      "Thanks @alice and @acme/maintainers!\n\n![pixel](https://tracker.example/p.png)\n<img src=https://tracker.example/i.png>\n[docs](https://example.org/docs)",
    );
    for (const text of [body, message]) expect(text).not.toMatch(/(^|[^\w])@(everyone|alice|acme)/m);
    expect(body).not.toContain("![pixel](");
    expect(body).not.toMatch(/(^|[^\\])<img/m);
    expect(body).not.toMatch(/(^|[^\\])\[docs\]\(/m);
    expect(body.replace(ZERO_WIDTH, "")).toContain("Thanks @alice and @acme/maintainers!");
  });

  test("a release's address is a link only when it is http(s)", () => {
    const notes = notesWith("2.0.0", "");
    notes.releases[0]!.url = "javascript:alert(1)";
    const body = pullRequestBody({ moves: [{ service: "app", from: "1.0.0", to: "2.0.0", notes }], files: [] });
    expect(body).not.toContain("javascript:");
  });
});
