# shellcheck shell=bash
# Functions shared by the dev/stack scripts. Source env.sh before this file.
#
# Processes are found again only through the pid files this stack writes, and a pid counts as
# ours only if its command line carries our marker: never by process name.

heph_log() { printf '[stack] %s\n' "$*" >&2; }
heph_die() { heph_log "ERROR: $*"; exit 1; }

# Print the end of a log so that a failed start explains itself: only what was written since
# the last start banner (see heph_banner), so earlier runs do not mislead.
heph_tail() {
  local file=$1 lines=${2:-80} from
  if [[ -s $file ]]; then
    from=$(grep -n '^===== .* starting ' "$file" | tail -n 1 | cut -d: -f1)
    printf -- '----- last %s lines of %s -----\n' "$lines" "$file" >&2
    tail -n "+${from:-1}" "$file" | tail -n "$lines" >&2
    printf -- '----- end of %s -----\n' "$file" >&2
  else
    heph_log "(no output in $file)"
  fi
}

heph_banner() { printf '\n===== %s starting %s =====\n' "$(date -Is)" "$2" >>"$1"; }

# True when something accepts TCP connections on host:port.
heph_port_open() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# Refuse to start a component on a port that something else already holds: the component
# would die with a bind error that is harder to read than this.
heph_require_free_port() {
  local what=$1 host=$2 port=$3
  if heph_port_open "$host" "$port"; then
    heph_die "$what: port $host:$port is already in use by another process (set the port env var, see dev/stack/env.sh)"
  fi
}

# Install a missing tool from Debian's packages when we can (root + apt-get), so a fresh
# machine (CI) needs nothing by hand; otherwise say what to install.
heph_ensure_command() {
  local cmd=$1 pkg=$2
  command -v "$cmd" >/dev/null 2>&1 && return 0
  [[ -x $cmd ]] && return 0
  if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    heph_log "installing $pkg (for $cmd) from Debian packages"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >&2
  else
    heph_die "$cmd not found: install $pkg"
  fi
}

