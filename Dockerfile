# syntax=docker/dockerfile:1
# The hephaestus job image: the package, plus the desired state of one commit (connectors/,
# definitions/, catalogs/, schemas/, ksql_migrations/). Build it per commit and tag it with the commit:
#   docker build -t REGISTRY/hephaestus:$(git rev-parse --short HEAD) .
# The Helm chart (helm/hephaestus) runs it as `hephaestus job run NAME` with the project file
# mounted at $HEPHAESTUS_PROJECT. .dockerignore lets in only what is needed.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY . .
# The same install path the tests check (tests/unit/test_wheel.py): a wheel of the package, and
# into a fresh venv first every dependency from the hashed lock, then the wheel with no deps.
RUN python -m pip wheel --no-cache-dir --no-deps -w /dist . \
 && python -m venv /opt/hephaestus \
 && /opt/hephaestus/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes \
      -r requirements/runtime.lock \
 && /opt/hephaestus/bin/pip install --no-cache-dir --disable-pip-version-check --no-deps /dist/*.whl \
 && /opt/hephaestus/bin/hephaestus job list
# The desired state; a folder the commit does not have is simply absent.
RUN mkdir -p /state \
 && for d in connectors definitions catalogs schemas ksql_migrations; do \
      if [ -d "$d" ]; then cp -r "$d" /state/; fi; \
    done

FROM ${PYTHON_IMAGE}
ARG REVISION=unknown
LABEL org.opencontainers.image.title="hephaestus" \
      org.opencontainers.image.description="GitOps reconciler and job runner for Kafka Connect + Debezium fleets" \
      org.opencontainers.image.revision="${REVISION}"
# A fixed numeric user, so Kubernetes can check runAsNonRoot (the chart runs as 10001).
RUN groupadd --gid 10001 hephaestus \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin hephaestus
COPY --from=build /opt/hephaestus /opt/hephaestus
COPY --from=build /state /app
ENV PATH=/opt/hephaestus/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HEPHAESTUS_PROJECT=/etc/hephaestus/project/hephaestus.yaml
WORKDIR /app
USER 10001:10001
ENTRYPOINT ["hephaestus"]
CMD ["job", "list"]
