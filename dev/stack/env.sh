# shellcheck shell=bash
# The one place for the local stack's ports, paths and versions. Sourced by every dev/stack
# script; CI and a developer's shell may source it too. Every value can be overridden by
# exporting the variable before running a script.
#
# Changing a port or HEPH_STACK_DIR while the stack runs is not supported: `dev/stack/down`
# first (and `down --purge` after changing the Kafka ports: KRaft records the controller
# endpoint when the storage is formatted).

HEPH_STACK_SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# --- work dir (data, logs, pid files, jars, generated configs, secrets) ---------------------
: "${HEPH_STACK_DIR:=/tmp/hephaestus-stack}"

# --- versions (jars come from Maven Central through dev/stack/pom.xml) ----------------------
: "${HEPH_KAFKA_VERSION:=4.4.0}"                     # broker
# Connect runs 4.3.1: Debezium 3.6 (built against Kafka 4.3) uses a Kafka class that 4.4 moved
# (org.apache.kafka.common.utils.Sanitizer), so its source tasks fail on a 4.4 worker.
: "${HEPH_CONNECT_VERSION:=4.3.1}"
: "${HEPH_DEBEZIUM_VERSION:=3.6.1.Final}"            # PostgreSQL source connector
# A second, older PostgreSQL source beside it, in plugins/debezium-connector-postgres-<version>
# (KIP-891: a worker holds several versions of a plugin; `connector.plugin.version` pins one,
# unpinned connectors get the newest). Must stay older than HEPH_DEBEZIUM_VERSION, so that
# unpinned connectors keep running it. 3.5.2.Final is served but its parent POM is not; 3.5.0.Final
# resolves. Empty: no second version.
: "${HEPH_DEBEZIUM_OLD_VERSION=3.5.0.Final}"
: "${HEPH_DEBEZIUM_JDBC_VERSION:=3.6.0.Final}"       # JDBC sink: 3.6.1.Final is not served
# The JDBC sink twice more, for fleet upgrades and rollbacks (KIP-891): an older release in
# plugins/debezium-connector-jdbc-<version> (same pom.xml profile and pinned Hibernate), and in
# plugins/debezium-connector-jdbc-broken a copy of the current one that reports
# HEPH_DEBEZIUM_JDBC_BROKEN_VERSION and lacks the PostgreSQL driver: a config pinned to it is
# accepted, its tasks fail at start. Both must be older than HEPH_DEBEZIUM_JDBC_VERSION in
# Maven's order (unpinned sinks get the newest). Empty: none.
: "${HEPH_DEBEZIUM_JDBC_OLD_VERSION=3.5.0.Final}"
: "${HEPH_DEBEZIUM_JDBC_BROKEN_VERSION=3.5.99.Broken}"
: "${HEPH_DEBEZIUM_SCRIPTING_VERSION:=3.3.1.Final}"  # newest that Maven resolves
: "${HEPH_HIBERNATE_VERSION:=7.2.19.Final}"          # the sink's 7.2.6.Final lacks hibernate-agroal
: "${HEPH_PG_JDBC_VERSION:=42.7.11}"                 # the driver Debezium 3.6 manages
: "${HEPH_GROOVY_VERSION:=4.0.32}"                   # groovy-jsr223 4.0.33 is not served
: "${HEPH_LOG4J_VERSION:=2.25.3}"
# Schema registry and converter (dev/stack/registry, dev/stack/avro-converter): Apicurio Registry
# 2.4 is the newest whose build resolves from Maven Central; the converter is a client of its v2
# REST API and may be newer.
: "${HEPH_REGISTRY_VERSION:=2.4.2.Final}"
: "${HEPH_APICURIO_CONVERTER_VERSION:=2.6.13.Final}"

# --- PostgreSQL 15 ---------------------------------------------------------------------------
: "${HEPH_PG_BIN:=/usr/lib/postgresql/15/bin}"
: "${HEPH_PG_HOST:=127.0.0.1}"
: "${HEPH_PG_PORT:=25432}"
: "${HEPH_PG_USER:=postgres}"       # database superuser
: "${HEPH_PG_PASSWORD:=postgres}"   # set on the role although auth is trust: configs carry it
# OS account that owns and runs the cluster when the scripts run as root (initdb/postgres
# refuse root). Empty = `postgres` if that account exists, else `hephaestus` (created).
: "${HEPH_PG_OS_USER:=}"

# --- Kafka 4.4 broker (KRaft, broker+controller in one process) ------------------------------
: "${HEPH_KAFKA_HOST:=127.0.0.1}"
: "${HEPH_KAFKA_PORT:=29092}"
: "${HEPH_KAFKA_CONTROLLER_PORT:=29093}"
: "${HEPH_KAFKA_HEAP:=-Xms256m -Xmx512m}"

