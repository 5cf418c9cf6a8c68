#!/bin/sh
# Runs the settling experiments of docs/reproduction.md ("What settles the two claims"), each
# a CPU twin of one question the findings leave open, and writes their reports, one for each
# group, so that a group can run on its own:
#   length-decay  the best C against run length, weight decay off against on
#                 → docs/reproduction/settle.md
#   width-batch   the LR optimum against width, the large batch at ~40 tokens per parameter
#                 and its control → docs/reproduction/settle-width-batch.md
# The SF-AdamW LR-decay branch with upstream's averaging weight is fig-obs1-tiny's
# (sweeps/reproduce.sh).
#
#   sh sweeps/settle.sh               # both groups, from the repository root
#   sh sweeps/settle.sh width-batch   # one group
#   SFSWEEP_DIR=.sfsweep/suite sh sweeps/settle.sh    # into another state directory
#
# Trials are content-addressed: those the twins already trained (fig-modified-tiny's
# vanilla and C = 200, hyperparameter-tiny's weight decay 0.1) are not trained again.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
dir=${SFSWEEP_DIR:-.sfsweep}
# Two trials at once: one trial of these small models keeps two cores only ~65% busy, and a
# trial's bits do not depend on what trains beside it.
slots=${SFSWEEP_SLOTS:-2}
groups=${*:-length-decay width-batch}
mkdir -p "$(dirname "$bin")"
go build -o "$bin" ./cmd/sfsweep
for g in $groups; do
	case $g in
	length-decay)
		report=docs/reproduction/settle.md
		runs="sweeps/settle/c-length-1100.yaml sweeps/settle/c-length-2200.yaml sweeps/settle/weight-decay.yaml"
		;;
	width-batch)
		report=docs/reproduction/settle-width-batch.md
		runs="sweeps/settle/lr-width-96.yaml sweeps/settle/large-batch-40.yaml sweeps/settle/large-batch-40-control.yaml"
		;;
	*)
		echo "settle.sh: no group $g (length-decay, width-batch)" >&2
		exit 2
		;;
	esac
	for m in $runs; do
		t=$(date +%s)
		"$bin" run -ui=false -slots "$slots" -dir "$dir" "$m"
		echo "$m trained in $(( $(date +%s) - t )) s"
	done
	# shellcheck disable=SC2086
	"$bin" report -dir "$dir" -o "$report" $runs
done
