#!/usr/bin/env bash
# FerryMQ side by side with ActiveMQ 5.17 (Debian), coilmq (PyPI) and RabbitMQ's STOMP plugin
# (Debian), on this machine, in one run, one broker at a time; FerryMQ and RabbitMQ (its
# rabbitmq_amqp1_0 plugin) also over AMQP 1.0 (ferrymq-amqp, rabbitmq-amqp: the same scenarios,
# the same broker process right after its STOMP run; AMQP=0 leaves them out); then writes docs/benchmarks.md and
# the picture it shows (docs/img/benchmarks.png, drawn with matplotlib: pip install 'ferrymq[plot]').
#
#   benchmarks/compare.sh                       # everything, default counts
#   BROKERS="ferrymq activemq" benchmarks/compare.sh
#   BENCH_ARGS="--count 20000 --warmup 2000" benchmarks/compare.sh
#   TLS=0 benchmarks/compare.sh                 # without the TLS runs
#
# With TLS=1 (the default) FerryMQ and ActiveMQ also run the queue and persistent scenarios over
# TLS (ferrymq-tls, activemq-tls): FerryMQ on an ssl:// listener, ActiveMQ on stomp+ssl://, both
# with the same PKCS#12 keystore (a test CA and certificate made under benchmarks/work/tls).
#
# It installs what is missing (apt-get, pip into benchmarks/work/coilmq-venv), runs each broker in
# the foreground under its control on free 127.0.0.1 ports with its data under benchmarks/work,
# stops it, and never leaves one running. Every wait is bounded. Re-running starts from clean
# data directories; installed packages are kept.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/work
RESULTS=$WORK/results
LOGS=$WORK/logs
PY=${PYTHON:-$ROOT/.venv/bin/python}
BROKERS=${BROKERS:-"ferrymq activemq coilmq rabbitmq"}
BENCH_ARGS=${BENCH_ARGS:-"--count 100000 --warmup 10000 --max-seconds 60"}
OUTPUT=${OUTPUT:-$ROOT/docs/benchmarks.md}
PLOT=${PLOT:-$(dirname "$OUTPUT")/img/benchmarks.png}
START_TIMEOUT_S=${START_TIMEOUT_S:-120}
BENCH_TIMEOUT_S=${BENCH_TIMEOUT_S:-1200}
STOP_TIMEOUT_S=30
TLS=${TLS:-1}
AMQP=${AMQP:-1}
TLS_DIR=$WORK/tls
TLS_PASSWORD=changeit
TLS_SCENARIOS=(--scenario queue --scenario queue-persistent)

BROKER_PID=""
EPMD_PORT=""

log() { printf '%s compare: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT PID NAME: until something listens on PORT, PID dies, or START_TIMEOUT_S passes.
wait_port() {
    local port=$1 pid=$2 name=$3 tries=$((START_TIMEOUT_S * 5))
    for ((i = 0; i < tries; i++)); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            log "$name exited before listening (see $LOGS/$name.log)"
            return 1
        fi
        sleep 0.2
    done
    log "$name not listening on $port after ${START_TIMEOUT_S}s"
    return 1
}

# stop_pid PID: SIGTERM, wait up to STOP_TIMEOUT_S, then SIGKILL.
stop_pid() {
    local pid=$1
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < STOP_TIMEOUT_S * 5; i++)); do
        kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
        sleep 0.2
    done
    log "pid $pid ignored SIGTERM for ${STOP_TIMEOUT_S}s; killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

stop_epmd() {
    if [[ -n "$EPMD_PORT" ]] && command -v epmd >/dev/null; then
        ERL_EPMD_PORT=$EPMD_PORT timeout 10 epmd -kill >/dev/null 2>&1 || true
    fi
    EPMD_PORT=""
}

