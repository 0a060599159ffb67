/**
 * A Git remote or a forge answering badly (docs/security.md): bodies past the cap, redirects to
 * another server (the token never follows), answers that are not Git's protocol or not JSON, a
 * push the remote refuses. Each is a sentence, never a crash and never the token.
 */
import { describe, expect, test } from "bun:test";
import { openOrUpdate } from "../../../src/git/forges.ts";
import { advertisedRefs, PUSH_LIMITS, type Remote, receivePack } from "../../../src/git/push.ts";

const TOKEN = "hostile-test-token-0a9";

function remoteWith(answer: (url: string, init: RequestInit) => Response, seen: string[] = []): Remote {
  const fake = (async (input: string | URL | Request, init?: RequestInit) => {
    seen.push(String(input));
    return answer(String(input), init ?? {});
  }) as typeof fetch;
  return {
    url: "https://git.example.com/acme/stacks.git",
    username: "x-access-token",
    token: TOKEN,
    timeoutMs: 2000,
    fetch: fake,
  };
}

const advertisement = (body: string) =>
  new Response(body, { headers: { "content-type": "application/x-git-receive-pack-advertisement" } });

describe("the Git remote", () => {
  test("a list of refs past the cap is refused without reading it", async () => {
    const remote = remoteWith(
      () =>
        new Response("x", {
          headers: {
            "content-type": "application/x-git-receive-pack-advertisement",
            "content-length": String(PUSH_LIMITS.advertisementBytes + 1),
          },
        }),
    );
    await expect(advertisedRefs(remote)).rejects.toThrow(/larger than svc reads/);
  });

  test("a redirect to another server is not followed: the token stays", async () => {
    const seen: string[] = [];
    const remote = remoteWith(
      () => new Response(null, { status: 302, headers: { location: "https://collector.example.net/grab" } }),
      seen,
    );
    await expect(advertisedRefs(remote)).rejects.toThrow(/redirected the request to another server/);
    expect(seen.every((url) => url.startsWith("https://git.example.com/"))).toBe(true);
  });

  test("a server that does not speak smart HTTP", async () => {
    const remote = remoteWith(
      () => new Response("ref: refs/heads/main\n", { headers: { "content-type": "text/plain" } }),
    );
    await expect(advertisedRefs(remote)).rejects.toThrow(/does not speak Git's smart HTTP protocol/);
  });

  test("malformed refs", async () => {
    await expect(advertisedRefs(remoteWith(() => advertisement("0010not a ref\n0000")))).rejects.toThrow(/malformed/);
    await expect(advertisedRefs(remoteWith(() => advertisement("zzzz")))).rejects.toThrow(/pkt-line/);
  });

  test("the token goes as HTTP Basic with the forge's user name", async () => {
    let authorization: string | null = null;
    const remote = remoteWith((_url, init) => {
      authorization = new Headers(init.headers).get("authorization");
      return advertisement("001f# service=git-receive-pack\n0000" + "0000");
    });
    expect((await advertisedRefs(remote)).refs.size).toBe(0);
    expect(authorization!).toBe(`Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString("base64")}`);
  });

  test.each([
    [
      "000eunpack ok\n0030ng refs/heads/main pre-receive hook declined\n0000",
      /refused to move refs\/heads\/main: pre-receive hook declined/,
    ],
    ["001dunpack index-pack failed\n0000", /could not store svc's objects \(unpack index-pack failed\)/],
    ["0000", /could not store svc's objects \(no report\)/],
  ])("a push refused: %j", async (report, reason) => {
    const remote = remoteWith(
      () => new Response(report, { headers: { "content-type": "application/x-git-receive-pack-result" } }),
    );
    const push = receivePack(
      remote,
      { ref: "refs/heads/main", old: "1".repeat(40), next: "2".repeat(40) },
      new Uint8Array(0),
    );
    await expect(push).rejects.toThrow(reason);
  });

  test("a 401 says the token is missing or refused, without the token", async () => {
    const remote = remoteWith(() => new Response("no", { status: 401 }));
    const error = await advertisedRefs(remote).catch((e: Error) => e);
    expect(String(error)).toMatch(/answered 401 \(compose.git_token is missing or refused\)/);
    expect(String(error)).not.toContain(TOKEN);
  });
});

describe("the forge", () => {
  const forge = (answer: (url: string, init: RequestInit) => Response) => ({
    repo: { host: "github" as const, url: "https://github.com/acme/stacks", path: "acme/stacks" },
    apiUrl: "https://api.github.com",
    token: TOKEN,
    timeoutMs: 2000,
    fetch: (async (input: string | URL | Request, init?: RequestInit) =>
      answer(String(input), init ?? {})) as typeof fetch,
  });
  const ask = {
    branch: "svc/web-2.0.0",
    base: "main",
    title: "Update web to 2.0.0",
    body: "notes",
    commit: "c".repeat(40),
  };

  test("an answer that is not JSON", async () => {
    await expect(
      openOrUpdate(
        forge(() => new Response("<html>", { status: 200 })),
        ask,
      ),
    ).rejects.toThrow(/not JSON/);
  });

  test("an answer past the cap", async () => {
    await expect(
      openOrUpdate(
        forge(() => new Response("[]", { headers: { "content-length": String(64 * 1024 * 1024) } })),
        ask,
      ),
    ).rejects.toThrow(/answered more than/);
  });

  test("a list that pages forever stops at its page cap", async () => {
    let requests = 0;
    const endless = forge((url) => {
      requests++;
      if (!url.includes("/pulls?"))
        return Response.json(
          {
            number: 1,
            html_url: "https://github.com/acme/stacks/pull/1",
            head: { ref: ask.branch },
            base: { ref: "main" },
          },
          { status: 201 },
        );
      const next = new URL(url);
      next.searchParams.set("page", String(requests + 1));
      return Response.json([], { headers: { link: `<${next.href}>; rel="next"` } });
    });
    expect((await openOrUpdate(endless, ask)).created).toBe(true);
    expect(requests).toBeLessThanOrEqual(11);
  });

  test("a request's page that is not an http(s) link is not passed on", async () => {
    const sneaky = forge((url) =>
      url.includes("/pulls?")
        ? Response.json([])
        : Response.json(
            { number: 1, html_url: "javascript:alert(1)", head: { ref: ask.branch }, base: { ref: "main" } },
            { status: 201 },
          ),
    );
    await expect(openOrUpdate(sneaky, ask)).rejects.toThrow(/answered a pull request svc cannot read/);
  });

  test("'already exists' but nothing open in the list: said, not looped", async () => {
    const liar = forge((url) =>
      url.includes("/pulls?")
        ? Response.json([])
        : Response.json(
            {
              message: "Validation Failed",
              errors: [{ message: "A pull request already exists for acme:svc/web-2.0.0." }],
            },
            { status: 422 },
          ),
    );
    await expect(openOrUpdate(liar, ask)).rejects.toThrow(
      /says a request for svc\/web-2.0.0 exists, but lists none open/,
    );
  });
});