# PostgreSQL server binaries. The Debian package would also create and start a 'main' cluster
# on port 5432, which we do not want: turn that off before installing the server package.
heph_ensure_postgres() {
  [[ -x $HEPH_PG_BIN/postgres && -x $HEPH_PG_BIN/initdb ]] && return 0
  if [[ $EUID -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    heph_log "installing postgresql-15 from Debian packages"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-common >&2
    if [[ -f /etc/postgresql-common/createcluster.conf ]]; then
      sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >&2
  fi
  [[ -x $HEPH_PG_BIN/postgres ]] || heph_die "PostgreSQL 15 not found in $HEPH_PG_BIN: apt-get install -y postgresql-15 (or set HEPH_PG_BIN)"
}

# Poll a command until it succeeds; false after $1 seconds. Bounded polling, never a fixed sleep.
heph_wait() {
  local timeout=$1; shift
  local deadline=$((SECONDS + timeout))
  until "$@"; do
    ((SECONDS >= deadline)) && return 1
    sleep 0.5
  done
}

# ---------------------------------------------------------------------------------------------
# Java components (broker, registry, connect1..3)
# ---------------------------------------------------------------------------------------------

heph_pidfile() { printf '%s/%s.pid' "$HEPH_STACK_RUN" "$1"; }

# A system property that names the component and the work dir: it lets us tell our process
# from an unrelated one that got the same pid later.
heph_marker() { printf -- '-Dheph.stack.component=%s@%s' "$1" "$HEPH_STACK_DIR"; }

# Print the pid of component $1 if it is running; false otherwise.
heph_java_pid() {
  local file pid
  file=$(heph_pidfile "$1")
  [[ -f $file ]] || return 1
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [[ -r /proc/$pid/cmdline ]] || return 1
  # Zombies and foreign processes have no (or another) marker.
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$(heph_marker "$1")" || return 1
  printf '%s' "$pid"
}

# Flags for every JVM of the stack. Bounded heaps (set in env.sh) keep the whole stack within
# a small machine next to the tests; ExitOnOutOfMemoryError turns an OOM into a dead process
# that `up`/`status` can see instead of a hung one.
heph_jvm_flags() {
  local comp=$1
  printf '%s\n' \
    -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
    -Djava.awt.headless=true \
    "-Dlog4j2.configurationFile=${HEPH_STACK_SRC}/log4j2.properties" \
    "-Dheph.log.file=${HEPH_STACK_LOGS}/${comp}.log" \
    "$(heph_marker "$comp")"
}

# Run a Java main class in the foreground (tools such as StorageTool): component name $1,
# folder of jars $2, main class and arguments after.
heph_java_run() {
  local comp=$1 lib=$2; shift 2
  local flags
  mapfile -t flags < <(heph_jvm_flags "$comp")
  "$HEPH_JAVA" -Xmx256m "${flags[@]}" -cp "$lib/*" "$@"
}

# Start component $1 in the background: heap flags $2, then either a folder of jars $3, a main
# class $4 and its arguments, or an executable jar $3 (*.jar) and JVM options after it (system
# properties, which must stand before -jar: the schema registry takes its settings that way).
# Runs from $HEPH_STACK_DIR because connector configs name secrets by the relative path
# secrets/connect.properties. setsid puts the JVM in its own session, so that a Ctrl-C on
# `up` or the end of the calling shell (pytest, CI step) does not take the stack down.
heph_java_start() {
  local comp=$1 heap=$2 lib=$3; shift 3
  local out="${HEPH_STACK_LOGS}/${comp}.out" heap_flags flags launch
  read -r -a heap_flags <<<"$heap"
  mapfile -t flags < <(heph_jvm_flags "$comp")
  if [[ $lib == *.jar ]]; then
    launch=("$@" -jar "$lib")
  else
    launch=(-cp "$lib/*" "$@")
  fi
  heph_banner "$out" "$comp"
  heph_banner "${HEPH_STACK_LOGS}/${comp}.log" "$comp"
  (
    cd "$HEPH_STACK_DIR"
    # fd 8 is `up`'s lock (fd 9 the secrets lock): a JVM holding it would block every later `up`.
    exec 8>&- 9>&-
    exec setsid "$HEPH_JAVA" "${heap_flags[@]}" "${flags[@]}" "${launch[@]}" </dev/null >>"$out" 2>&1
  ) &
  printf '%s\n' "$!" >"$(heph_pidfile "$comp")"
}

# Wait until `check` succeeds while component $1 stays alive: 0 when ready, 1 when the process
# died, 2 on timeout.
heph_wait_java_ready() {
  local comp=$1 what=$2; shift 2
  local deadline=$((SECONDS + HEPH_STACK_START_TIMEOUT))
  until "$@"; do
    if ! heph_java_pid "$comp" >/dev/null; then
      heph_log "$comp exited while starting ($what)"
      return 1
    fi
    if ((SECONDS >= deadline)); then
      heph_log "$comp: timed out after ${HEPH_STACK_START_TIMEOUT}s waiting for $what"
      return 2
    fi
    sleep 0.5
  done
}

# Whether the last start logged in $1 died because its port was taken: a bind error, or Quarkus's
# own words for one (the registry).
heph_port_was_taken() {
  heph_tail "$1" 100000 2>&1 | grep -qE 'Address already in use|seems to be in use by another process'
}

heph_java_fail_logs() {
  heph_tail "${HEPH_STACK_LOGS}/$1.out" 40
  heph_tail "${HEPH_STACK_LOGS}/$1.log" 80
}

# Start component $1 and wait for it: $2 says what we wait for, $3 is a check function (no
# arguments); heap, jar folder, main class and arguments (or heap, jar and JVM options) follow
# as for heph_java_start.
# Our default ports lie inside Linux's ephemeral port range (32768-60999), so a client
# connection can hold one for a moment: when the process died of "Address already in use",
# try again (bounded) instead of failing the whole run.
heph_java_launch() {
  local comp=$1 what=$2 check=$3; shift 3
  local log="${HEPH_STACK_LOGS}/${comp}.log" attempt rc
  for attempt in 1 2 3; do
    heph_java_start "$comp" "$@"
    rc=0
    heph_wait_java_ready "$comp" "$what" "$check" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 1 && attempt < 3)) && heph_port_was_taken "$log"; then
      heph_log "$comp: its port was taken (a client's ephemeral port?): retrying"
      sleep 1
      continue
    fi
    heph_java_fail_logs "$comp"
    return 1
  done
}

# Stop component $1: TERM, wait up to HEPH_STACK_STOP_TIMEOUT, then KILL.
heph_java_stop() {
  local comp=$1 pid deadline
  if ! pid=$(heph_java_pid "$comp"); then
    rm -f "$(heph_pidfile "$comp")"
    return 0
  fi
  heph_log "stopping $comp (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$((SECONDS + HEPH_STACK_STOP_TIMEOUT))
  while kill -0 "$pid" 2>/dev/null && heph_java_pid "$comp" >/dev/null; do
    if ((SECONDS >= deadline)); then
      heph_log "$comp did not stop within ${HEPH_STACK_STOP_TIMEOUT}s: KILL"
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.5
  done
  rm -f "$(heph_pidfile "$comp")"
}

