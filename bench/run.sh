#!/usr/bin/env bash
# Load benchmark of issue 8: direct to the mock, through a bare Go reverse
# proxy (the floor), and through Switchyard with its default configuration;
# the streaming case also runs from an Anthropic client through Switchyard's
# translation to the same OpenAI mock (switchyard-translated).
#
#   bench/run.sh                 10 s per run after a 2 s warm-up (≈ 4 min)
#   DURATION=2s bench/run.sh     a smoke run
#   bench/run.sh streams         issue 26: N long streams held open at once
#                                (the mock streams 50 chunks 100 ms apart),
#                                bare hop and Switchyard side by side, for each
#                                N in STREAM_COUNTS; 15 s after a 6 s warm-up
#                                (≈ 2 min per N); reports TTFT, events/s, CPU
#                                cores, CPU per event, peak RSS, RSS per stream
#
# Streams mode: STREAM_COUNTS ("1000 3000 5000"; a count the open-file limit
# cannot hold, about 2 descriptors per stream in the hop, is skipped with a
# note), STREAM_CHUNKS (50), STREAM_GAP (100ms: the mock's tps is 1/GAP),
# DURATION (15s) and WARMUP (6s) there. The script raises its soft
# `ulimit -n` to the hard limit first.
#
# Environment: DURATION (10s), WARMUP (2s), OUT (directory for results.jsonl
# and table.md; default a new /tmp/switchyard-bench.* directory, kept),
# RATES ("1000 3000"), CONCURRENCY (64), STREAMS (32), MOCK_TTFT (20ms),
# MOCK_TPS (200), REPEAT (1: rounds of the whole matrix; the table shows each
# figure's median), STRICT=1 (exit 1 unless every target passes), PROFILE=1
# (turn on Switchyard's admin API and, during each of its measured runs,
# save a CPU profile and, at its end, a heap profile in OUT:
# cpu-<mode>-<n>.pprof, heap-<mode>-<n>.pprof; DURATION in whole seconds).
#
# Everything runs on this machine at once: the load generator, the mock, the
# bare hop and Switchyard share its cores; nothing is pinned. Each case runs
# against direct, bare hop and Switchyard back to back, so that they see the
# same background load. See docs/benchmarks.md.
set -euo pipefail

cd "$(dirname "$0")/.."
MODE=${1:-matrix}
case $MODE in
matrix | streams) ;;
*)
	echo "usage: bench/run.sh [streams]" >&2
	exit 2
	;;
esac
if [[ $MODE == streams ]]; then
	DURATION=${DURATION:-15s}
	WARMUP=${WARMUP:-6s}
	STREAM_COUNTS=${STREAM_COUNTS:-1000 3000 5000}
	STREAM_CHUNKS=${STREAM_CHUNKS:-50}
	STREAM_GAP=${STREAM_GAP:-100ms}
	# 50 chunks 100 ms apart: the first after GAP, then tps = 1/GAP.
	MOCK_TTFT=${MOCK_TTFT:-$STREAM_GAP}
	MOCK_TPS=${MOCK_TPS:-$(awk -v g="${STREAM_GAP%ms}" 'BEGIN { print 1000 / g }')}
	MOCK_TOKENS=$STREAM_CHUNKS
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fi
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
MOCK_TOKENS=${MOCK_TOKENS:-0}
RATES=${RATES:-1000 3000}
CONCURRENCY=${CONCURRENCY:-64}
STREAMS=${STREAMS:-32}
REPEAT=${REPEAT:-1}
MOCK_TTFT=${MOCK_TTFT:-20ms}
MOCK_TPS=${MOCK_TPS:-200}
KEY=sk-bench
PROFILE=${PROFILE:-0}
ADMIN_TOKEN=
[[ $PROFILE == 1 ]] && ADMIN_TOKEN=bench-admin-$RANDOM$RANDOM
OUT=${OUT:-$(mktemp -d /tmp/switchyard-bench.XXXXXX)}
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/switchyard-bench-run.XXXXXX)

PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for FILE REGEX: prints the first match of REGEX (grep -oE) in FILE,
# waiting up to 15 s for it to appear.
wait_for() {
	local file=$1 re=$2 m i
	for i in $(seq 150); do
		if m=$(grep -oE "$re" "$file" 2>/dev/null | head -n1) && [[ -n $m ]]; then
			echo "$m"
			return 0
		fi
		sleep 0.1
	done
	echo "run.sh: timed out waiting for /$re/ in $file:" >&2
	cat "$file" >&2
	return 1
}

echo "building…" >&2
go build -o "$TMP/switchyard" ./cmd/switchyard
go build -o "$TMP/" ./bench/load ./bench/barehop ./bench/report

"$TMP/switchyard" mock --listen 127.0.0.1:0 --ttft "$MOCK_TTFT" --tps "$MOCK_TPS" --completion-tokens "$MOCK_TOKENS" >"$TMP/mock.log" 2>&1 &
MOCK_PID=$!
PIDS+=("$MOCK_PID")
MOCK_URL=$(wait_for "$TMP/mock.log" 'http://127\.0\.0\.1:[0-9]+' )

