#!/bin/sh
# Measures the early-stopping rules over six grids, in one command. Each grid is refined
# SF-AdamW on the CPU twin, 3 learning rates x 4 values of C, 3 seeds: other beta1, C sets,
# LR ranges and seeds, two of them with LRs past the best so that a lower LR wins. On each
# grid it runs ASHA, Hyperband (all brackets), the median rule and synchronous halving
# (rungs at 10% and 30% of the run, eta 3; the median every 10% after 3 completed), then the
# whole grid, all ranked by the validation loss at x; three variants: ASHA with a grace
# period of 30% (its first rung not judged), ASHA and Hyperband judging y at the rungs;
# and the rules with later rungs, at 20% and 50% of the run (eta 3): ASHA, Hyperband,
# synchronous halving, and synchronous halving that keeps 2 finalists (12 -> 4 -> 2
# configurations rather than 12 -> 4 -> 1). Every rule trains a part of the grid's trials,
# so they cost little beyond the grid. Then it prints, per rule:
#
#   - the share of grids where the rule's best is within seed noise of the grid's best
#     (its regret is at most the sample sd over the seeds of the grid's best configuration);
#   - its mean regret in validation loss (its best's mean over seeds less the grid's best);
#   - the share of the grid's steps it trained.
#
#   sh sweeps/stopping-suite.sh     # from the repository root; STEPS=300 by default
#
# SUITE_DIR holds the manifests, logs and tables (.sfsweep/stopping-suite), STATE_DIR is
# sfsweep run's state directory, whose store holds the trials (.sfsweep); GRIDS="g2 g6"
# runs and reports those grids alone.
#
# The whole grid runs as a search that never stops (the median rule with more
# min_trials than the grid has configurations), so that it writes every configuration's
# mean to tables/search.csv as the rules' searches do; then once a seed, which trains
# nothing (trials are content-addressed, so the seeds' trials exist), for the sd. The rules
# run first: the grid resumes the trials they stopped from their checkpoints.
set -eu
bin=${SFSWEEP_BIN:-.sfsweep/bin/sfsweep}
work=${SUITE_DIR:-.sfsweep/stopping-suite}
state=${STATE_DIR:-.sfsweep}
steps=${STEPS:-300}
r1=$((steps / 10)) r2=$((3 * steps / 10)) l1=$((steps / 5)) l2=$((steps / 2))
mkdir -p "$(dirname "$bin")" "$work/manifests" "$work/logs"
go build -o "$bin" ./cmd/sfsweep

# grid NAME BETA1 "LRS" "CS" "SEEDS"
grids="g1 0.95 1e-3,2e-3,4e-3 vanilla,50,200,1000 1,2,3
g2 0.9 1e-3,2e-3,4e-3 vanilla,20,100,500 4,5,6
g3 0.98 5e-4,1e-3,2e-3 vanilla,100,300,1000 7,8,9
g4 0.95 2e-3,4e-3,8e-3 vanilla,50,200,1000 10,11,12
g5 0.9 3e-4,1e-3,3e-3 vanilla,50,200,1000 13,14,15
g6 0.95 1e-3,3e-3,9e-3 vanilla,30,100,300 16,17,18"
if [ -n "${GRIDS:-}" ]; then
	grids=$(echo "$grids" | while read -r g rest; do
		case " $GRIDS " in *" $g "*) echo "$g $rest" ;; esac
	done)
fi

# manifest NAME BETA1 LRS CS SEEDS STOPPING: writes $work/manifests/NAME.yaml
manifest() {
	cat >"$work/manifests/$1.yaml" <<EOF
name: $1
description: stopping suite, $1
model: twin-llama
data:
  default: byte
  max_bytes: 8000000
seq_len: 128
micro_batch: 16
batch_tokens: 2048
steps: $steps
warmup_frac: 0.05
eval_every: $r1
eval_seqs: 64
test_seqs: 128
checkpoint_every: $r1
ewa_decay: 0.8333
seeds: [$5]
optimizers:
  - {name: sfadamw, lr: [$3], betas: [[$2, 0.99]], c: [$4]}
search:
  method: grid
  seed: 1
  metric: val_loss
  parallel: 4
  early_stopping: $6
EOF
}

