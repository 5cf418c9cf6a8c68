#!/bin/sh
# Runs the settling experiments of docs/reproduction.md ("What settles the two claims"), each
# a CPU twin of one question the findings leave open, and writes their report:
# docs/reproduction/settle.md. The SF-AdamW LR-decay branch with upstream's averaging weight
# is fig-obs1-tiny's (sweeps/reproduce.sh).
#
#   sh sweeps/settle.sh               # from the repository root, after or beside reproduce.sh
#   SFSWEEP_DIR=.sfsweep/suite sh sweeps/settle.sh    # into another state directory
#
# Trials are content-addressed: those the twins already trained (fig-modified-tiny's
# vanilla and C = 200, hyperparameter-tiny's weight decay 0.1) are not trained again.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
dir=${SFSWEEP_DIR:-.sfsweep}
mkdir -p "$(dirname "$bin")"
go build -o "$bin" ./cmd/sfsweep
runs="
sweeps/settle/c-length-1100.yaml
sweeps/settle/c-length-2200.yaml
sweeps/settle/weight-decay.yaml
sweeps/settle/lr-width-96.yaml
sweeps/settle/large-batch-40.yaml
sweeps/settle/large-batch-40-control.yaml
"
for m in $runs; do
	t=$(date +%s)
	"$bin" run -ui=false -dir "$dir" "$m"
	echo "$m trained in $(( $(date +%s) - t )) s"
done
# shellcheck disable=SC2086
"$bin" report -dir "$dir" -o docs/reproduction/settle.md $runs