"$TMP/barehop" -listen 127.0.0.1:0 -upstream "$MOCK_URL" >"$TMP/barehop.log" 2>&1 &
BARE_PID=$!
PIDS+=("$BARE_PID")
BARE_URL=$(wait_for "$TMP/barehop.log" 'http://127\.0\.0\.1:[0-9]+')

BENCH_MOCK_URL=$MOCK_URL BENCH_DIR=$TMP BENCH_KEY=$KEY BENCH_ADMIN_TOKEN=$ADMIN_TOKEN \
	"$TMP/switchyard" serve --config bench/switchyard.yaml --listen 127.0.0.1:0 >"$TMP/switchyard.log" 2>&1 &
SY_PID=$!
PIDS+=("$SY_PID")
SY_URL=http://$(wait_for "$TMP/switchyard.log" '"addr":"127\.0\.0\.1:[0-9]+"' | grep -oE '127\.0\.0\.1:[0-9]+')

echo "mock $MOCK_URL (pid $MOCK_PID), bare hop $BARE_URL (pid $BARE_PID), switchyard $SY_URL (pid $SY_PID)" >&2
echo "duration $DURATION after a $WARMUP warm-up; results in $OUT" >&2

RESULTS=$OUT/results.jsonl
: >"$RESULTS"

# profile NAME: with PROFILE=1, saves Switchyard's CPU profile over the
# measured part of the run starting now, then its heap, in OUT (in the
# background; bench waits for it).
profile() {
	local name=$1 secs
	secs=$((${DURATION%s} - 1))
	(
		sleep "${WARMUP%s}"
		curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" -o "$OUT/cpu-$name.pprof" \
			"$SY_URL/admin/api/debug/pprof/profile?seconds=$secs" || echo "profile: cpu-$name failed" >&2
		curl -sf -H "Authorization: Bearer $ADMIN_TOKEN" -o "$OUT/heap-$name.pprof" \
			"$SY_URL/admin/api/debug/pprof/heap" || echo "profile: heap-$name failed" >&2
	) &
	PROF_PID=$!
}

# bench TARGET ARGS…: one run of the load generator against TARGET.
bench() {
	local target=$1 url pid
	shift
	case $target in
	direct) url=$MOCK_URL pid=$MOCK_PID ;;
	barehop) url=$BARE_URL pid=$BARE_PID ;;
	switchyard | switchyard-translated) url=$SY_URL pid=$SY_PID ;;
	esac
	PROF_PID=
	if [[ $PROFILE == 1 && $target == switchyard* ]]; then
		profile "$target-$2-${4:-1}"
	fi
	"$TMP/load" -target "$target" -url "$url" -key "$KEY" -pid "$pid" \
		-duration "$DURATION" -warmup "$WARMUP" "$@" | tee -a "$RESULTS" >&2
	[[ -z $PROF_PID ]] || wait "$PROF_PID" || true
	sleep 1
}

# matrix: issue 8's cases, each against direct, bare hop and Switchyard.
matrix() {
	for target in direct barehop switchyard; do bench "$target" -mode serial; done
	for rate in $RATES; do
		for target in direct barehop switchyard; do bench "$target" -mode rate -rate "$rate"; done
	done
	for target in direct barehop switchyard; do bench "$target" -mode max -concurrency "$CONCURRENCY"; done
	for target in direct barehop switchyard; do bench "$target" -mode stream -concurrency "$STREAMS"; done
	# The same streams from an Anthropic client, translated to the OpenAI mock.
	bench switchyard-translated -mode stream -concurrency "$STREAMS" -protocol anthropic
}

# streams: issue 26's long streams, bare hop and Switchyard side by side
# at each count the open-file limit allows (the load generator holds one
# descriptor per stream, a hop two, plus slack).
streams() {
	local n nofile
	nofile=$(ulimit -n)
	for n in $STREAM_COUNTS; do
		if ((2 * n + 512 > nofile)); then
			echo "streams: skipping $n streams: ulimit -n is $nofile" >&2
			continue
		fi
		for target in barehop switchyard; do bench "$target" -mode streams -concurrency "$n"; done
	done
}

[[ $MODE == streams ]] && echo "ulimit -n $(ulimit -n); stream counts: $STREAM_COUNTS" >&2
for round in $(seq "$REPEAT"); do
	[[ $REPEAT == 1 ]] || echo "round $round of $REPEAT" >&2
	"$MODE"
done

{
	echo "Machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(free -g | awk '/^Mem:/ {print $2}') GB RAM, Linux $(uname -r), $(go version | cut -d' ' -f3-)."
	echo "Run: $(date -u +%Y-%m-%dT%H:%MZ), bench/run.sh $MODE, DURATION=$DURATION WARMUP=$WARMUP REPEAT=$REPEAT, mock ttft=$MOCK_TTFT tps=$MOCK_TPS tokens=$MOCK_TOKENS, ulimit -n $(ulimit -n)."
	echo
	STRICT_FLAG=()
	[[ ${STRICT:-0} == 1 ]] && STRICT_FLAG=(-strict)
	"$TMP/report" "${STRICT_FLAG[@]}" "$RESULTS"
} | tee "$OUT/table.md"
echo "results: $RESULTS, table: $OUT/table.md" >&2