rules="asha hyperband median sync_halving asha_grace asha_y hyperband_y asha_2050 hyperband_2050 sync_2050 sync_2050_f2"
stopping() {
	case $1 in
	asha | hyperband | sync_halving) echo "{rule: $1, rungs: [$r1, $r2], eta: 3}" ;;
	median) echo "{rule: median, min_steps: $r1, min_trials: 3}" ;;
	asha_grace) echo "{rule: asha, rungs: [$r1, $r2], eta: 3, grace: 0.3}" ;;
	asha_y | hyperband_y) echo "{rule: ${1%_y}, rungs: [$r1, $r2], eta: 3, iterate: y}" ;;
	asha_2050 | hyperband_2050) echo "{rule: ${1%_2050}, rungs: [$l1, $l2], eta: 3}" ;;
	sync_2050) echo "{rule: sync_halving, rungs: [$l1, $l2], eta: 3}" ;;
	sync_2050_f2) echo "{rule: sync_halving, rungs: [$l1, $l2], eta: 3, finalists: 2}" ;;
	whole) echo "{rule: median, min_steps: $r1, min_trials: 1000000}" ;;
	esac
}

run() { # run NAME: runs its manifest, keeping the log
	"$bin" run -ui=false -dir "$state" -out "$work/out" "$work/manifests/$1.yaml" >"$work/logs/$1.log" 2>&1 ||
		{ tail -20 "$work/logs/$1.log"; exit 1; }
}

echo "$grids" | while read -r g b1 lrs cs seeds; do
	for r in $rules whole; do
		manifest "$g-$r" "$b1" "$lrs" "$cs" "$seeds" "$(stopping $r)"
		run "$g-$r"
	done
	for s in $(echo "$seeds" | tr , ' '); do
		manifest "$g-seed$s" "$b1" "$lrs" "$cs" "$s" "$(stopping whole)"
		run "$g-seed$s"
	done
done

# best FILE: "lr c value" of the completed configuration with the least metric (the first
# val_loss column of search.csv); value LR C FILE: that configuration's metric there
csvawk='BEGIN { FS = "," }
NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "lr") l = i; if ($i == "c") c = i; if ($i == "status") s = i; if ($i == "val_loss" && !v) v = i }; next }
$s == "completed"'
best() { awk "$csvawk"' && (b == "" || $v + 0 < b) { b = $v + 0; bl = $l; bc = $c } END { print bl, bc, b }' "$1"; }
value() { awk -v L="$1" -v C="$2" "$csvawk"' && $l == L && $c == C { print $v }' "$3"; }
csv() { echo "$work/out/sweeps/$1/tables/search.csv"; }
share() { sed -n 's/.* steps trained, \([0-9.]*\)% of .*/\1/p' "$work/logs/$1.log"; }

echo "$grids" | while read -r g b1 lrs cs seeds; do
	set -- $(best "$(csv "$g-whole")")
	gl=$1 gc=$2 gv=$3
	sd=$(for s in $(echo "$seeds" | tr , ' '); do value "$gl" "$gc" "$(csv "$g-seed$s")"; done |
		awk '{ x[NR] = $1; m += $1 } END { m /= NR; for (i = 1; i <= NR; i++) q += (x[i] - m)^2; print sqrt(q / (NR - 1)) }')
	echo "$g grid best: lr $gl c $gc val_loss $gv (sd $sd)" >&2
	for r in $rules; do
		set -- $(best "$(csv "$g-$r")")
		echo "$g $r $3 $gv $sd $(share "$g-$r") lr=$1 c=$2"
	done
done | tee "$work/summary.txt" | awk '
{ regret = $3 - $4; if (!n[$2]) order[++rules] = $2; n[$2]++; sum[$2] += regret; steps[$2] += $6; if (regret <= $5) hit[$2]++
  printf "%s %-14s best %s %s val_loss %.4f, regret %.4f (sd %.4f), %s%% of the steps\n", $1, $2, $7, $8, $3, regret, $5, $6 }
END {
  print "\n| rule | best within seed noise | mean regret (val loss) | steps trained |"
  print "|---|---|---|---|"
  for (i = 1; i <= rules; i++) { r = order[i]; printf "| %s | %d of %d | %.4f | %.1f%% |\n", r, hit[r], n[r], sum[r] / n[r], steps[r] / n[r] }
}'