# --- Kafka Connect 4.4 (distributed) ---------------------------------------------------------
# How many Connect clusters to run on the one broker: 1 (default), 2 or 3. Each has its own
# group.id and internal topics; the second listens on HEPH_CONNECT2_PORT (multi-cluster
# reconcile tests), the third on HEPH_CONNECT3_PORT (the data-warehouse stack, cluster kec).
: "${HEPH_STACK_CONNECTS:=1}"
: "${HEPH_CONNECT_HOST:=127.0.0.1}"
: "${HEPH_CONNECT_PORT:=28083}"
: "${HEPH_CONNECT2_PORT:=28084}"
: "${HEPH_CONNECT3_PORT:=28085}"
: "${HEPH_CONNECT_HEAP:=-Xms256m -Xmx768m}"

# --- schema registry (Apicurio Registry, in-memory, Confluent API under /apis/ccompat/v7) ---------
: "${HEPH_STACK_REGISTRY:=1}"       # 0: do not build or start it
: "${HEPH_REGISTRY_HOST:=127.0.0.1}"
: "${HEPH_REGISTRY_PORT:=28081}"
# About 200-300 MB resident; the heap cap keeps it small beside three Connect workers.
: "${HEPH_REGISTRY_HEAP:=-Xms64m -Xmx256m}"
# The built registry (about 130 MB), one folder per version and build files. Outside the work
# dir on purpose: `down --purge` and CI's fresh work dir keep it, so Quarkus's build (a minute
# or more on a cold Maven cache) runs once per machine.
: "${HEPH_REGISTRY_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/hephaestus/apicurio-registry}"

# --- timeouts (seconds) ----------------------------------------------------------------------
: "${HEPH_STACK_START_TIMEOUT:=240}"  # per component, until it answers
: "${HEPH_STACK_STOP_TIMEOUT:=30}"    # per process, from TERM to KILL

# --- Java ------------------------------------------------------------------------------------
if [[ -z "${HEPH_JAVA:-}" ]]; then
  if [[ -n "${JAVA_HOME:-}" && -x "${JAVA_HOME}/bin/java" ]]; then
    HEPH_JAVA="${JAVA_HOME}/bin/java"
  else
    HEPH_JAVA=java
  fi
fi

# --- derived paths (not meant to be overridden) ----------------------------------------------
HEPH_STACK_RUN="${HEPH_STACK_DIR}/run"                  # pid files, stamps
HEPH_STACK_LOGS="${HEPH_STACK_DIR}/logs"
HEPH_KAFKA_LIB="${HEPH_STACK_DIR}/lib/kafka"            # broker classpath (and StorageTool)
HEPH_CONNECT_LIB="${HEPH_STACK_DIR}/lib/connect"        # Connect worker classpath
HEPH_STACK_PLUGINS="${HEPH_STACK_DIR}/plugins"          # Connect plugin.path (one folder per plugin)
HEPH_PG_DATA="${HEPH_STACK_DIR}/pg/data"
HEPH_SECRETS_FILE="${HEPH_STACK_DIR}/secrets/connect.properties"
HEPH_REGISTRY_URL="http://${HEPH_REGISTRY_HOST}:${HEPH_REGISTRY_PORT}"  # + /apis/ccompat/v7 (Confluent), /apis/registry/v2 (Apicurio)

export HEPH_STACK_SRC HEPH_STACK_DIR \
  HEPH_KAFKA_VERSION HEPH_CONNECT_VERSION HEPH_DEBEZIUM_VERSION HEPH_DEBEZIUM_OLD_VERSION HEPH_DEBEZIUM_JDBC_VERSION \
  HEPH_DEBEZIUM_JDBC_OLD_VERSION HEPH_DEBEZIUM_JDBC_BROKEN_VERSION \
  HEPH_DEBEZIUM_SCRIPTING_VERSION HEPH_HIBERNATE_VERSION HEPH_PG_JDBC_VERSION \
  HEPH_GROOVY_VERSION HEPH_LOG4J_VERSION HEPH_REGISTRY_VERSION HEPH_APICURIO_CONVERTER_VERSION \
  HEPH_PG_BIN HEPH_PG_HOST HEPH_PG_PORT HEPH_PG_USER HEPH_PG_PASSWORD HEPH_PG_OS_USER \
  HEPH_KAFKA_HOST HEPH_KAFKA_PORT HEPH_KAFKA_CONTROLLER_PORT HEPH_KAFKA_HEAP \
  HEPH_STACK_CONNECTS HEPH_CONNECT_HOST HEPH_CONNECT_PORT HEPH_CONNECT2_PORT HEPH_CONNECT3_PORT HEPH_CONNECT_HEAP \
  HEPH_STACK_REGISTRY HEPH_REGISTRY_HOST HEPH_REGISTRY_PORT HEPH_REGISTRY_HEAP HEPH_REGISTRY_CACHE HEPH_REGISTRY_URL \
  HEPH_STACK_START_TIMEOUT HEPH_STACK_STOP_TIMEOUT HEPH_JAVA \
  HEPH_STACK_RUN HEPH_STACK_LOGS HEPH_KAFKA_LIB HEPH_CONNECT_LIB HEPH_STACK_PLUGINS HEPH_PG_DATA HEPH_SECRETS_FILE
