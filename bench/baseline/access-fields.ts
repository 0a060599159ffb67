export {};

// The bare baseline reading what an access-log entry needs from each request (docs/api.md: the
// remote address, the Host, User-Agent and Authorization headers) and writing nothing: the
// floor of what the access log's fields cost in this runtime, compiled exactly like svc.
const port = Number(process.argv[2] ?? 8080);
let sink = 0;
Bun.serve({
  port,
  hostname: "0.0.0.0",
  reusePort: false,
  fetch(request, server) {
    const remote = server.requestIP(request);
    const headers = request.headers;
    // kept so the reads cannot be optimised away
    sink +=
      (remote?.port ?? 0) +
      (headers.get("host")?.length ?? 0) +
      (headers.get("user-agent")?.length ?? 0) +
      (headers.get("authorization")?.length ?? 0);
    return Response.json({ status: "ok" });
  },
});
process.on("SIGTERM", () => process.exit(sink >= 0 ? 0 : 1));
