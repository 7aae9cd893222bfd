#!/bin/sh
# compare.sh measures the same benchmark command at two (or more) revisions
# in one run: it builds the test binaries of the same packages at each
# revision, then runs them interleaved, round by round (before, after,
# before, after, …, -count=1 each, -benchmem), so that other work on the
# machine slows every revision alike, and compares them with benchstat.
#
# Usage (from anywhere inside the repository):
#
#	bench/compare.sh BEFORE AFTER [REGEX]
#
# BEFORE and AFTER are git revisions; REGEX is the -bench pattern (default:
# the drop-in and native stream, SSE/NDJSON frame and proxy benchmarks).
# A benchmark that exists at only one revision shows in one column only.
# Environment:
#
#	ROUNDS     rounds of interleaved runs (default 6)
#	ALSO       more revisions to run in the same rounds, space-separated
#	PKGS       packages, each optionally with its -benchtime after a colon
#	           (default: the bench, SSE, NDJSON, Ollama and proxy packages)
#	OUT        directory for the raw results (default: a new temporary one)
#	TIMEOUT    seconds one package's run may take before it is stopped
#	           (default 600); a stopped run is reported and left out
#
# Allocation counts and bytes per op are deterministic; times on a shared
# machine are not, so read the time ratios with their spread.
set -eu

if [ $# -lt 2 ]; then
	sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
before=$1
after=$2
regex=${3:-'BenchmarkDropIn$|BenchmarkDropInStream1000|BenchmarkStream1000|BenchmarkTimeToFirstChunk|BenchmarkResponsesStream1000|BenchmarkKeepaliveFrame|BenchmarkContentFrame|BenchmarkKeepalive$|BenchmarkOllama|BenchmarkProxyVsReverseProxy/clients=(1|16)$'}
rounds=${ROUNDS:-6}
pkgs=${PKGS:-'./bench ./codecs/internal/sse ./codecs/internal/ssechat ./codecs/internal/ndjson ./codecs/ollama ./proxy:10x'}
timeout=${TIMEOUT:-600}
repo=$(git rev-parse --show-toplevel)
out=${OUT:-$(mktemp -d)}
work=$(mktemp -d)
revs="$before $after ${ALSO:-}"

cleanup() {
	for d in "$work"/src-*; do
		[ -d "$d" ] && git -C "$repo" worktree remove --force "$d"
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Build every package's test binary at every revision.
i=0
labels=""
for rev in $revs; do
	i=$((i + 1))
	label="$i-$(echo "$rev" | tr '/' '_')"
	labels="$labels $label"
	src="$work/src-$i"
	git -C "$repo" worktree add --quiet --detach "$src" "$rev"
	mkdir -p "$work/bin/$label"
	for p in $pkgs; do
		pkg=${p%%:*}
		(cd "$src" && go test -c -o "$work/bin/$label/$(echo "$pkg" | tr './' '__').test" "$pkg")
	done
	echo "built $rev ($(git -C "$src" rev-parse --short HEAD)) as $label" >&2
	: >"$out/$label.txt"
done

# Run them interleaved, each package in its own directory at its revision.
r=0
while [ "$r" -lt "$rounds" ]; do
	r=$((r + 1))
	i=0
	for label in $labels; do
		i=$((i + 1))
		for p in $pkgs; do
			pkg=${p%%:*}
			bt=${p#*:}
			[ "$bt" = "$p" ] && bt=1s
			echo "round $r/$rounds: $label $pkg" >&2
			if ! (cd "$work/src-$i/$pkg" && timeout "$timeout" "$work/bin/$label/$(echo "$pkg" | tr './' '__').test" \
				-test.run='^$' -test.bench="$regex" -test.benchmem -test.count=1 -test.benchtime="$bt") >>"$out/$label.txt" 2>&1; then
				echo "round $r: $label $pkg did not finish (left out)" >&2
			fi
		done
	done
done

echo "raw results in $out" >&2
args=""
for label in $labels; do
	args="$args $label=$out/$label.txt"
done
if command -v benchstat >/dev/null 2>&1; then
	# shellcheck disable=SC2086 # one argument per revision
	benchstat $args
else
	echo "benchstat not found (go install golang.org/x/perf/cmd/benchstat@latest); raw results in $out" >&2
fi
