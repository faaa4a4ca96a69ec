# syntax=docker/dockerfile:1.7
# The sluice controller image: the REST API (python -m api), the worker (python -m
# controller.worker, which runs Ansible over SSH for hosts: playbooks/, the sluice.fabric
# collection and an ssh client are here), the telemetry collector, migrations and tokens
# (sluice-admin migrate / create-token) and the sluice CLI. lab/ is never in it (the
# .dockerignore). Built from the repository root:
#   docker build -f docker/controller.Dockerfile .
# Dependencies are exactly those pinned in uv.lock (uv sync --frozen --no-dev); the process
# runs as an unprivileged user and cannot write its own code.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG RUST_IMAGE=rust:1.95-bookworm

FROM ghcr.io/astral-sh/uv:0.13.8 AS uv
# The Rust toolchain only: maturin builds the collector's ingest core (native/controller-core,
# a PyO3 extension) from the Cargo workspace when uv syncs.
FROM ${RUST_IMAGE} AS rust

FROM ${PYTHON_IMAGE} AS build
COPY --from=uv /uv /usr/local/bin/uv
COPY --from=rust /usr/local/cargo /usr/local/cargo
COPY --from=rust /usr/local/rustup /usr/local/rustup
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
ENV RUSTUP_HOME=/usr/local/rustup \
    CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:$PATH
# Bytecode at build time (the runtime user cannot write /app); copy instead of hardlink
# because the cache and the venv are on different layers; never download another Python.
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never
WORKDIR /app
# Dependencies first: a code change does not reinstall them.
COPY pyproject.toml uv.lock README.md ./
# The ingest core, its own Cargo workspace with its own lock file (no agent or simulator
# source enters this image); cargo's build directory is not kept, only the installed extension.
COPY native/controller-core ./native/controller-core
RUN uv sync --frozen --no-dev --no-install-project && rm -rf native/controller-core/target
COPY controller ./controller
COPY api ./api
COPY vsonic ./vsonic
COPY migrations ./migrations
COPY alembic.ini ./
COPY playbooks ./playbooks
COPY ansible_collections ./ansible_collections
# The project itself, editable: controller/store/migrate.py finds migrations/ next to the code.
RUN uv sync --frozen --no-dev

FROM ${PYTHON_IMAGE} AS runtime
# ansible-playbook reaches the hosts with ssh (docs/hosts.md).
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 sluice \
 && useradd --system --uid 10001 --gid sluice --home-dir /app --no-create-home \
    --shell /usr/sbin/nologin sluice
# Same path as in the build stage: the venv's scripts and the editable install point at /app.
COPY --from=build /app /app
WORKDIR /app
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    SLUICE_API_HOST=0.0.0.0 \
    SLUICE_API_PORT=8000 \
    ANSIBLE_COLLECTIONS_PATH=/app
USER sluice
EXPOSE 8000
CMD ["python", "-m", "api"]
