// The engine's transport: what a peer receives from it and what it makes of the answers. The
// peer is a loopback HTTP server standing where the engine would (the engine itself is exercised
// through this modem by every engine integration test).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type DialOptions, EngineStatusError, FetchModem, registryAuthHeader } from "../../../src/engine/modem.ts";

interface Seen {
  method: string;
  path: string;
  contentType: string | null;
  registryAuth: string | null;
  body: string;
}

let server: ReturnType<typeof Bun.serve>;
let seen: Seen[] = [];

beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const url = new URL(request.url);
      seen.push({
        method: request.method,
        path: url.pathname + url.search,
        contentType: request.headers.get("content-type"),
        registryAuth: request.headers.get("x-registry-auth"),
        body: await request.text(),
      });
      if (url.pathname.endsWith("/missing"))
        return Response.json({ message: "No such container: missing" }, { status: 404 });
      if (url.pathname.endsWith("/plain-error")) return new Response("page not found\n", { status: 404 });
      if (url.pathname.endsWith("/stop")) return new Response(null, { status: 304 });
      if (url.pathname.endsWith("/start")) return new Response(null, { status: 204 });
      if (url.pathname.endsWith("/create")) return new Response('{"status":"a"}\n{"status":"b"}\n');
      if (url.pathname.endsWith("/logs"))
        return new Response(new Uint8Array([1, 0, 0, 0, 0, 0, 0, 2, 104, 105]), {
          headers: { "content-type": "application/vnd.docker.multiplexed-stream" },
        });
      return Response.json({ ok: true });
    },
  });
});

afterAll(() => server.stop(true));

function modem(version?: string): FetchModem {
  return new FetchModem({ kind: "tcp", host: "127.0.0.1", port: server.port!, tls: false }, null, version);
}

function dial(m: FetchModem, options: Partial<DialOptions> & { path: string }): Promise<unknown> {
  seen = [];
  return new Promise((resolve, reject) =>
    m.dial({ method: "GET", statusCodes: { 200: true, 201: true, 204: true }, ...options }, (error, data) =>
      error ? reject(error) : resolve(data),
    ),
  );
}

describe("FetchModem", () => {
  test("prefixes the API version and sends the query, without a body on GET", async () => {
    const data = await dial(modem("v1.43"), {
      path: "/containers/json?",
      options: { _query: { all: "1", filters: '{"a":["b c"]}' }, _body: { ignored: true } },
    });
    expect(data).toEqual({ ok: true });
    expect(seen).toEqual([
      {
        method: "GET",
        path: "/v1.43/containers/json?all=1&filters=%7B%22a%22%3A%5B%22b+c%22%5D%7D",
        contentType: null,
        registryAuth: null,
        body: "",
      },
    ]);
  });

  test("sends a JSON body with its content type, and no query mark without a query", async () => {
    await dial(modem(), {
      method: "POST",
      path: "/containers/create?",
      options: { _query: {}, _body: { Image: "x", Env: ["A=1"] } },
    });
    expect(seen[0]).toMatchObject({ method: "POST", path: "/containers/create", contentType: "application/json" });
    expect(JSON.parse(seen[0]!.body)).toEqual({ Image: "x", Env: ["A=1"] });
  });

  test("a POST without a body sends none", async () => {
    expect(await dial(modem(), { method: "POST", path: "/containers/abc/start?" })).toBeNull();
    expect(seen[0]).toMatchObject({ method: "POST", path: "/containers/abc/start", contentType: null, body: "" });
  });

  test("registry credentials travel as padded URL-safe base64 JSON in X-Registry-Auth", async () => {
    const auth = { username: "u?>>", password: "p~~~", serveraddress: "127.0.0.1:5001" };
    await dial(modem(), { method: "POST", path: "/images/create?", authconfig: auth, isStream: true });
    const header = seen[0]!.registryAuth!;
    expect(header).toBe(registryAuthHeader(auth));
    expect(header).not.toMatch(/[+/]/);
    expect(header.length % 4).toBe(0);
    expect(JSON.parse(Buffer.from(header, "base64url").toString())).toEqual(auth);
  });

  test("dockerode's own options: the query from them when there is no _query (objects as JSON), never the abort signal", async () => {
    const abortSignal = new AbortController().signal;
    await dial(modem(), {
      path: "/containers/json?",
      options: { all: true, filters: { label: ["a=b"] }, abortSignal, gone: undefined },
    });
    expect(seen[0]!.path).toBe("/containers/json?all=true&filters=%7B%22label%22%3A%5B%22a%3Db%22%5D%7D");
  });

  test("dockerode's own options: a POST sends them as its JSON body when there is no _body; none when only the signal is there", async () => {
    const abortSignal = new AbortController().signal;
    await dial(modem(), {
      method: "POST",
      path: "/containers/abc/update",
      options: { RestartPolicy: { Name: "no" }, abortSignal },
    });
    expect(seen[0]).toMatchObject({ path: "/containers/abc/update", contentType: "application/json" });
    expect(JSON.parse(seen[0]!.body)).toEqual({ RestartPolicy: { Name: "no" } });
    await dial(modem(), { method: "POST", path: "/containers/abc/start?", options: { abortSignal } });
    expect(seen[0]).toMatchObject({ path: "/containers/abc/start", contentType: null, body: "" });
  });

  test("an answer that is not JSON comes back as its bytes (a container's logs)", async () => {
    const data = await dial(modem(), { path: "/containers/abc/logs?", options: { stdout: true } });
    expect(Buffer.isBuffer(data)).toBe(true);
    expect([...(data as Buffer)]).toEqual([1, 0, 0, 0, 0, 0, 0, 2, 104, 105]);
  });

  test("a stream answer is handed over unread, as bytes", async () => {
    const stream = (await dial(modem(), {
      method: "POST",
      path: "/images/create?",
      isStream: true,
    })) as AsyncIterable<Uint8Array>;
    let text = "";
    for await (const chunk of stream) text += new TextDecoder().decode(chunk);
    expect(text).toBe('{"status":"a"}\n{"status":"b"}\n');
  });

  test("a status the caller allows is a success; any other is an error with the engine's message", async () => {
    expect(
      await dial(modem(), { method: "POST", path: "/containers/abc/stop?", statusCodes: { 204: true, 304: true } }),
    ).toBeNull();
    const error = (await dial(modem(), { path: "/containers/missing?" }).catch((e) => e)) as EngineStatusError;
    expect(error).toBeInstanceOf(EngineStatusError);
    expect(error.statusCode).toBe(404);
    expect(error.message).toBe("No such container: missing");
    const plain = (await dial(modem(), { path: "/plain-error?" }).catch((e) => e)) as EngineStatusError;
    expect(plain.message).toBe("page not found");
  });

  test("an aborted request rejects with the signal's reason", async () => {
    const abort = new AbortController();
    const reason = Object.assign(new Error("no answer in time"), { name: "TimeoutError" });
    abort.abort(reason);
    const error = await dial(modem(), { path: "/version?", abortSignal: abort.signal }).catch((e) => e);
    expect(error).toBe(reason);
  });

  test("a connection that cannot be made names its cause in `code`", async () => {
    const gone = new FetchModem({ kind: "unix", socketPath: "/nonexistent/docker.sock" }, null);
    const error = await new Promise<(Error & { code?: string }) | null>((resolve) =>
      gone.dial({ path: "/version?", method: "GET", statusCodes: { 200: true } }, (failure) => resolve(failure)),
    );
    expect(error?.code).toBe("ENOENT");
  });
});
