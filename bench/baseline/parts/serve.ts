// The bare baseline's server, shared by the probes that each add one part of svc to it.
export function serveHealth(port: number): void {
  Bun.serve({
    port,
    hostname: "0.0.0.0",
    reusePort: false,
    fetch: () => Response.json({ status: "ok" }),
  });
}
