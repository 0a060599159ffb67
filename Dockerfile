# svc in a scratch image: the compiled binary and the handful of glibc files it is linked against.
# No shell, no package manager, no CA bundle (Bun carries Mozilla's roots; NODE_EXTRA_CA_CERTS adds
# private ones). Build it from the checkout, with the classic builder (no base image to pull):
#   bun run build && bash scripts/image-context.sh && DOCKER_BUILDKIT=0 docker build -t svc .
FROM scratch

# The folder scripts/image-context.sh prepared (dist/image); a build argument so tests can point
# at a context of their own.
ARG ROOTFS=dist/image
COPY ${ROOTFS}/ /

# The API port, used only when http_api.update or http_api.metrics is on.
EXPOSE 8080

# The binary checks itself (GET /v1/health on the configured port): no shell or curl needed.
# The engine (20.10) runs the first probe one interval after start, and the status stays
# "starting" until then: svc updating its own container waits at most rollback.startup_timeout
# (default 30s) for "healthy", so the first probe (interval + timeout) must come well before that.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["/svc", "healthcheck"]

ENTRYPOINT ["/svc"]
