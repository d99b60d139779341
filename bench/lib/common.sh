# Shared by the bench/<scenario> scripts (sourced, bash). Everything a scenario starts runs on
# loopback, on free ports, in one temp directory, and is stopped by the EXIT trap.
#
# Environment every scenario honours:
#   READINGSD, READINGSD_PUBLISH   binaries to measure (default: built from this tree in bench/.build)
#   READINGSD_FLAGS                extra command-line flags for each readingsd measured (not the
#                                  callgrind ones), e.g. "--http.busy_poll_us=0"; in the header
#   BENCH_KEEP=1                   keep the temp directory (data dirs, logs) after the run
#   BENCH_NO_INSTALL=1             do not apt-get install missing peers (fail instead)

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(dirname "$BENCH_DIR")
BUILD="$BENCH_DIR/.build"
PY=/usr/bin/python3            # Debian's python3: python3-psycopg2 is installed for it
BENCH_PIDS=()                  # stopped in reverse order at exit
BENCH_PG_DATA=()               # postgres clusters to stop with pg_ctl
WORK=$(mktemp -d /tmp/readingsd-bench.XXXXXX)

bench_cleanup() {
  local rc=$?
  set +e
  for d in "${BENCH_PG_DATA[@]}"; do
    su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$d' -m fast -w stop" >/dev/null 2>&1
  done
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${BENCH_PIDS[i]}"; done
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "bench: kept $WORK" >&2; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
die() { log "FAILED: $*"; exit 1; }
now() { date +%s.%N; }
# calc EXPR: floating point arithmetic (python, so ** and round() work)
calc() { "$PY" -c "print($1)"; }

# Sends TERM to a pid we started, waits up to 15 s, then KILL.
stop_pid() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 150; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# Runs "$@" in the background with output to $WORK/<name>.log; sets LAST_PID.
start_bg() {
  local name=$1
  shift
  "$@" >"$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  BENCH_PIDS+=("$LAST_PID")
}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {  # wait_port PORT [SECONDS]
  local port=$1 deadline=$((SECONDS + ${2:-30}))
  until "$PY" -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)))" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || die "nothing listens on port $port"
    sleep 0.1
  done
}

wait_http_ok() {  # wait_http_ok URL [SECONDS]
  local url=$1 deadline=$((SECONDS + ${2:-60}))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$url")" = 200 ]; do
    [ $SECONDS -lt $deadline ] || die "$url did not answer 200"
    sleep 0.1
  done
}

# Installs the Debian packages that are missing (the peers are started by us, never as the
# system services: those keep their default ports and data).
ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "${BENCH_NO_INSTALL:-0}" = 1 ] && die "missing packages: ${missing[*]}"
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Builds the drivers, readingsd and readingsd-publish from this tree (incremental).
ensure_built() {
  ensure_packages cmake ninja-build g++ libpq-dev
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S "$BENCH_DIR" -B "$BUILD" -G Ninja >"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log" >&2; die "cmake"; }
  fi
  local targets=(bench_drivers)
  [ -n "${READINGSD:-}" ] || targets+=(readingsd)
  [ -n "${READINGSD_PUBLISH:-}" ] || targets+=(readingsd-publish)
  nice ninja -C "$BUILD" "${targets[@]}" >"$WORK/build.log" 2>&1 || { tail -50 "$WORK/build.log" >&2; die "build"; }
  READINGSD=${READINGSD:-$BUILD/readingsd/readingsd}
  READINGSD_PUBLISH=${READINGSD_PUBLISH:-$BUILD/readingsd/tools/readingsd-publish}
}

# Results: everything printed from here on also goes to bench/results/<name>-<date>.txt.
start_results() {  # start_results NAME "$0 $*"
  mkdir -p "$BENCH_DIR/results"
  RESULT="$BENCH_DIR/results/$1-$(date -u +%Y%m%dT%H%M%SZ).txt"
  exec > >(tee -a "$RESULT") 2> >(tee -a "$RESULT" >&2)
  echo "# bench/$1 — $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "# reproduce: $2"
  echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# readingsd: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD -- storage ingest query metrics daemon config tools 2>/dev/null || echo ' (+ uncommitted changes)')${READINGSD_FLAGS:+ with READINGSD_FLAGS=\"$READINGSD_FLAGS\"}"
}

