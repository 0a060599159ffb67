/**
 * A real Git remote over HTTP on loopback: Debian's `git http-backend` (the CGI Git ships for
 * smart HTTP) behind a small Bun server that checks the token first, as a forge does. Repositories
 * are bare ones under `root`, reached as http://127.0.0.1:PORT/<owner>/<name>.git.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../temp.ts";

const BACKEND = "/usr/lib/git-core/git-http-backend";

export interface SeenGitRequest {
  method: string;
  path: string;
  status: number;
  authorization: string | null;
  /** the number of objects in the pack a push sent (its header's count) */
  packObjects?: number;
}

export class GitRemote {
  readonly root = tempDir("svc-git-remote-");
  readonly requests: SeenGitRequest[] = [];
  private readonly server: ReturnType<typeof Bun.serve>;

  constructor(readonly token: string) {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => this.answer(request) });
  }

  get origin(): string {
    return `http://127.0.0.1:${this.server.port}`;
  }

  /** A new bare repository `owner/name.git`; answers its URL and its folder. */
  bare(path: string): { url: string; dir: string } {
    const dir = join(this.root, `${path}.git`);
    mkdirSync(dir, { recursive: true });
    const run = Bun.spawnSync(["git", "init", "-q", "--bare", "-b", "main", dir]);
    if (run.exitCode !== 0) throw new Error(run.stderr.toString());
    return { url: `${this.origin}/${path}.git`, dir };
  }

  /** What branch `branch` of `owner/name.git` holds now; undefined when it does not exist (a forge stand-in's `head.sha`). */
  branchCommit(path: string, branch: string): string | undefined {
    const dir = join(this.root, `${path}.git`);
    const run = Bun.spawnSync(["git", "-C", dir, "rev-parse", "--verify", "-q", `refs/heads/${branch}`]);
    return run.exitCode === 0 ? run.stdout.toString().trim() : undefined;
  }

  /** The header `git` needs to reach this remote (git -c http.extraHeader=...). */
  get gitHeader(): string {
    return `http.extraHeader=Authorization: Basic ${Buffer.from(`test:${this.token}`).toString("base64")}`;
  }

  stop(): void {
    this.server.stop(true);
  }

  private async answer(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const authorization = request.headers.get("authorization");
    let packObjects: number | undefined;
    const log = (response: Response) => {
      this.requests.push({
        method: request.method,
        path: `${url.pathname}${url.search}`,
        status: response.status,
        authorization,
        ...(packObjects === undefined ? {} : { packObjects }),
      });
      return response;
    };
    const password = /^Basic (.+)$/.exec(authorization ?? "")?.[1];
    const given = password ? Buffer.from(password, "base64").toString().split(":").slice(1).join(":") : undefined;
    if (given !== this.token)
      return log(new Response("Unauthorized\n", { status: 401, headers: { "WWW-Authenticate": 'Basic realm="git"' } }));
    const body = request.method === "POST" ? new Uint8Array(await request.arrayBuffer()) : new Uint8Array(0);
    const pack = Buffer.from(body).indexOf("PACK");
    if (pack >= 0 && pack + 12 <= body.length) packObjects = Buffer.from(body).readUInt32BE(pack + 8);
    const cgi = Bun.spawn([BACKEND], {
      env: {
        GIT_PROJECT_ROOT: this.root,
        GIT_HTTP_EXPORT_ALL: "1",
        REMOTE_USER: "svc-test",
        REMOTE_ADDR: "127.0.0.1",
        REQUEST_METHOD: request.method,
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: request.headers.get("content-type") ?? "",
        CONTENT_LENGTH: String(body.length),
        GIT_CONFIG_NOSYSTEM: "1",
        HOME: "/nonexistent",
        PATH: process.env.PATH ?? "/usr/bin:/bin",
      },
      stdin: body,
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = Buffer.from(await new Response(cgi.stdout).arrayBuffer());
    await cgi.exited;
    const end = output.indexOf("\r\n\r\n");
    const split = end >= 0 ? end : output.indexOf("\n\n");
    const head = output.subarray(0, split).toString("latin1");
    const rest = output.subarray(split + (end >= 0 ? 4 : 2));
    const headers = new Headers();
    let status = 200;
    for (const line of head.split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number(value.split(" ")[0]);
      else headers.append(name, value);
    }
    return log(new Response(rest, { status, headers }));
  }
}
