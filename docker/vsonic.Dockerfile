# syntax=docker/dockerfile:1.7
# A lab image of virtual SONiC switches (vsonic: Redis in SONiC's DB layout plus a gNMI
# server per switch). Only for the compose profile "lab"; a real fabric runs real switches.
#   docker build -f docker/vsonic.Dockerfile .
# Same dependency rule as the controller image: uv.lock exactly, no dev tools, non-root.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG RUST_IMAGE=rust:1.95-bookworm

FROM ghcr.io/astral-sh/uv:0.13.8 AS uv

# Each switch's data plane (virtual ASIC) and qos-agent, from the Rust workspace and its
# Cargo.lock (--locked); the default features need no SAI headers or libclang.
FROM ${RUST_IMAGE} AS rust
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY agents ./agents
COPY sim ./sim
RUN cargo build --locked --release -p vswitch-dataplane --bin vswitch-dataplane \
    -p qos-agent --bin qos-agent

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /usr/local/bin/uv
# maturin builds the collector's ingest core (a dependency of the package) with this toolchain.
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:$PATH
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never
WORKDIR /app
COPY pyproject.toml uv.lock README.md ./
# The ingest core (a dependency of the package), its own Cargo workspace.
COPY native/controller-core ./native/controller-core
RUN uv sync --frozen --no-dev --no-install-project && rm -rf native/controller-core/target
COPY controller ./controller
COPY api ./api
COPY vsonic ./vsonic
COPY migrations ./migrations
COPY alembic.ini ./
RUN uv sync --frozen --no-dev

FROM ${PYTHON_IMAGE} AS runtime
# vsonic keeps each switch's CONFIG_DB, COUNTERS_DB and STATE_DB in a Redis it starts itself.
RUN apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10002 vsonic \
 && useradd --system --uid 10002 --gid vsonic --home-dir /var/lib/vsonic --create-home \
    --shell /usr/sbin/nologin vsonic
COPY --from=build /app /app
COPY --from=rust /src/target/release/vswitch-dataplane /src/target/release/qos-agent \
     /usr/local/bin/
COPY docker/vsonic-entrypoint.sh /usr/local/bin/vsonic-entrypoint
WORKDIR /var/lib/vsonic
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    VSONIC_STATE_DIR=/var/lib/vsonic/state \
    SLUICE_DATAPLANE_BIN=/usr/local/bin/vswitch-dataplane \
    SLUICE_QOS_AGENT_BIN=/usr/local/bin/qos-agent
USER vsonic
# vsonic listens on 127.0.0.1 unless told otherwise; the compose lab service passes
# --listen 0.0.0.0 --advertise vswitch (docker-compose.yml), so the controller's containers
# reach the switches on the compose network as vswitch:50051...
ENTRYPOINT ["vsonic-entrypoint"]
CMD ["--switches", "4"]