# --size smoke|small|default (also BENCH_SIZE=...); sets SIZE.
parse_size() {
  SIZE=${BENCH_SIZE:-default}
  while [ $# -gt 0 ]; do
    case "$1" in
      --size) SIZE=$2; shift 2 ;;
      --size=*) SIZE=${1#--size=}; shift ;;
      --smoke) SIZE=smoke; shift ;;
      -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
      *) die "unknown argument $1 (see --help)" ;;
    esac
  done
  case "$SIZE" in smoke|small|default) ;; *) die "--size must be smoke, small or default" ;; esac
}

# --- mosquitto: the shipped snippet plus a loopback listener and a private persistence dir ---

start_mosquitto() {  # start_mosquitto NAME; sets MQTT_PORT, MQTT_PID
  local name=$1 dir="$WORK/$1"
  mkdir -p "$dir"
  MQTT_PORT=$(free_port)
  {
    echo "# --- $REPO/systemd/mosquitto-readingsd.conf"
    cat "$REPO/systemd/mosquitto-readingsd.conf"
    echo "# --- bench harness"
    echo "listener $MQTT_PORT 127.0.0.1"
    echo "allow_anonymous true"
    # as root, mosquitto would switch to user mosquitto, which cannot write our temp dir
    [ "$(id -u)" = 0 ] && echo "user root"
    echo "persistence_location $dir/"
  } >"$dir/mosquitto.conf"
  start_bg "$name" /usr/sbin/mosquitto -c "$dir/mosquitto.conf"
  MQTT_PID=$LAST_PID
  wait_port "$MQTT_PORT" 10
}

# --- readingsd ---

start_readingsd() {  # start_readingsd NAME DATA_DIR MQTT_PORT [extra flags]; sets HTTP_PORT, RD_PID
  local name=$1 data=$2 mqtt_port=$3
  shift 3
  HTTP_PORT=$(free_port)
  start_bg "$name" "$READINGSD" --storage.data_dir="$data" --http.listen="127.0.0.1:$HTTP_PORT" \
    --mqtt.host=127.0.0.1 --mqtt.port="$mqtt_port" --mqtt.client_id="bench-$name" --log.level=warn "$@" ${READINGSD_FLAGS:-}
  RD_PID=$LAST_PID
  wait_port "$HTTP_PORT" 30
}

