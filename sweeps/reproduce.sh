#!/bin/sh
# Runs every CPU twin of the paper's experiments that needs no download (the OpenWebText2
# twins need a prepared sample: see their manifests), then writes their reports with the
# paper's findings checked, one for each group, so that a group can run on its own
# (docs/reproduction.md says what they show):
#   observations     Observations 1-3: the LR-decay branches, the EWA, y, the momentum
#                    probes, the river profile → docs/reproduction/observations.md
#   hyperparameters  tab:hyperparameter_main, fig:modified (left, middle) and the C × LR
#                    table → docs/reproduction/hyperparameters.md
#   large-batch      the large-batch sweep and fig:modified (right)
#                    → docs/reproduction/large-batch.md
#   c-tables         the wide C tables, tab:c_sweep_05M and tab:c_sweep_2M
#                    → docs/reproduction/c-tables.md
#
#   sh sweeps/reproduce.sh                   # every group, from the repository root
#   sh sweeps/reproduce.sh observations      # one group
#   SFSWEEP_DIR=.sfsweep/suite sh sweeps/reproduce.sh    # into another state directory
#
# On a 2-core AVX2 machine the groups come to about 40 min, 1 h, 50 min and 1 h 30 min by
# their FLOPs at hyperparameter-tiny's measured rate (fig-obs1-tiny alone, with its probes,
# took 13 min beside other work); on AVX-512 about half that. Trials are content-addressed: the twins share many (the same
# settings and grid point), each is trained once, and running the script again trains only
# what is missing.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
dir=${SFSWEEP_DIR:-.sfsweep}
# Two trials at once: one trial of these small models keeps two cores only ~65% busy, and a
# trial's bits do not depend on what trains beside it.
slots=${SFSWEEP_SLOTS:-2}
groups=${*:-observations hyperparameters large-batch c-tables}
mkdir -p "$(dirname "$bin")"
go build -o "$bin" ./cmd/sfsweep
ex=sweeps/examples
for g in $groups; do
	case $g in
	observations)
		twins="$ex/fig-obs1-tiny.yaml $ex/fig-ema-y-tiny.yaml $ex/fig-decay-adamw-betas-tiny.yaml $ex/fig-river-profile-tiny.yaml" ;;
	hyperparameters)
		twins="$ex/hyperparameter-tiny.yaml $ex/fig-modified-tiny.yaml $ex/c-sensitivity-lr-tiny.yaml" ;;
	large-batch)
		twins="$ex/hyperparameter-largeBS-tiny.yaml $ex/fig-modified-largeBS-tiny.yaml" ;;
	c-tables)
		twins="$ex/c-sensitivity-tiny.yaml $ex/c-sensitivity-2M-tiny.yaml" ;;
	*)
		echo "reproduce.sh: no group $g (observations, hyperparameters, large-batch, c-tables)" >&2
		exit 2
		;;
	esac
	start=$(date +%s)
	for m in $twins; do
		t=$(date +%s)
		"$bin" run -ui=false -slots "$slots" -dir "$dir" "$m"
		echo "$m trained in $(( $(date +%s) - t )) s"
	done
	echo "group $g trained in $(( $(date +%s) - start )) s"
	# shellcheck disable=SC2086
	"$bin" report -dir "$dir" -o "docs/reproduction/$g.md" $twins
done