# Connect component name for cluster number $1 and its REST port.
heph_connect_port() {
  case $1 in
    1) printf '%s' "$HEPH_CONNECT_PORT" ;;
    2) printf '%s' "$HEPH_CONNECT2_PORT" ;;
    *) printf '%s' "$HEPH_CONNECT3_PORT" ;;
  esac
}
heph_connect_url() { printf 'http://%s:%s' "$HEPH_CONNECT_HOST" "$(heph_connect_port "$1")"; }

# Connect is ready when its REST API serves requests that need the herder and both Debezium
# plugins are loaded.
heph_connect_ready() {
  local url plugins
  url=$(heph_connect_url "$1")
  plugins=$(curl -fsS --max-time 5 "$url/connector-plugins" 2>/dev/null) || return 1
  [[ $plugins == *'"io.debezium.connector.postgresql.PostgresConnector"'* ]] || return 1
  [[ $plugins == *'"io.debezium.connector.jdbc.JdbcSinkConnector"'* ]] || return 1
  curl -fsS --max-time 5 -o /dev/null "$url/connectors" 2>/dev/null
}

# Whether Connect cluster $1 lists Apicurio's AvroConverter: a worker started before
# dev/stack/fetch added its plugin folder does not, until it restarts.
heph_connect_has_avro_converter() {
  local plugins
  plugins=$(curl -fsS --max-time 5 "$(heph_connect_url "$1")/connector-plugins?connectorsOnly=false" 2>/dev/null) || return 1
  [[ $plugins == *'"io.apicurio.registry.utils.converter.AvroConverter"'* ]]
}

# The plugin versions dev/stack/fetch installs beside the current ones (KIP-891), one
# "class version folder current" a line: each folder's class at its version, and the version
# unpinned connectors of that class must get (the newest, in Connect's Maven order).
heph_extra_versions() {
  local pg=io.debezium.connector.postgresql.PostgresConnector jdbc=io.debezium.connector.jdbc.JdbcSinkConnector
  [[ -z $HEPH_DEBEZIUM_OLD_VERSION ]] ||
    echo "$pg $HEPH_DEBEZIUM_OLD_VERSION debezium-connector-postgres-$HEPH_DEBEZIUM_OLD_VERSION $HEPH_DEBEZIUM_VERSION"
  [[ -z $HEPH_DEBEZIUM_JDBC_OLD_VERSION ]] ||
    echo "$jdbc $HEPH_DEBEZIUM_JDBC_OLD_VERSION debezium-connector-jdbc-$HEPH_DEBEZIUM_JDBC_OLD_VERSION $HEPH_DEBEZIUM_JDBC_VERSION"
  [[ -z $HEPH_DEBEZIUM_JDBC_BROKEN_VERSION ]] ||
    echo "$jdbc $HEPH_DEBEZIUM_JDBC_BROKEN_VERSION debezium-connector-jdbc-broken $HEPH_DEBEZIUM_JDBC_VERSION"
}

# What Connect cluster $1 lacks of those, one problem a line (nothing: it lists them all): a
# version it does not list (a worker started before dev/stack/fetch added the folder does not,
# until it restarts), or a newest version that is not the current one.
heph_connect_version_problems() {
  local plugins cls version folder current listed
  plugins=$(curl -fsS --max-time 5 "$(heph_connect_url "$1")/connector-plugins" 2>/dev/null) || {
    echo "no answer from $(heph_connect_url "$1")/connector-plugins"
    return 0
  }
  while read -r cls version folder current; do
    # One plugin object a line, oldest version first: its class and its version.
    listed=$(tr '}' '\n' <<<"$plugins" | grep -F "\"$cls\"" | sed -n 's/.*"version":"\([^"]*\)".*/\1/p')
    grep -qxF "$version" <<<"$listed" ||
      echo "does not list $cls $version (plugins/$folder)"
    [[ $(tail -n1 <<<"$listed") == "$current" ]] ||
      echo "lists $cls $(tail -n1 <<<"$listed") as the newest, not $current: unpinned connectors would run it"
  done < <(heph_extra_versions) | awk '!seen[$0]++'
}

# ---------------------------------------------------------------------------------------------
# Schema registry (Apicurio Registry, built by dev/stack/fetch into HEPH_REGISTRY_CACHE)
# ---------------------------------------------------------------------------------------------

# The cache folder of the registry this checkout builds: named by the version and a digest of
# every file of the build (dev/stack/registry, maven-settings.xml), so a change is built beside
# the old folder, which a running registry may still be using, instead of over it.
heph_registry_home() {
  local sum
  sum=$(
    cd "$HEPH_STACK_SRC" || exit 1
    find registry -name target -prune -o -type f -print | LC_ALL=C sort | xargs sha256sum
    sha256sum maven-settings.xml
  )
  printf '%s/%s-%s' "$HEPH_REGISTRY_CACHE" "$HEPH_REGISTRY_VERSION" "$(sha256sum <<<"$sum" | cut -c1-12)"
}