# CPU seconds (user + system) a live process has used.
cpu_s() { awk '{ printf "%.2f", ($14 + $15) / 100 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# MQTT ingest into a fresh readingsd ($READINGSD) on a fresh data dir through a fresh mosquitto:
# N readings of D devices (readingsd-publish: reading i -> device i % D, ts = start + (i / D) s,
# PAD pads the ~120 B JSON), QoS 1, as fast as PUBACKs allow. The clock starts when the publisher
# starts and stops when readingsd_readings_ingested_total says the last reading is in the WAL
# (durable against a crash, queryable); then three devices' partitions must hold exactly what was
# published to them.
#   mqtt_ingest TAG N D PAD [readingsd flags]; sets R_S (seconds), R_BROKER, R_CPU (CPU seconds of
#   the broker and readingsd), R_BATCHES (write batches)
mqtt_ingest() {
  local tag=$1 n_want=$2 d=$3 pad=$4
  shift 4
  start_mosquitto "broker-readingsd-$tag"
  start_readingsd "readingsd-$tag" "$WORK/data-$tag" "$MQTT_PORT" "$@"
  wait_http_ok "http://127.0.0.1:$HTTP_PORT/readyz" 60
  local t0 t1 n=0
  t0=$(now)
  "$READINGSD_PUBLISH" --host 127.0.0.1 --port "$MQTT_PORT" --count "$n_want" --devices "$d" --payload-pad "$pad" \
    --timeout 3600 >"$WORK/pub-readingsd-$tag.log" 2>&1 || die "readingsd-publish (readingsd $tag): $(cat "$WORK/pub-readingsd-$tag.log")"
  while [ "$n" -lt "$n_want" ]; do
    n=$(metric "$HTTP_PORT" readingsd_readings_ingested_total)
    [ "$n" -ge "$n_want" ] || sleep 0.05
  done
  t1=$(now)
  local dev want got
  for dev in 0 $((d / 2)) $((d - 1)); do
    want=$((n_want / d + (dev < n_want % d ? 1 : 0)))
    got=$(curl -s "http://127.0.0.1:$HTTP_PORT/v1/devices/$(printf 'dev%05d' $((dev + 1)))/readings?limit=10000" |
      "$PY" -c 'import json,sys; print(json.load(sys.stdin)["count"])')
    [ "$got" = "$want" ] || die "readingsd $tag: device $dev holds $got readings, expected $want"
  done
  R_BATCHES=$(metric "$HTTP_PORT" readingsd_write_batch_size_count)
  R_BROKER=$(cpu_s "$MQTT_PID")
  R_CPU=$(cpu_s "$RD_PID")
  stop_pid "$RD_PID"
  stop_pid "$MQTT_PID"
  rm -rf "$WORK/data-$tag"
  R_S=$(calc "$t1 - $t0")
}

# metric PORT NAME: the value of an unlabelled series on readingsd's /metrics, as an integer.
metric() {
  curl -s "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n { printf "%.0f\n", $2; found = 1 } END { if (!found) print 0 }'
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }

du_bytes() { du -sb "$1" | cut -f1; }

# --- the peers, each on free loopback ports with its data in $WORK/<name> ---

start_vm() {  # start_vm NAME; sets VM_PORT, VM_PID, VM_DIR
  VM_DIR="$WORK/$1"
  VM_PORT=$(free_port)
  mkdir -p "$VM_DIR"
  # The readings are dated 2026-06-23 on: a long retention keeps VictoriaMetrics from dropping
  # them as too old (its default is one month).
  start_bg "$1" /usr/bin/victoria-metrics -storageDataPath="$VM_DIR" -httpListenAddr="127.0.0.1:$VM_PORT" \
    -retentionPeriod=100y -loggerLevel=WARN
  VM_PID=$LAST_PID
  wait_http_ok "http://127.0.0.1:$VM_PORT/health" 60
}

start_influx() {  # start_influx NAME; sets INFLUX_PORT, INFLUX_PID, INFLUX_DIR
  INFLUX_DIR="$WORK/$1"
  INFLUX_PORT=$(free_port)
  local rpc_port
  rpc_port=$(free_port)
  mkdir -p "$INFLUX_DIR"
  cat >"$INFLUX_DIR/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:$rpc_port"
[meta]
  dir = "$INFLUX_DIR/meta"
[data]
  dir = "$INFLUX_DIR/data"
  wal-dir = "$INFLUX_DIR/wal"
  # 0s, the default, fsyncs each write request at once. InfluxDB 1.x cannot acknowledge before
  # the fsync; a longer delay only makes a single writer wait that long per request.
  wal-fsync-delay = "0s"
  index-version = "inmem"
  query-log-enabled = false
  # write the in-memory cache to TSM files and compact soon after the load, so the size on
  # disk is the compacted one
  cache-snapshot-write-cold-duration = "2s"
  compact-full-write-cold-duration = "5s"
[retention]
  enabled = false
[shard-precreation]
  enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$INFLUX_PORT"
  log-enabled = false
  max-row-limit = 0
[continuous_queries]
  enabled = false
CONF
  start_bg "$1" /usr/bin/influxd -config "$INFLUX_DIR/influxdb.conf"
  INFLUX_PID=$LAST_PID
  wait_port "$INFLUX_PORT" 60
  local deadline=$((SECONDS + 60))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$INFLUX_PORT/ping")" = 204 ]; do
    [ $SECONDS -lt $deadline ] || die "influxd did not answer /ping"
    sleep 0.1
  done
  curl -sf -XPOST "http://127.0.0.1:$INFLUX_PORT/query" --data-urlencode 'q=CREATE DATABASE bench' >/dev/null ||
    die "influxdb: CREATE DATABASE failed"
}

