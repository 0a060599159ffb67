// The baseline for footprint, throughput and startup: a bare Bun.serve answering the same
// health route, compiled exactly like svc.
const port = Number(process.argv[2] ?? 8080);
Bun.serve({
  port,
  hostname: "0.0.0.0",
  fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/v1/health") return Response.json({ status: "ok" });
    if (url.pathname === "/v1/metrics")
      return new Response("svc_scans_total 0\n", {
        headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" },
      });
    return Response.json({ error: "not found" }, { status: 404 });
  },
});
