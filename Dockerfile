# svc in a scratch image: the compiled binary and the handful of glibc files it is linked against.
# No shell, no package manager, no CA bundle (Bun carries Mozilla's roots; NODE_EXTRA_CA_CERTS adds
# private ones). Built by scripts/image.sh (`bun run image`) for linux/amd64 and linux/arm64, with
# the classic builder (no base image to pull), from a context folder holding the root file system
# scripts/image-context.sh prepared as `rootfs/`:
#   DOCKER_BUILDKIT=0 docker build --platform linux/arm64 -f Dockerfile dist/image-arm64
FROM scratch

# No ARG before this step: on the containerd image store the classic builder commits an ARG step
# as an image of the host's platform, and a foreign-platform build then fails at the next step.
COPY rootfs/ /

# Where svc keeps its decisions (state_dir's default for every user: $XDG_STATE_HOME/svc), owned
# by 65532, the user docs recommend (`--user 65532:<the socket's group>`). A named volume mounted
# there starts with that owner; without one, Docker makes an anonymous volume, which a
# `docker rm` loses. svc run as another user says at start that its decisions will not survive.
COPY --chown=65532:65532 rootfs/var/empty /var/lib/svc
ENV XDG_STATE_HOME=/var/lib
VOLUME /var/lib/svc

# The API port, used only when http_api.update, http_api.metrics or http_api.ui is on.
EXPOSE 8080

# The binary checks itself (GET /v1/health on the configured port): no shell or curl needed.
# The engine (20.10) runs the first probe one interval after start, and the status stays
# "starting" until then: svc updating its own container waits at most rollback.startup_timeout
# (default 30s) for "healthy", so the first probe (interval + timeout) must come well before that.
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=3 CMD ["/svc", "healthcheck"]

ENTRYPOINT ["/svc"]
