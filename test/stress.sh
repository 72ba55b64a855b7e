#!/bin/sh
# Runs the node loop's scale-up and scale-down integration tests RUNS times
# in a row while one CPU-burning process per core keeps the machine busy, and
# reports how many runs passed. A failed run's output (with the log of every
# tidal of its failing tests) is kept in LOGS and its failures are printed.
#
#   test/stress.sh                      # 10 runs
#   RUNS=3 test/stress.sh               # 3 runs
#   RUN='^TestScaleUpZone' test/stress.sh
#
# Environment: RUNS (10), RUN (the -run pattern, '^Test(ScaleUp|ScaleDown)'),
# TIMEOUT (per run, 30m), LOGS (bin/stress), BURNERS (one per core),
# LDFLAGS (passed to go test -c).
set -eu

RUNS=${RUNS:-10}
RUN=${RUN:-'^Test(ScaleUp|ScaleDown)'}
TIMEOUT=${TIMEOUT:-30m}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGS=${LOGS:-$ROOT/bin/stress}
BURNERS=${BURNERS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
LDFLAGS=${LDFLAGS:-}

burners=""
stop_burners() {
	for pid in $burners; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	burners=""
}
trap stop_burners EXIT
trap 'exit 130' INT TERM

mkdir -p "$LOGS"
bin="$LOGS/integration.test"
echo "building the integration tests"
(cd "$ROOT" && go test -c -ldflags "$LDFLAGS" -o "$bin" ./test/integration)

echo "starting $BURNERS CPU burners"
i=0
while [ "$i" -lt "$BURNERS" ]; do
	sh -c 'while :; do :; done' &
	burners="$burners $!"
	i=$((i + 1))
done

passed=0
failed=0
run=1
while [ "$run" -le "$RUNS" ]; do
	log="$LOGS/run-$run.log"
	start=$(date +%s)
	if (cd "$ROOT/test/integration" && "$bin" -test.run "$RUN" -test.count=1 -test.timeout "$TIMEOUT" -test.v) >"$log" 2>&1; then
		passed=$((passed + 1))
		echo "run $run/$RUNS: ok in $(($(date +%s) - start))s"
		rm -f "$log"
	else
		failed=$((failed + 1))
		echo "run $run/$RUNS: FAILED in $(($(date +%s) - start))s, output in $log:"
		grep -E '^\s*--- FAIL|^\s+[a-z_]+_test\.go:[0-9]+: ' "$log" | grep -v 'logs.go:' | head -40 || true
	fi
	run=$((run + 1))
done
stop_burners

echo "$passed of $RUNS runs passed under load ($BURNERS CPU burners)"
[ "$failed" -eq 0 ]