cleanup() {
    if [[ -n "$BROKER_PID" ]]; then
        log "stopping broker pid $BROKER_PID"
        stop_pid "$BROKER_PID"
        BROKER_PID=""
    fi
    stop_epmd
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failed() { # failed NAME REASON: the page shows the reason instead of numbers
    log "$1: $2"
    printf '%s\n' "$2" >"$RESULTS/$1.failed"
}

abandon() { # abandon NAME REASON: a broker that did not come up is stopped and reported
    failed "$1" "$2"
    stop_pid "$BROKER_PID"
    BROKER_PID=""
    stop_epmd
}

apt_install() { # apt_install PACKAGE: install it from Debian unless present
    if dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; then
        return 0
    fi
    log "installing $1 from Debian"
    if [[ ! -f "$WORK/.apt-updated" ]]; then
        timeout 600 apt-get update -q && touch "$WORK/.apt-updated"
    fi
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q "$1"
}

# make_certificates: a test CA and a server certificate for 127.0.0.1, as PKCS#12 and PEM.
make_certificates() {
    [[ -f "$TLS_DIR/server.p12" ]] && return 0
    "$PY" -c 'import sys, pathlib
from ferrymq.testing.certificates import make_certificates
make_certificates(pathlib.Path(sys.argv[1]))' "$TLS_DIR"
}

# tls_url PORT: the ssl:// URL ferrymq bench dials, trusting the test CA.
tls_url() { echo "ssl://127.0.0.1:$1?trustStore=$TLS_DIR/ca.pem"; }

# run_bench NAME URL PID [bench options...]: the same scenarios for every broker.
run_bench() {
    local name=$1 url=$2 pid=$3
    shift 3
    # shellcheck disable=SC2086 # BENCH_ARGS is a list of options
    local cmd=("$PY" -m ferrymq.cli.main bench "$url" --label "$name"
        --broker-pid "$pid" --output "$RESULTS/$name.json" $BENCH_ARGS "$@")
    printf '%s ' ferrymq "${cmd[@]:3}" | sed -e "s|$ROOT/||g" -e 's/ $//' >>"$RESULTS/$name.commands"
    echo >>"$RESULTS/$name.commands"
    log "$name: benchmarking $url"
    if ! timeout "$BENCH_TIMEOUT_S" "${cmd[@]}" >"$LOGS/$name-bench.txt" 2>&1; then
        log "$name: ferrymq bench reported problems (see $LOGS/$name-bench.txt)"
    fi
    cat "$LOGS/$name-bench.txt" >&2
    [[ -f "$RESULTS/$name.json" ]] || failed "$name" "ferrymq bench wrote no report (see the log)"
}

bench_ferrymq() {
    local port admin tls_port amqp_port data=$WORK/ferrymq-data config=$WORK/ferrymq-tls.xml
    port=$(free_port)
    admin=$(free_port)
    tls_port=$(free_port)
    amqp_port=$(free_port)
    rm -rf "$data"
    make_certificates
    # The broker's key for its ssl:// listener: the keystore ActiveMQ's sslContext uses too.
    cat >"$config" <<XML
<beans xmlns="http://www.springframework.org/schema/beans">
  <broker xmlns="http://activemq.apache.org/schema/core" brokerName="localhost">
    <sslContext>
      <sslContext keyStore="$TLS_DIR/server.p12" keyStorePassword="$TLS_PASSWORD"/>
    </sslContext>
  </broker>
</beans>
XML
    # The admin API is how ferrymq bench removes the queues it created (STOMP cannot).
    local cmd=("$PY" -m ferrymq.cli.main broker --config "$config" --listen "stomp://127.0.0.1:$port"
        --listen "ssl://127.0.0.1:$tls_port" --listen "amqp://127.0.0.1:$amqp_port" --data "$data"
        --admin "127.0.0.1:$admin")
    printf '%s ' ferrymq "${cmd[@]:3}" | sed -e "s|$ROOT/||g" -e 's/ $//' >"$RESULTS/ferrymq.commands"
    echo >>"$RESULTS/ferrymq.commands"
    "${cmd[@]}" >"$LOGS/ferrymq.log" 2>&1 &
    BROKER_PID=$!
    wait_port "$port" "$BROKER_PID" ferrymq || { abandon ferrymq "did not start"; return 0; }
    run_bench ferrymq "tcp://127.0.0.1:$port" "$BROKER_PID" --admin "127.0.0.1:$admin"
    if [[ "$AMQP" == 1 ]]; then
        cp "$RESULTS/ferrymq.commands" "$RESULTS/ferrymq-amqp.commands"
        run_bench ferrymq-amqp "amqp://127.0.0.1:$amqp_port" "$BROKER_PID" --admin "127.0.0.1:$admin"
    fi
    if [[ "$TLS" == 1 ]]; then
        cp "$RESULTS/ferrymq.commands" "$RESULTS/ferrymq-tls.commands"
        run_bench ferrymq-tls "$(tls_url "$tls_port")" "$BROKER_PID" --admin "127.0.0.1:$admin" \
            "${TLS_SCENARIOS[@]}"
    fi
    stop_pid "$BROKER_PID"
    BROKER_PID=""
}

bench_activemq() {
    apt_install activemq || { failed activemq "apt-get install activemq failed"; return 0; }
    command -v java >/dev/null || { failed activemq "no java on PATH"; return 0; }
    local home=/usr/share/activemq base=$WORK/activemq port tls_port
    port=$(free_port)
    tls_port=$(free_port)
    make_certificates
    rm -rf "$base"
    mkdir -p "$base/conf" "$base/data" "$base/tmp"
    cp "$HERE/activemq/activemq.xml" "$HERE/activemq/log4j.properties" "$base/conf/"
    # What /usr/bin/activemq runs for "start", in the foreground: the console "start" task
    # keeps the JVM in the foreground until SIGTERM. Heap as in ActiveMQ's own bin/env.
    local cmd=(java -Xms1G -Xmx1G
        --add-reads=java.xml=java.logging
        --add-opens java.base/java.security=ALL-UNNAMED
        --add-opens java.base/java.net=ALL-UNNAMED
        --add-opens java.base/java.lang=ALL-UNNAMED
        --add-opens java.base/java.util=ALL-UNNAMED
        --add-opens java.naming/javax.naming.spi=ALL-UNNAMED
        --add-opens java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED
        --add-opens java.base/java.util.concurrent=ALL-UNNAMED
        --add-opens java.base/java.util.concurrent.atomic=ALL-UNNAMED
        "-Dlog4j.configuration=file:$base/conf/log4j.properties"
        "-Dbench.stomp.port=$port"
        "-Dbench.stomp.ssl.port=$tls_port" "-Dbench.keystore=$TLS_DIR/server.p12"
        "-Dbench.keystore.password=$TLS_PASSWORD"
        "-Dactivemq.classpath=$base/conf"
        "-Dactivemq.home=$home" "-Dactivemq.base=$base" "-Dactivemq.conf=$base/conf"
        "-Dactivemq.data=$base/data" "-Djava.io.tmpdir=$base/tmp"
        -jar "$home/bin/activemq.jar" start "xbean:file:$base/conf/activemq.xml")
    printf '%q ' "${cmd[@]}" | sed -e "s|$ROOT/||g" -e 's/ $//' >"$RESULTS/activemq.commands"
    echo >>"$RESULTS/activemq.commands"
    "${cmd[@]}" >"$LOGS/activemq.log" 2>&1 &
    BROKER_PID=$!
    wait_port "$port" "$BROKER_PID" activemq || { abandon activemq "did not start (see $LOGS/activemq.log)"; return 0; }
    run_bench activemq "tcp://127.0.0.1:$port" "$BROKER_PID"
    wait_activemq_gc activemq 0
    if [[ "$TLS" == 1 ]]; then
        local removed
        removed=$(grep -c "Inactive for longer than" "$LOGS/activemq.log" || true)
        cp "$RESULTS/activemq.commands" "$RESULTS/activemq-tls.commands"
        run_bench activemq-tls "$(tls_url "$tls_port")" "$BROKER_PID" "${TLS_SCENARIOS[@]}"
        wait_activemq_gc activemq-tls "$removed"
    fi
    stop_pid "$BROKER_PID"
    BROKER_PID=""
}

# wait_activemq_gc NAME BEFORE: ActiveMQ removes the benchmark's emptied queues itself (gcInactiveDestinations
# in activemq/activemq.xml: STOMP cannot delete a queue); wait, bounded, until it has said so for
# each, so that its store keeps none of them.
wait_activemq_gc() {
    local want have=0 before=$2
    want=$("$PY" -c 'import json, sys
print(sum(d.startswith("/queue/") for d in json.load(open(sys.argv[1])).get("destinations", [])))' \
        "$RESULTS/$1.json" 2>/dev/null || echo 0)
    for ((i = 0; i < 150; i++)); do
        have=$(($(grep -c "Inactive for longer than" "$LOGS/activemq.log" || true) - before))
        ((have >= want)) && return 0
        sleep 0.2
    done
    log "activemq: removed $have of the $want benchmark queues within 30 s (see $LOGS/activemq.log)"
}

bench_coilmq() {
    local venv=$WORK/coilmq-venv port
    if [[ ! -x "$venv/bin/coilmq" ]]; then
        log "installing coilmq from PyPI into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" && timeout 600 "$venv/bin/pip" install -q coilmq \
            || { failed coilmq "pip install coilmq failed"; return 0; }
    fi
    port=$(free_port)
    echo "coilmq -b 127.0.0.1 -p $port" >"$RESULTS/coilmq.commands"
    "$venv/bin/coilmq" -b 127.0.0.1 -p "$port" >"$LOGS/coilmq.log" 2>&1 &
    BROKER_PID=$!
    wait_port "$port" "$BROKER_PID" coilmq || { abandon coilmq "did not start"; return 0; }
    "$venv/bin/pip" show coilmq 2>/dev/null | sed -n 's/^Version: /#   (coilmq from PyPI, version /p' \
        | sed 's/$/)/' >>"$RESULTS/coilmq.commands"
    run_bench coilmq "tcp://127.0.0.1:$port" "$BROKER_PID"
    stop_pid "$BROKER_PID"
    BROKER_PID=""
}

bench_rabbitmq() {
    apt_install rabbitmq-server || { failed rabbitmq "apt-get install rabbitmq-server failed"; return 0; }
    local base=$WORK/rabbitmq node_port dist_port stomp_port server=/usr/lib/rabbitmq/bin/rabbitmq-server
    [[ -x "$server" ]] || { failed rabbitmq "$server not found"; return 0; }
    node_port=$(free_port)
    dist_port=$(free_port)
    stomp_port=$(free_port)
    EPMD_PORT=$(free_port)
    rm -rf "$base"
    mkdir -p "$base/home" "$base/mnesia" "$base/log"
    sed -e "s/@NODE_PORT@/$node_port/" -e "s/@STOMP_PORT@/$stomp_port/" \
        "$HERE/rabbitmq/rabbitmq.conf.in" >"$base/rabbitmq.conf"
    cp "$HERE/rabbitmq/enabled_plugins" "$base/enabled_plugins"
    # The packaged wrapper (/usr/sbin/rabbitmq-server) switches to the rabbitmq user and logs to
    # /var/log; the real script runs in the foreground with everything under $base. Its own
    # epmd port keeps it apart from any other Erlang node on the machine.
    local env=(HOME="$base/home" ERL_EPMD_PORT="$EPMD_PORT" RABBITMQ_NODENAME="bench@localhost"
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT="$node_port"
        RABBITMQ_DIST_PORT="$dist_port" RABBITMQ_CONFIG_FILE="$base/rabbitmq.conf"
        RABBITMQ_ENABLED_PLUGINS_FILE="$base/enabled_plugins" RABBITMQ_MNESIA_BASE="$base/mnesia"
        RABBITMQ_LOG_BASE="$base/log" RABBITMQ_PID_FILE="$base/pid" RABBITMQ_LOGS=-)
    printf '%s ' env "${env[@]}" "$server" | sed -e "s|$ROOT/||g" -e 's/ $//' >"$RESULTS/rabbitmq.commands"
    echo >>"$RESULTS/rabbitmq.commands"
    env "${env[@]}" "$server" >"$LOGS/rabbitmq.log" 2>&1 &
    BROKER_PID=$!
    wait_port "$stomp_port" "$BROKER_PID" rabbitmq || { abandon rabbitmq "did not start (see $LOGS/rabbitmq.log)"; return 0; }
    # The Erlang VM (beam.smp) is the process that does the work; its pid is in the pid file.
    local beam=$BROKER_PID
    for ((i = 0; i < 50; i++)); do
        [[ -s "$base/pid" ]] && { beam=$(cat "$base/pid"); break; }
        sleep 0.2
    done
    run_bench rabbitmq "tcp://127.0.0.1:$stomp_port" "$beam" --login guest --passcode guest
    if [[ "$AMQP" == 1 ]]; then
        # rabbitmq_amqp1_0 serves AMQP 1.0 on the AMQP 0-9-1 listener (protocol header decides).
        cp "$RESULTS/rabbitmq.commands" "$RESULTS/rabbitmq-amqp.commands"
        run_bench rabbitmq-amqp "amqp://127.0.0.1:$node_port" "$beam" --login guest --passcode guest
    fi
    stop_pid "$BROKER_PID"
    BROKER_PID=""
    stop_epmd
}

main() {
    mkdir -p "$WORK" "$LOGS"
    rm -rf "$RESULTS"
    mkdir -p "$RESULTS"
    [[ -x "$PY" ]] || { log "no Python at $PY (set PYTHON=...)"; exit 1; }
    for broker in $BROKERS; do
        case $broker in
        ferrymq | activemq | coilmq | rabbitmq) "bench_$broker" ;;
        *) log "unknown broker $broker (known: ferrymq activemq coilmq rabbitmq)"; exit 2 ;;
        esac
    done
    local picture=()
    if "$PY" -m ferrymq.bench.plot --results "$RESULTS" --output "$PLOT"; then
        log "wrote $PLOT"
        picture=(--picture "$(realpath --relative-to="$(dirname "$OUTPUT")" "$PLOT")")
    else
        log "no picture (pip install 'ferrymq[plot]' for matplotlib)"
    fi
    "$PY" -m ferrymq.bench.comparison --results "$RESULTS" --bench-args "$BENCH_ARGS" \
        --analysis "$HERE/analysis.md" --output "$OUTPUT" "${picture[@]}"
    log "wrote $OUTPUT"
}

main "$@"