# The executable jar in a built registry folder (its libraries are in lib/ beside it).
heph_registry_jar() { printf '%s/apicurio-registry-runner.jar' "$(heph_registry_home)"; }

# Ready when the Confluent-compatible API answers: what Confluent clients (and hephaestus's
# schema_registry_url) call. The converter uses /apis/registry/v2 of the same server.
heph_registry_ready() {
  curl -fsS --max-time 5 -o /dev/null "$HEPH_REGISTRY_URL/apis/ccompat/v7/subjects" 2>/dev/null
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------

# The OS account that owns the cluster when we run as root (initdb and postgres refuse root).
heph_pg_os_user() {
  if [[ -z $HEPH_PG_OS_USER ]]; then
    if id -u postgres >/dev/null 2>&1; then HEPH_PG_OS_USER=postgres; else HEPH_PG_OS_USER=hephaestus; fi
  fi
  if [[ $EUID -eq 0 ]] && ! id -u "$HEPH_PG_OS_USER" >/dev/null 2>&1; then
    heph_log "creating system user $HEPH_PG_OS_USER to run PostgreSQL"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$HEPH_PG_OS_USER"
  fi
  printf '%s' "$HEPH_PG_OS_USER"
}

# Run a PostgreSQL server tool as the cluster's owner.
heph_as_pg() {
  if [[ $EUID -eq 0 ]]; then
    # From /, which the cluster's owner may enter: from a checkout under a private home (/root),
    # every PostgreSQL tool says 'could not change directory to "/root": Permission denied'.
    (cd / && runuser -u "$(heph_pg_os_user)" -- "$@")
  else
    "$@"
  fi
}

heph_pg_running() {
  [[ -f $HEPH_PG_DATA/PG_VERSION ]] || return 1
  heph_as_pg "$HEPH_PG_BIN/pg_ctl" status -D "$HEPH_PG_DATA" >/dev/null 2>&1
}

heph_pg_pid() { [[ -f $HEPH_PG_DATA/postmaster.pid ]] && head -n1 "$HEPH_PG_DATA/postmaster.pid"; }

# psql as the superuser over TCP (the way tests and connectors connect), stopping on errors.
heph_psql() {
  local db=$1; shift
  PGPASSWORD=$HEPH_PG_PASSWORD PGCONNECT_TIMEOUT=5 "$HEPH_PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 \
    -h "$HEPH_PG_HOST" -p "$HEPH_PG_PORT" -U "$HEPH_PG_USER" -d "$db" "$@"
}

# ---------------------------------------------------------------------------------------------
# Connect secrets file (read by FileConfigProvider as ${file:secrets/connect.properties:KEY})
# ---------------------------------------------------------------------------------------------

# Write the keys for database $1, replacing earlier ones. tests/stack/support.py writes the
# same file under the same lock; the rename is atomic so Connect, which re-reads the file on
# every resolution, never sees half a file.
heph_secrets_add_db() {
  local db=$1 file=$HEPH_SECRETS_FILE
  [[ $db =~ ^[A-Za-z0-9_]+$ ]] || heph_die "unsupported database name for secrets: $db"
  mkdir -p "$(dirname "$file")"
  local want
  want=$(
    printf '%s_hostname=%s\n' "$db" "$HEPH_PG_HOST"
    printf '%s_port=%s\n' "$db" "$HEPH_PG_PORT"
    printf '%s_username=%s\n' "$db" "$HEPH_PG_USER"
    printf '%s_password=%s\n' "$db" "$HEPH_PG_PASSWORD"
    printf '%s_dbname=%s\n' "$db" "$db"
    printf '%s_url=jdbc:postgresql://%s:%s/%s\n' "$db" "$HEPH_PG_HOST" "$HEPH_PG_PORT" "$db"
  )
  (
    flock 9
    # Already there, all six keys with these values: leave the file alone.
    if [[ -f $file ]] && [[ $(grep -cxF -f <(printf '%s\n' "$want") "$file") == 6 ]]; then
      exit 0
    fi
    local tmp
    tmp=$(mktemp "$file.XXXXXX")
    {
      if [[ -f $file ]]; then
        grep -vE "^${db}_(hostname|port|username|password|dbname|url)=" "$file" || true
      fi
      printf '%s\n' "$want"
    } >"$tmp"
    chmod 600 "$tmp"
    mv -f "$tmp" "$file"
  ) 9>"$file.lock"
}
