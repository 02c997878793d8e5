# agentd: multi-stage build, release binary, non-root runtime.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock clippy.toml openapi.yaml ./
COPY crates crates
COPY migrations migrations
RUN cargo build --release --locked -p agentd

FROM debian:bookworm-slim
# bash and coreutils run the model's commands; bubblewrap sandboxes them (and chrt, from
# util-linux, runs them at idle priority); tini reaps orphaned tool processes (agentd must
# not be PID 1); curl serves the health check; ca-certificates for HTTPS to providers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash coreutils util-linux bubblewrap ca-certificates curl tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /var/lib/agentd --uid 10001 agentd \
 && mkdir -p /data/workspaces && chown -R agentd:agentd /data
COPY --from=build /src/target/release/agentd /usr/local/bin/agentd
USER agentd
ENV AGENTD_ADDR=0.0.0.0:8080 \
    AGENTD_DATA_DIR=/data \
    RUST_LOG=info
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/agentd"]
CMD ["serve"]
