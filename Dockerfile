# syntax=docker/dockerfile:1
# The hephaestus job image: the package, plus the desired state of one commit (connectors/,
# definitions/, catalogs/, schemas/, ksql_migrations/). Build it per commit and tag it with the commit:
#   docker build -t REGISTRY/hephaestus:$(git rev-parse --short HEAD) .
# or, with no Docker engine and no registry, dev/image (buildah, bases made from Debian packages).
# The Helm chart (helm/hephaestus) runs it as `hephaestus job run NAME` with the project file
# mounted at $HEPHAESTUS_PROJECT. .dockerignore lets in only what is needed.
# PYTHON_IMAGE builds (it needs pip and venv); RUNTIME_IMAGE, by default the same image, runs: it
# needs only the same python3 at the same path (the venv links to it), e.g. the smaller base that
# dev/image makes from Debian packages where no registry can be reached.
# Pinned by digest, so a rebuild of the same commit gets the same base (a tag moves with every
# Debian point release). This digest is the one two public projects pin for the tag (it could not
# be pulled from here: no registry reachable); refresh it with
#   docker buildx imagetools inspect python:3.11-slim-bookworm --format '{{json .Manifest.Digest}}'
ARG PYTHON_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
ARG RUNTIME_IMAGE=${PYTHON_IMAGE}

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
# The same install path the tests check (tests/unit/test_wheel.py): into a fresh venv first every
# dependency from the hashed lock, then a wheel of the package with no deps. The venv has no pip
# of its own: the base's pip installs into it (--python). The lock goes first, alone, so a layer
# cache (docker build, buildah --layers) reuses the dependencies while the lock is unchanged.
COPY requirements/runtime.lock requirements/runtime.lock
RUN python3 -m venv --without-pip /opt/hephaestus \
 && python3 -m pip --python /opt/hephaestus/bin/python install --no-cache-dir --disable-pip-version-check \
      --require-hashes -r requirements/runtime.lock
COPY . .
RUN python3 -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps -w /dist . \
 && python3 -m pip --python /opt/hephaestus/bin/python install --no-cache-dir --disable-pip-version-check \
      --no-deps /dist/*.whl \
 && /opt/hephaestus/bin/hephaestus job list \
 && HEPHAESTUS_CACHE_DIR=/opt/hephaestus/cache /opt/hephaestus/bin/python -m hephaestus.jsonschemas \
 && chmod -R a+rX /opt/hephaestus/cache
# The desired state; a folder the commit does not have is simply absent.
RUN mkdir -p /state \
 && for d in connectors definitions catalogs schemas ksql_migrations; do \
      if [ -d "$d" ]; then cp -r "$d" /state/; fi; \
    done

FROM ${RUNTIME_IMAGE}
ARG REVISION=unknown
LABEL org.opencontainers.image.title="hephaestus" \
      org.opencontainers.image.description="GitOps reconciler and job runner for Kafka Connect + Debezium fleets" \
      org.opencontainers.image.revision="${REVISION}"
# No pip in the job image: the base's goes (python:*-slim has it under /usr/local, Debian's
# python3-pip is a package). A fixed numeric user, so Kubernetes can check runAsNonRoot (the chart
# runs as 10001).
RUN if command -v dpkg >/dev/null && dpkg -s python3-pip >/dev/null 2>&1; then \
      DEBIAN_FRONTEND=noninteractive apt-get purge -y -q --auto-remove python3-pip python3-setuptools python3-wheel \
      && rm -f /var/cache/apt/*.bin; \
    elif python3 -m pip --version >/dev/null 2>&1; then \
      PIP_ROOT_USER_ACTION=ignore python3 -m pip uninstall -y -q --disable-pip-version-check pip setuptools wheel; \
    fi \
 && ! python3 -m pip --version 2>/dev/null \
 && groupadd --gid 10001 hephaestus \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin hephaestus
COPY --from=build /opt/hephaestus /opt/hephaestus
COPY --from=build /state /app
# The schemas' validators, compiled at build time (root's files: read, never rewritten).
ENV PATH=/opt/hephaestus/bin:$PATH \
    HEPHAESTUS_CACHE_DIR=/opt/hephaestus/cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HEPHAESTUS_PROJECT=/etc/hephaestus/project/hephaestus.yaml
WORKDIR /app
USER 10001:10001
ENTRYPOINT ["hephaestus"]
CMD ["job", "list"]