start_pg() {  # start_pg NAME; sets PG_PORT, PG_DIR, PG_DSN
  PG_DIR="$WORK/$1"
  PG_PORT=$(free_port)
  local bin=/usr/lib/postgresql/15/bin
  chmod 711 "$WORK"  # postgres runs as user postgres and must reach its directory
  mkdir -p "$PG_DIR"
  chown postgres: "$PG_DIR"
  su postgres -s /bin/sh -c "$bin/initdb -D '$PG_DIR/data' -U postgres --auth=trust -E UTF8 --no-sync" >"$WORK/$1-initdb.log" 2>&1 ||
    { cat "$WORK/$1-initdb.log" >&2; die "initdb"; }
  # synchronous_commit = off: like readingsd (storage.sync = false), a commit is acknowledged
  # before its WAL is fsynced. Bigger shared_buffers and max_wal_size are the usual bulk-load
  # settings; everything else is initdb's default.
  su postgres -s /bin/sh -c "$bin/pg_ctl -D '$PG_DIR/data' -l '$PG_DIR/postgres.log' -w -t 60 \
    -o \"-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories='$PG_DIR' \
        -c synchronous_commit=off -c shared_buffers=256MB -c max_wal_size=4GB -c checkpoint_timeout=30min\" start" \
    >"$WORK/$1-pg_ctl.log" 2>&1 || { cat "$WORK/$1-pg_ctl.log" "$PG_DIR/postgres.log" >&2; die "pg_ctl start"; }
  BENCH_PG_DATA+=("$PG_DIR/data")
  PG_DSN="host=127.0.0.1 port=$PG_PORT user=postgres dbname=postgres"
}

stop_pg() {
  su postgres -s /bin/sh -c "/usr/lib/postgresql/15/bin/pg_ctl -D '$PG_DIR/data' -m fast -w stop" >/dev/null 2>&1 || true
}

psql_q() { psql "$PG_DSN" -XAtq -c "$1"; }

# VictoriaMetrics: merge all parts (as CompactAll does for readingsd) and wait for the merge.
vm_settle() {
  curl -sf "http://127.0.0.1:$VM_PORT/internal/force_merge?partition_prefix=" >/dev/null
  local deadline=$((SECONDS + 300)) active
  sleep 1
  while [ $SECONDS -lt $deadline ]; do
    active=$(curl -s "http://127.0.0.1:$VM_PORT/metrics" | awk '$1 == "vm_active_force_merges" { print $2 }')
    { [ -z "$active" ] || [ "$active" = 0 ]; } && break
    sleep 0.5
  done
}

# InfluxDB: wait until the WAL was snapshotted into TSM files and the size stopped changing.
influx_settle() {
  local deadline=$((SECONDS + ${1:-180})) last=-1 size stable=0
  while [ $SECONDS -lt $deadline ]; do
    size=$(du_bytes "$INFLUX_DIR")
    if [ "$size" = "$last" ] && [ -z "$(find "$INFLUX_DIR/wal" -name '*.wal' -size +1k)" ]; then
      stable=$((stable + 1))
      [ $stable -ge 5 ] && return 0
    else
      stable=0
    fi
    last=$size
    sleep 1
  done
  log "influxdb: still changing after the wait; measuring anyway"
}

PG_SCHEMA="CREATE TABLE readings (device_id text NOT NULL, ts timestamptz NOT NULL, temperature float8,
  humidity float8, pad text, PRIMARY KEY (device_id, ts))"

# callgrind_top FILE: the top functions of a callgrind profile, inclusive and self, as markdown.
callgrind_top() {
  set +o pipefail  # head closes the pipes early
  local tidy='s/std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >/std::string/g; s/nlohmann::json_abi_v3_11_2::basic_json<[^(]*>/json/g; s/nlohmann::json_abi_v3_11_2::/nlohmann::/g'
  echo
  echo "inclusive (a function with everything it calls; thread, asio and beast frames left out), top 30:"
  echo '```'
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null | sed -n '/PROGRAM TOTALS/,$p' | grep -v '^-*$' |
    grep -Ev 'boost::asio|boost::beast|start_thread|\?\?\?:0x|std::thread|std::_Function_handler|invoke\.h' |
    sed "$tidy" | cut -c1-200 | head -32
  echo '```'
  echo "self (instructions in the function's own code), top 25:"
  echo '```'
  callgrind_annotate "$1" 2>/dev/null | sed -n '/PROGRAM TOTALS/,$p' | grep -v '^-*$' | sed "$tidy" | cut -c1-200 | sed -n '1,27p'
  echo '```'
  if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "(raw profile: $1)"; fi
  set -o pipefail
  return 0
}
