#!/bin/sh
# Runs every CPU twin of the paper's experiments that needs no download (the OpenWebText2
# twins need a prepared sample: see their manifests), then writes their report with the
# paper's findings checked: docs/reproduction/report.md and its plots (docs/reproduction.md
# says what they show).
#
#   sh sweeps/reproduce.sh            # from the repository root; about 2 h 10 min on 2 cores
#   SFSWEEP_DIR=.sfsweep/suite sh sweeps/reproduce.sh    # into another state directory
#
# Trials are content-addressed: the twins share many (the same settings and grid point), each
# is trained once, and running the script again trains only what is missing. The twins of the
# findings come first and the wide C tables last, so an interrupted run has the findings' data.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
dir=${SFSWEEP_DIR:-.sfsweep}
# Two trials at once: one trial of these small models keeps two cores only ~65% busy, and a
# trial's bits do not depend on what trains beside it.
slots=${SFSWEEP_SLOTS:-2}
mkdir -p "$(dirname "$bin")"
go build -o "$bin" ./cmd/sfsweep
twins="
sweeps/examples/hyperparameter-tiny.yaml
sweeps/examples/fig-obs1-tiny.yaml
sweeps/examples/fig-ema-y-tiny.yaml
sweeps/examples/fig-decay-adamw-betas-tiny.yaml
sweeps/examples/fig-river-profile-tiny.yaml
sweeps/examples/fig-modified-tiny.yaml
sweeps/examples/c-sensitivity-lr-tiny.yaml
sweeps/examples/hyperparameter-largeBS-tiny.yaml
sweeps/examples/fig-modified-largeBS-tiny.yaml
sweeps/examples/c-sensitivity-tiny.yaml
sweeps/examples/c-sensitivity-2M-tiny.yaml
"
start=$(date +%s)
for m in $twins; do
	t=$(date +%s)
	"$bin" run -ui=false -slots "$slots" -dir "$dir" "$m"
	echo "$m trained in $(( $(date +%s) - t )) s"
done
echo "twins trained in $(( $(date +%s) - start )) s"
# shellcheck disable=SC2086
"$bin" report -dir "$dir" -o docs/reproduction/report.md $twins
