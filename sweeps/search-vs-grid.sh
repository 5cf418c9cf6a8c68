#!/bin/sh
# Measures early stopping and search against the grid on a CPU twin, in one command: ASHA
# over the LR x C grid of refined SF-AdamW (sweeps/examples/search-asha-tiny.yaml), TPE with
# ASHA over the same space with a continuous LR (search-tpe-tiny.yaml), then the whole grid
# (search-grid-tiny.yaml). Each search prints the steps it trained as a share of its
# configurations trained to the end, and its best configuration; the grid prints its table
# (mean +- sd over 3 seeds), whose best cell the searches are compared with.
#
#   sh sweeps/search-vs-grid.sh     # from the repository root; about 15 minutes on 2 cores
#
# The searches run first: the grid then resumes the trials they stopped from their
# checkpoints (trials are content-addressed), which changes none of its numbers.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
mkdir -p "$(dirname "$bin")"
go build -o "$bin" ./cmd/sfsweep
for m in search-asha-tiny search-tpe-tiny search-grid-tiny; do
	"$bin" run -ui=false "sweeps/examples/$m.yaml"
done
