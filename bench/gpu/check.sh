#!/usr/bin/env bash
# The GPU checks of the cuda backend, in one command on a machine with an NVIDIA GPU and
# the CUDA toolkit but no Go: the binaries are built elsewhere (docs/gpu.md, "Build here,
# run there") into .gpubin/ with two prepared corpora:
#
#   .gpubin/cuda.test.xz     go test -c -tags cuda ./training/cuda
#   .gpubin/training.test.xz go test -c -tags cuda ./training
#   .gpubin/sfsweep.test.xz  go test -c -tags cuda ./cmd/sfsweep: the sfsweep command itself
#                            when SFSWEEP_TEST_RUN_MAIN=1, and its tests
# (xz-compressed, to travel light).
#   .gpubin/data/go-byte     sfsweep data default -max-bytes 400000
#   .gpubin/data/go-gpt2     sfsweep data default -tokenizer gpt2 -max-bytes 8000000
#
# Usage: bench/gpu/check.sh OUTDIR [STAGES]   (STAGES: any of ptx speed profile prove unit fast
# flash pack attn host lt loop kill sweep curve arith program; default all but prove and
# arith, in that order). Each stage logs to OUTDIR/<stage>.log and prints a one-line verdict.
set -u
OUT=${1:?usage: check.sh OUTDIR [STAGES]}
STAGES=${2:-ptx speed profile unit fast flash pack attn host lt loop kill sweep curve program}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$ROOT/.gpubin
DATA=$BIN/data
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
	[ -d "$d" ] && export LD_LIBRARY_PATH=$d:${LD_LIBRARY_PATH:-}
done
# nvcc and compute-sanitizer where the toolkit is installed but not on the PATH
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin
WORK=$(mktemp -d)
for t in sfsweep cuda training; do
	if [ -f "$BIN/$t.test.xz" ]; then xz -dc "$BIN/$t.test.xz" >"$WORK/$t.test" && chmod +x "$WORK/$t.test"; fi
done
sfsweep() { SFSWEEP_TEST_RUN_MAIN=1 "$WORK/sfsweep.test" "$@"; }
has() { [[ " $STAGES " == *" $1 "* ]]; }
# the fast paths that change no bit (SFSWEEP_CUDA_FAST), all together; the first four are
# on by default (signed off), and OFF turns them off: the engine's path before them
EXACT=ce,round,norm,swiglu,embed
OFF=-ce,-round,-norm,-swiglu
# stages 1, 2 and 4 of the speed work (the kernels' fusions, flash attention, the host side)
STAGED=$EXACT,rope,graph,flash,ce1
# every fast path, stage 3's cuBLASLt and bfloat16 outputs too: the fastest engine these
# stages can sign off. rows (the flash kernels reading act16's qkv as it is, rotating each
# tile they load) changes no bit; the attn stage times it against the permutation
ALL=$STAGED,lt,logits16,act16
verdict() { echo "== $1: $2"; }
# fast_train SECONDS PATHS YAML ARGS...: sfsweep train ARGS YAML with the fast paths PATHS,
# for at most SECONDS. A
# trial's bits are its backend's alone, and no environment variable changes them, so only
# the paths that change no bit go into SFSWEEP_CUDA_FAST: flash and ce1 are the arithmetic
# of backend cuda-bf16-flash, which a copy of a bf16 YAML names; lt, logits16 and act16,
# which no backend computes with, run in the engine's own tests (cuda.test) only and are
# left out here.
fast_train() {
	local secs=$1 want=$2 yaml=$3 paths p
	shift 3
	paths=",$want,"
	for p in flash ce1 lt logits16 act16; do paths=${paths//,$p,/,}; done
	paths=${paths#,}
	paths=${paths%,}
	if [[ ",$want," == *",flash,"* ]] && grep -q '^precision: bf16$' "$yaml"; then
		sed 's/^backend: cuda$/backend: cuda-bf16-flash/; /^precision: bf16$/d' "$yaml" >"${yaml%.yaml}-flash.yaml"
		yaml=${yaml%.yaml}-flash.yaml
	fi
	SFSWEEP_CUDA_FAST=$paths SFSWEEP_TEST_RUN_MAIN=1 timeout "$secs" "$WORK/sfsweep.test" train "$@" "$yaml"
}
# train_paths NAME PATHS...: sfsweep train on $WORK/NAME.yaml (train_cfg) once per value of
# SFSWEEP_CUDA_FAST, into $WORK/NAME-PATHS, logged to $OUT/NAME-speed-PATHS.log; tok_s NAME
# PATHS: the tokens/s that run reported
train_paths() {
	local name=$1 paths
	shift
	for paths in "$@"; do
		(cd "$WORK" && fast_train 150 "$paths" "$WORK/$name.yaml" -out "$WORK/$name-$paths") >"$OUT/$name-speed-$paths.log" 2>&1
	done
}
tok_s() { grep -o '[0-9]* tok/s' "$OUT/$1-speed-$2.log" | tail -1; }
# same_results A B: whether the sfsweep train runs in A and B have the same results but
# for the wall-clock time
same_results() {
	python3 -c '
import json, sys, glob
def load(d):
    f = glob.glob(d + "/**/result.json", recursive=True)
    if not f:
        return None
    r = json.load(open(f[0]))
    r.pop("seconds", None)
    return r
a, b = load(sys.argv[1]), load(sys.argv[2])
print("no result" if a is None or b is None else "same results" if a == b else "RESULTS DIFFER")
' "$@"
}
# last_losses DIR...: the last training loss of the sfsweep train run in each DIR
last_losses() {
	python3 -c '
import json, sys, glob
out = []
for d in sys.argv[1:]:
    f = glob.glob(d + "/**/result.json", recursive=True)
    c = json.load(open(f[0])).get("curves") or [] if f else []
    out.append("%.5f" % c[-1]["train_loss"] if c else "none")
print(" and ".join(out))
' "$@"
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if has ptx; then
	# the kernels compiled by this toolkit, loaded instead of the embedded copy; where it
	# cannot (no nvcc, or it fails), the PTX build.sh made with Debian's CUDA 12.4, which
	# any newer driver loads: the embedded copy lacks the fast paths' kernels. The PTX
	# generator is part of the arithmetic (libdevice's expf), so the verdict names it.
	if nvcc -ptx -arch=sm_80 -O3 -fmad=false -o "$OUT/kernels.ptx" "$ROOT/training/cuda/kernels.cu" 2>"$OUT/ptx.log"; then
		export SFSWEEP_CUDA_PTX=$OUT/kernels.ptx
		verdict ptx "compiled with $(nvcc --version | tail -1)"
	elif [ -f "$BIN/kernels.ptx" ]; then
		cp "$BIN/kernels.ptx" "$OUT/kernels.ptx"
		export SFSWEEP_CUDA_PTX=$OUT/kernels.ptx
		verdict ptx "nvcc FAILED (see ptx.log); loading the PTX built with $(head -1 "$BIN/kernels.ptx.txt" 2>/dev/null || echo 'the toolkit of build.sh')"
	else verdict ptx "FAILED (see ptx.log)"; fi
fi

train_cfg() { # name precision seq micro batch_tokens steps eval_every seed
	cat >"$WORK/$1.yaml" <<YAML
model: llama-124m
backend: cuda
precision: $2
data: {path: $DATA/go-gpt2}
seq_len: $3
micro_batch: $4
batch_tokens: $5
steps: $6
eval_every: $7
eval_seqs: 64
test_seqs: 64
seed: ${8:-1}
optimizer: {name: sfadamw, lr: 2e-3, beta1: 0.9, beta2: 0.99}
YAML
}

if has speed; then
	# llama-124m, context 512, the paper's 0.5M-token batch (64 micro-batches of 16 x 512):
	# sfsweep train (steady state: its first step is not in its tokens/s) against the
	# PyTorch peer at its best, on this GPU
	train_cfg speed bf16 512 16 524288 6 0
	(cd "$WORK" && timeout 150 bash -c "SFSWEEP_TEST_RUN_MAIN=1 '$WORK/sfsweep.test' train -out '$WORK/speed' '$WORK/speed.yaml'") >"$OUT/speed-sfsweep.log" 2>&1
	# the peer's figure moves by up to 25% between runs: best of two, in this call
	for i in 1 2; do
		timeout 240 python3 "$ROOT/bench/torch/torch_llama_cuda.py" --batch 16 --seq 512 --accum 64 --steps 3 --warmup 1 --bf16 --sdpa --compile >"$OUT/speed-torch-$i.json" 2>"$OUT/speed-torch-$i.log"
	done
	python3 "$ROOT/bench/gpu/speed_table.py" "$OUT/speed-sfsweep.log" "$OUT"/speed-torch-[12].json | tee "$OUT/speed.txt"
fi

# profile_run NAME PATHS RATE: the speed stage's model and micro-batch, one micro-batch
# per step, with SFSWEEP_CUDA_FAST=PATHS, its device time by category (attention, head/CE,
# norms, ...) from CUDA events (SFSWEEP_CUDA_PROFILE) into $OUT/NAME.txt, the first step
# left out as warm-up; prints the table and returns the verdict's figures in $profiled,
# against the wall time of a micro-batch at RATE tokens/s (a speed run's, the timing mode
# off) if given
profile_run() {
	local name=$1 paths=$2 rate=$3 rc total top wall
	train_cfg "$name" bf16 512 16 8192 8 0
	rm -f "$OUT/$name.txt"
	(cd "$WORK" && export SFSWEEP_CUDA_PROFILE="$OUT/$name.txt" && fast_train 120 "$paths" "$WORK/$name.yaml" -out "$WORK/$name") >"$OUT/$name.log" 2>&1
	rc=$?
	cat "$OUT/$name.txt" 2>/dev/null
	# the last table's device time per micro-batch, and its five largest categories
	total=$(awk '$1 == "total" { t = $4 } END { print t }' "$OUT/$name.txt" 2>/dev/null)
	top=$(awk '$1 == "category" { n = 0; on = 1; next } $1 == "total" { on = 0 } on { row[++n] = $1 " " $5 }
		END { for (i = 1; i <= n; i++) print row[i] }' "$OUT/$name.txt" 2>/dev/null | sort -k2 -rn | head -5 | paste -sd ' ')
	wall=${rate:+; the speed run: $(awk -v r="$rate" 'BEGIN { printf "%.1f", 16 * 512 * 1000 / r }') ms of wall time}
	profiled="exit $rc; ${total:-no} ms of device time per micro-batch$wall: $top"
}

if has profile; then
	profile_run profile "" "$(grep -o '[0-9]* tok/s' "$OUT/speed-sfsweep.log" 2>/dev/null | tail -1 | cut -d' ' -f1)"
	verdict profile "$profiled"
fi

if has prove; then
	# one call that fits a session's device time (219 s on an H200; run as
	# "ptx prove"): first the speed figure, llama-124m's steady-state tokens/s through
	# sfsweep train on the default path, with stages 1, 2 and 4's paths ($STAGED) and with
	# every fast path ($ALL), each against one run of the PyTorch peer; then the fast
	# paths' correctness in five groups of tests, each under its own timeout: the exact
	# paths and the default path against the cpu backend, flash and rope, the paths that
	# change the bits (lt, logits16, act16, ce1; two groups), and the attention and
	# cross-entropy kernels against PyTorch (bench/gpu/torch_ref.py); last, the device
	# time by category with every path on (profile_run)
	train_cfg prove bf16 512 16 524288 5 0
	train_paths prove "" "$STAGED" "$ALL"
	timeout 150 python3 "$ROOT/bench/torch/torch_llama_cuda.py" --batch 16 --seq 512 --accum 64 --steps 3 --warmup 1 --bf16 --sdpa --compile >"$OUT/prove-torch.json" 2>"$OUT/prove-torch.log"
	ratios=
	for p in "" "$STAGED" "$ALL"; do
		r=$(python3 "$ROOT/bench/gpu/speed_table.py" "$OUT/prove-speed-$p.log" "$OUT/prove-torch.json" | tee -a "$OUT/prove-speed.txt" | grep -o '= [0-9.]*$')
		ratios="$ratios, ${p:-default} $(tok_s prove "$p") (${r#= }x the peer)"
	done
	losses=$(last_losses "$WORK/prove-" "$WORK/prove-$STAGED" "$WORK/prove-$ALL")
	# the figures first, so that a call cut short by its limit still shows them
	verdict "prove speed" "${ratios#, }; last train loss $losses"
	for g in "exact:TestFastPathsBitwise|TestRoundKernels|TestNormKernels|TestFusedCrossEntropyKernels|TestMatchesCPU|TestDeterministic" \
		"flash:TestFlashKernels|TestFlashEngine|TestRopeKernels|TestRopeInPermute" \
		"lt:TestLtProducts|TestLtEngine|TestOnlineCrossEntropy|TestGraphBesideNewAndClose" "out16:TestLogits16|TestAct16" \
		"torch:TestKernelsAgainstTorch"; do
		(cd "$ROOT/training/cuda" && timeout 90 "$WORK/cuda.test" -test.v -test.run "${g#*:}" -test.timeout 85s) >"$OUT/prove-${g%%:*}.log" 2>&1
		verdict "prove ${g%%:*}" "exit $? ($(grep -c '^--- PASS' "$OUT/prove-${g%%:*}.log") passed, $(grep -c '^--- FAIL' "$OUT/prove-${g%%:*}.log") failed: $(grep -o '^--- FAIL: [A-Za-z0-9_]*' "$OUT/prove-${g%%:*}.log" | cut -d' ' -f3 | paste -sd ' '))$(grep -m1 -o '== torch: .*' "$OUT/prove-${g%%:*}.log" | sed 's/^== /; /')"
	done
	# where the time goes with every path on, for the work after this call
	profile_run prove-profile "$ALL" "$(tok_s prove "$ALL" | cut -d' ' -f1)" >/dev/null
	verdict "prove profile" "$profiled"
fi

if has unit; then
	# the package's tests on the default paths, then the engine against the cpu backend,
	# run to run and in its memory on the path before them ($OFF)
	(cd "$ROOT/training/cuda" && timeout 150 "$WORK/cuda.test" -test.v -test.timeout 140s) >"$OUT/unit.log" 2>&1
	rc=$?
	(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_FAST=$OFF timeout 90 "$WORK/cuda.test" -test.v -test.run 'TestMatchesCPU|TestDeterministic|TestNeedBytes' -test.timeout 85s) >"$OUT/unit-off.log" 2>&1
	verdict unit "exit $rc ($(grep -c '^--- PASS' "$OUT/unit.log") passed, $(grep -c '^--- FAIL' "$OUT/unit.log") failed, $(grep -c '^--- SKIP' "$OUT/unit.log") skipped); $OFF exit $? ($(grep -c '^--- PASS' "$OUT/unit-off.log") passed, $(grep -c '^--- FAIL' "$OUT/unit-off.log") failed)"
fi

if has fast; then
	# the exact fast paths (the four on by default, ce,round,norm,swiglu, and embed; their
	# kernels come from the ptx stage's PTX): the package's tests again with them named (TestMatchesCPU,
	# TestDeterministic, TestNeedBytes on them), then the speed stage's run without them
	# ($OFF), with the first two, with all four, and with all four and the online
	# cross-entropy (ce1, which changes the bits), in this call
	(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_FAST=$EXACT timeout 150 "$WORK/cuda.test" -test.v -test.timeout 140s) >"$OUT/fast-unit.log" 2>&1
	rc=$?
	train_cfg fast bf16 512 16 524288 6 0
	speeds= same=
	for paths in "$OFF" "$OFF,ce,round" "$EXACT" "$EXACT,ce1"; do
		(cd "$WORK" && fast_train 150 "$paths" "$WORK/fast.yaml" -out "$WORK/fast-$paths") >"$OUT/fast-speed-$paths.log" 2>&1
		speeds="$speeds, $paths $(grep -o '[0-9]* tok/s' "$OUT/fast-speed-$paths.log" | tail -1)"
		[ "$paths" = "$OFF" ] && continue
		# each exact run's results must be bitwise those of the run without the paths but
		# for the wall-clock time; ce1's last training loss should agree to about 1e-4
		case $paths in
		*ce1) same="$same, ${paths}: last train loss $(last_losses "$WORK/fast-$paths" "$WORK/fast-$OFF" | sed 's/ and /, without /')" ;;
		*) same="$same, ${paths}: $(same_results "$WORK/fast-$OFF" "$WORK/fast-$paths")" ;;
		esac
	done
	verdict fast "unit exit $rc ($(grep -c '^--- PASS' "$OUT/fast-unit.log") passed, $(grep -c '^--- FAIL' "$OUT/fast-unit.log") failed); speed${speeds#,}$same"
fi

if has flash; then
	# deterministic flash attention (SFSWEEP_CUDA_FAST=flash; its kernels come from the ptx
	# stage's PTX): the kernels against the Go mirror and float64 and twice bitwise, T not a
	# multiple of the tile included (TestFlashKernels); engines against float32 and today's
	# bf16 path, twice bitwise (TestFlashEngine); NeedBytes; the exact paths still bitwise
	# (TestFastPathsBitwise); the kernels against PyTorch's float64 and its own flash
	# attention on the same inputs (TestKernelsAgainstTorch). Then compute-sanitizer's
	# memcheck and racecheck on the kernels' tests (TestFlashKernels, TestRopeKernels), and
	# the speed stage's run with the exact fast paths, without and with flash, and with
	# RoPE inside flash's permutation (rope: TestRopeInPermute, bitwise flash's results,
	# which the two runs' results must show too).
	(cd "$ROOT/training/cuda" && timeout 270 "$WORK/cuda.test" -test.v -test.run 'Flash|FastPaths|RopeKernels|RopeInPermute|AgainstTorch' -test.timeout 260s) >"$OUT/flash-unit.log" 2>&1
	rc=$?
	san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
	sanitized=
	for tool in memcheck racecheck; do
		(cd "$ROOT/training/cuda" && timeout 150 "$san" --tool "$tool" --error-exitcode 9 "$WORK/cuda.test" -test.run 'TestFlashKernels$|TestRopeKernels$' -test.timeout 140s) >"$OUT/flash-$tool.log" 2>&1
		sanitized="$sanitized, $tool exit $? ($(grep -m1 -o 'ERROR SUMMARY: [0-9]* error' "$OUT/flash-$tool.log" || echo 'no summary'))"
	done
	train_cfg flash bf16 512 16 524288 6 0
	train_paths flash "$EXACT" "$EXACT,flash" "$EXACT,flash,rope"
	off=$(tok_s flash "$EXACT") on=$(tok_s flash "$EXACT,flash") rope=$(tok_s flash "$EXACT,flash,rope")
	# the last training loss of each: flash changes the bits, not the model
	losses=$(last_losses "$WORK/flash-$EXACT" "$WORK/flash-$EXACT,flash")
	same=$(same_results "$WORK/flash-$EXACT,flash" "$WORK/flash-$EXACT,flash,rope")
	verdict flash "unit exit $rc ($(grep -c '^--- PASS' "$OUT/flash-unit.log") passed, $(grep -c '^--- FAIL' "$OUT/flash-unit.log") failed)$sanitized; speed $EXACT ${off:-?}, +flash ${on:-?}, +rope ${rope:-?} ($same); last train loss $losses"
fi

if has pack; then
	# several small trials on one GPU at once, each engine on its own stream and cuBLAS
	# handle. First the engines: two and four twin-size engines of each precision trained
	# at once from goroutines of their own, bitwise against the same engines one after
	# another (TestPackedBitwise); then four of 300 steps at once against one after
	# another, timed (TestPackedThroughput). Then the trials: four twin-size trials
	# (twin-llama, 2,048 tokens a step, as sweeps/examples/*-tiny.yaml) through sfsweep
	# run, one after another (-slots 1) and at once (-slots 4; -window 4 keeps all four in
	# flight, where sfsweep run's default keeps two). The goal is 3x the
	# throughput, with every result bitwise that of the trial run alone.
	(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_PACK_STEPS=${SFSWEEP_CUDA_PACK_STEPS:-300} timeout 240 "$WORK/cuda.test" -test.v -test.run 'TestPacked' -test.timeout 230s) >"$OUT/pack-unit.log" 2>&1
	rc=$?
	engines=$(grep -o 'pack: .*' "$OUT/pack-unit.log" | sed 's/^pack: \([^:]*\):.*: \([0-9.]*x\)$/\1 \2/' | paste -sd ',' | sed 's/,/, /g')
	verdict "pack engines" "unit exit $rc ($(grep -c '^--- PASS' "$OUT/pack-unit.log") passed, $(grep -c '^--- FAIL' "$OUT/pack-unit.log") failed); engines at once: ${engines:-none}"
	cat >"$WORK/pack.yaml" <<YAML
name: gpu-pack
model: twin-llama
backend: cuda
data: {path: $DATA/go-byte}
seq_len: 128
micro_batch: 16
batch_tokens: 2048
steps: 300
eval_every: 100
eval_seqs: 16
test_seqs: 16
seeds: [1, 2, 3, 4]
optimizers:
  - {name: sfadamw, lr: 2e-3, betas: [[0.9, 0.99]]}
YAML
	walls=
	for slots in 1 4; do
		start=$(date +%s)
		(cd "$WORK" && timeout 300 bash -c "SFSWEEP_TEST_RUN_MAIN=1 '$WORK/sfsweep.test' run -ui=false -page off -slots $slots -window 4 -dir '$WORK/pack-state-$slots' -out '$WORK/pack-out-$slots' '$WORK/pack.yaml'") >"$OUT/pack-slots-$slots.log" 2>&1
		walls="$walls, -slots $slots exit $? in $(($(date +%s) - start)) s"
	done
	trials=$(python3 - "$WORK/pack-state-1" "$WORK/pack-state-4" <<'PY'
import glob, json, os, sys
def load(state):
    # each result with the time it was written: its trial's end, on this machine's clock
    out = {}
    for f in glob.glob(state + "/s3/*/trials/*/result.json"):
        r = json.load(open(f))
        r["_end"] = os.path.getmtime(f)
        out[os.path.basename(os.path.dirname(f))] = r
    return out
alone, packed = load(sys.argv[1]), load(sys.argv[2])
if len(alone) != 4 or alone.keys() != packed.keys():
    print(f"FAILED ({len(alone)} and {len(packed)} results; see pack-slots-*.log)")
    sys.exit(0)
tokens = sum(r["tokens"] for r in alone.values())
one = sum(r["seconds"] for r in alone.values())  # one after another: the trials' times add up
# at once: from the first trial's start to the last one's end, so that trials started
# apart count
four = max(r["_end"] for r in packed.values()) - min(r["_end"] - r["seconds"] for r in packed.values())
strip = lambda r: {k: v for k, v in r.items() if k not in ("seconds", "_end")}
same = all(strip(alone[k]) == strip(packed[k]) for k in alone)
print(f"one after another {tokens / one:.0f} tok/s ({one:.1f} s of training), at once {tokens / four:.0f} tok/s "
      f"({four:.1f} s): {one / four:.2f}x; results {'bitwise the same' if same else 'DIFFER'}")
PY
)
	verdict "pack trials" "$trials$walls"
	# admission on the GPU: sfsweep run admits its trials to the GPU's memory (SFSWEEP_GPU
	# caps what it believes the GPU has). A first run under a cap too small for one trial
	# fails it at once and says what it needs; under a cap of one and a half trials, two
	# seeds at -slots 2 must take turns (the second waits for memory) and both complete.
	sed 's/^seeds: .*/seeds: [1, 2]/; s/^steps: .*/steps: 100/' "$WORK/pack.yaml" >"$WORK/admit.yaml"
	uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i "${CUDA_VISIBLE_DEVICES:-0}" 2>/dev/null | head -1)
	admit() { # admit NAME MIB SLOTS
		(cd "$WORK" && SFSWEEP_GPU="0, ${uuid:-GPU-0}, $2 MiB" timeout 300 bash -c "SFSWEEP_TEST_RUN_MAIN=1 '$WORK/sfsweep.test' run -ui=false -page off -slots $3 -window 2 -dir '$WORK/$1-state' -out '$WORK/$1-out' '$WORK/admit.yaml'") >"$OUT/pack-$1.log" 2>&1
	}
	admit admit-small 800 1
	# what the refused trial needs, from the log or, where the run's log is quiet, the
	# failure its trial left in the store
	need=$(cat "$OUT/pack-admit-small.log" "$WORK"/admit-small-state/s3/*/trials/*/failed.json 2>/dev/null |
		grep -o 'needs [0-9.]* GiB' | head -1 | awk '{print $2}')
	if [ -n "$need" ]; then
		cap=$(awk -v n="$need" 'BEGIN { printf "%d", 768 + 1.5 * n * 1024 }')
		admit admit-turns "$cap" 2
		done=$(find "$WORK/admit-turns-state" -name result.json -path '*/trials/*' | wc -l)
		waited=$(grep -c 'waiting for GPU memory' "$OUT/pack-admit-turns.log")
		admission="a trial needs $need GiB; under a cap of $cap MiB, $done of 2 completed, $waited waiting line(s) (want 2 and at least 1)"
	else
		admission="FAILED: no trial refused under a cap of 800 MiB (see pack-admit-small.log)"
	fi
	verdict "pack admission" "$admission"
fi

if has attn; then
	# the flash kernels alone (BenchmarkFlashAttention, their kernels from the ptx stage's
	# PTX) against PyTorch's SDPA on the same shapes, in one call: llama-124m's attention at
	# T = 512, micro-batches of 16 and 32, milliseconds and TFLOP/s of the forward and the
	# backward pass, and PyTorch's time over ours
	(cd "$ROOT/training/cuda" && timeout 120 "$WORK/cuda.test" -test.run NONE -test.bench 'FlashAttention' -test.benchtime 20x -test.timeout 110s) >"$OUT/attn-flash.log" 2>&1
	timeout 120 python3 "$ROOT/bench/gpu/attn_bench.py" >"$OUT/attn-torch.jsonl" 2>"$OUT/attn-torch.log"
	python3 "$ROOT/bench/gpu/attn_table.py" "$OUT/attn-flash.log" "$OUT/attn-torch.jsonl" | tee "$OUT/attn.txt"
	verdict attn "$(tail -1 "$OUT/attn.txt")"
fi

if has host; then
	# the host side of a step (docs/gpu.md, "The host side"): the losses kept on the device
	# until the step ends (Accumulate), tokens through pinned buffers, and the micro-batch
	# graph (SFSWEEP_CUDA_FAST=graph). First the engine, without the exact fast paths ($OFF)
	# and with them (their kernels from the ptx stage's PTX): Accumulate against Forward and Backward
	# and graph replay against eager, bitwise over three steps of a device optimizer, a
	# refused capture falling back (TestAccumulate*, TestGraph*). Then the training loop,
	# losses read per step against per micro-batch, through a kill and a resume, eager and
	# with the graph (TestRunCUDAAccumulatedBitwise). Then the speed, in one process:
	# Forward+Backward, Accumulate and Accumulate+graph (TestHostSpeed), and the speed
	# stage's run through sfsweep train with the exact paths but embed (whose results the
	# next run's must equal), with them all, and with graph too.
	units=
	for paths in "$OFF" "$EXACT"; do
		(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_FAST=$paths timeout 200 "$WORK/cuda.test" -test.v -test.run 'TestAccumulate|TestGraph' -test.timeout 190s) >"$OUT/host-unit-$paths.log" 2>&1
		units="$units, $paths exit $? ($(grep -c '^--- PASS' "$OUT/host-unit-$paths.log") passed, $(grep -c '^--- FAIL' "$OUT/host-unit-$paths.log") failed)"
	done
	loops=
	for paths in "" graph; do
		(cd "$ROOT/training" && SFSWEEP_CUDA_FAST=$paths SFSWEEP_TEST_DATA=$DATA/go-byte timeout 150 "$WORK/training.test" -test.v -test.run 'TestRunCUDAAccumulatedBitwise' -test.timeout 140s) >"$OUT/host-loop-${paths:-eager}.log" 2>&1
		loops="$loops, ${paths:-eager} exit $? ($(grep -c -- '--- FAIL' "$OUT/host-loop-${paths:-eager}.log") failed)"
	done
	(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_FAST=$EXACT SFSWEEP_CUDA_HOST_SPEED=1 timeout 200 "$WORK/cuda.test" -test.v -test.run 'TestHostSpeed$' -test.timeout 190s) >"$OUT/host-speed.log" 2>&1
	grep -o 'host speed: .*' "$OUT/host-speed.log" | tee "$OUT/host-speed.txt"
	train_cfg host bf16 512 16 524288 4 0
	for paths in "$EXACT,-embed" "$EXACT" "$EXACT,graph"; do
		(cd "$WORK" && fast_train 150 "$paths" "$WORK/host.yaml" -out "$WORK/host-$paths") >"$OUT/host-train-$paths.log" 2>&1
	done
	noembed=$(grep -o '[0-9]* tok/s' "$OUT/host-train-$EXACT,-embed.log" | tail -1 | cut -d' ' -f1)
	eager=$(grep -o '[0-9]* tok/s' "$OUT/host-train-$EXACT.log" | tail -1 | cut -d' ' -f1)
	graph=$(grep -o '[0-9]* tok/s' "$OUT/host-train-$EXACT,graph.log" | tail -1 | cut -d' ' -f1)
	ratio=$(awk -v a="${eager:-0}" -v b="${graph:-0}" 'BEGIN { if (a > 0) printf "%.3fx", b / a; else print "?" }')
	# TestGraphCaptureFallsBack refuses a capture on purpose: only the runs' logs count
	failed=$(grep -ho 'could not be captured.*' "$OUT/host-loop-graph.log" "$OUT/host-train-$EXACT,graph.log" "$OUT/host-speed.log" | head -1)
	verdict host "unit${units#,}; loop${loops#,}; sfsweep train $EXACT,-embed ${noembed:-?} tok/s, $EXACT ${eager:-?} tok/s ($(same_results "$WORK/host-$EXACT,-embed" "$WORK/host-$EXACT")), +graph ${graph:-?} tok/s ($ratio)${failed:+; CAPTURE FAILED: $failed}; one process: $(paste -sd ';' "$OUT/host-speed.txt")"
fi

if has lt; then
	# the products on cuBLASLt (SFSWEEP_CUDA_FAST=lt) and their outputs in bfloat16 where
	# autocast keeps them so (logits16: the logits; act16: the MLP's gu and dh; their kernels
	# from the ptx stage's PTX): each product shape against float64 and GemmEx, twice
	# bitwise (TestLtProducts); the new kernels bitwise their float32 twins on the widened
	# inputs (TestLogits16Kernels, TestAct16Kernels); engines against float32 and the paths
	# without them, twice bitwise (TestLtEngine, TestLogits16Engine, TestAct16Engine);
	# Accumulate and the micro-batch graph with all of them and the exact paths, bitwise
	# against Forward and Backward (TestAccumulate*, TestGraph*). Then the speed stage's run
	# with the exact paths, adding lt, logits16 and act16 in turn, then with every path
	# ($ALL: the speed against the peer that the speed stage measures), and with rows as
	# well (the flash kernels reading qkv's rows, whose results must be $ALL's), and the
	# last training loss of each.
	(cd "$ROOT/training/cuda" && SFSWEEP_CUDA_FAST=$EXACT,lt,logits16,act16 timeout 280 "$WORK/cuda.test" -test.v -test.run 'TestLt|TestLogits16|TestAct16|TestAccumulate|TestGraph' -test.timeout 270s) >"$OUT/lt-unit.log" 2>&1
	rc=$?
	same=$(grep -o 'cuBLASLt and GemmEx differ in [0-9]* of [0-9]*' "$OUT/lt-unit.log" | awk '{ d += $6; n += $8 } END { printf "%d of %d elements", d, n }')
	train_cfg lt bf16 512 16 524288 6 0
	runs=("$EXACT" "$EXACT,lt" "$EXACT,lt,logits16" "$EXACT,lt,logits16,act16" "$ALL" "$ALL,rows")
	train_paths lt "${runs[@]}"
	speeds=$(for p in "${runs[@]}"; do echo -n "$p $(tok_s lt "$p"); "; done)
	losses=$(last_losses "${runs[@]/#/$WORK/lt-}")
	verdict lt "unit exit $rc ($(grep -c '^--- PASS' "$OUT/lt-unit.log") passed, $(grep -c '^--- FAIL' "$OUT/lt-unit.log") failed); products differing from GemmEx: ${same:-?}; speed ${speeds%; }; last train loss $losses; rows: $(same_results "$WORK/lt-$ALL" "$WORK/lt-$ALL,rows")"
fi

if has loop; then
	(cd "$ROOT/training" && SFSWEEP_TEST_DATA=$DATA/go-byte timeout 150 "$WORK/training.test" -test.v -test.run 'CUDA|DeviceLoop|BF16' -test.timeout 140s) >"$OUT/loop.log" 2>&1
	verdict loop "exit $? ($(grep -c '^--- PASS' "$OUT/loop.log") passed, $(grep -c '^--- FAIL' "$OUT/loop.log") failed)"
fi

if has kill; then
	# one bf16 trial of a small LLaMA (GPT-2 vocabulary) on the GPU: its gpu worker process is SIGKILLed between
	# two checkpoints, a second one resumes it, and the result must be bitwise the
	# uninterrupted run's (TestWorkerKilledMidTrain)
	cat >"$WORK/kill.yaml" <<YAML
name: gpu-worker-kill
model_config: {arch: llama, vocab: 50304, dim: 128, layers: 2, heads: 2, context: 256, hidden: 344, batch: 4}
backend: cuda
precision: bf16
data: {path: $DATA/go-gpt2}
seq_len: 256
micro_batch: 4
batch_tokens: 2048
steps: 200
eval_every: 2
eval_seqs: 4
test_seqs: 8
checkpoint_every: 50
seeds: [1]
optimizers:
  - {name: sfadamw, lr: 3e-3, betas: [[0.9, 0.99]]}
tables:
  - {kind: hyperparameters, name: gpu_worker_kill}
YAML
	(cd "$ROOT/cmd/sfsweep" && SFSWEEP_KILL_MANIFEST=$WORK/kill.yaml timeout 150 "$WORK/sfsweep.test" -test.v -test.run 'TestWorkerKilledMidTrain$' -test.timeout 145s) >"$OUT/kill.log" 2>&1
	verdict kill "exit $? $(grep -E 'killed at step|^--- ' "$OUT/kill.log" | tr '\n' ' ')"
fi

if has sweep; then
	# the GPU twin of tab:c_sweep_05M end to end on the embedded stack
	sed "s|^  default: gpt2|  path: $DATA/go-gpt2|; /^  max_bytes:/d" "$ROOT/sweeps/examples/c-sweep-05M-gpu.yaml" >"$WORK/sweep.yaml"
	start=$(date +%s)
	(cd "$WORK" && timeout 270 bash -c "SFSWEEP_TEST_RUN_MAIN=1 '$WORK/sfsweep.test' run -ui=false -dir '$WORK/state' -out '$WORK/out' '$WORK/sweep.yaml'") >"$OUT/sweep.log" 2>&1
	rc=$?
	(cd "$WORK" && tar czf "$OUT/sweep-out.tgz" out)
	verdict sweep "exit $rc in $(($(date +%s) - start)) s; $(find "$WORK/out" -type f | wc -l) files written"
	cat "$WORK"/out/*/tables/*.md 2>/dev/null | head -20
fi

if has curve; then
	# 200 steps (SFSWEEP_CURVE_STEPS) of llama-124m in bf16 and in fp32 from the same
	# initialisation and data, and in fp32 from another seed: the yardstick; and bf16 with
	# every fast path ($ALL, the arithmetic they would make, with its kernels from the ptx
	# stage's PTX) against the same yardstick, in a state of its own (a result is reused by
	# its trial's ID, which does not hold the fast paths). The fast paths' run comes second,
	# so that a call cut short keeps it.
	for run in fp32:1: bf16:1:all fp32:2: bf16:1:; do
		IFS=: read -r p seed all <<<"$run"
		name=curve-$p-$seed${all:+-all}
		train_cfg "$name" $p 512 16 8192 "${SFSWEEP_CURVE_STEPS:-200}" 20 $seed
		(cd "$WORK" && fast_train 100 "${all:+$ALL}" "$WORK/$name.yaml" -json -out "$WORK/curve${all:+-all}") >"$OUT/$name.json" 2>"$OUT/$name.log"
	done
	python3 "$ROOT/bench/gpu/compare_curves.py" "$OUT/curve-fp32-1.json" "$OUT/curve-bf16-1.json" "$OUT/curve-fp32-2.json" | tee "$OUT/curve.txt"
	echo "with every fast path ($ALL):" | tee -a "$OUT/curve.txt"
	python3 "$ROOT/bench/gpu/compare_curves.py" "$OUT/curve-fp32-1.json" "$OUT/curve-bf16-1-all.json" "$OUT/curve-fp32-2.json" | tee -a "$OUT/curve.txt"
fi


if has arith; then
	# whether the candidate arithmetic ($STAGED: flash and ce1 change the bits) trains as
	# well as the default one: llama-124m in bf16, 100 steps of 65,536 tokens (8
	# micro-batches of 16 x 512), with the default paths and with $STAGED, on the same
	# seeds (SFSWEEP_ARITH_SEEDS, 8 by default; a seed's two arms run one after the other,
	# so a call cut short keeps whole pairs), each arm in a state of its own. Each run's
	# result is OUTDIR/arith-ARM-SEED.json; `go run ./bench/gpu/arith OUTDIR` tests their
	# final validation losses for equivalence within 0.5% (docs/gpu.md), and the verdict
	# here gives the losses' means.
	for seed in $(seq 1 "${SFSWEEP_ARITH_SEEDS:-8}"); do
		train_cfg "arith-$seed" bf16 512 16 65536 100 25 "$seed"
		for arm in default:"" staged:"$STAGED"; do
			(cd "$WORK" && fast_train 120 "${arm#*:}" "$WORK/arith-$seed.yaml" -json -out "$WORK/arith-${arm%%:*}") >"$OUT/arith-${arm%%:*}-$seed.json" 2>"$OUT/arith-${arm%%:*}-$seed.log"
		done
	done
	verdict arith "$(python3 - "$OUT" <<'PY'
import glob, json, os, sys
arms, broken = {}, []
for f in sorted(glob.glob(sys.argv[1] + "/arith-*-*.json")):
    arm, seed = os.path.basename(f)[6:-5].rsplit("-", 1)
    try:
        r = json.load(open(f))
    except ValueError:
        continue  # cut short
    if r.get("status") != "completed" or r["primary"] not in r.get("val_loss", {}):
        broken.append(f"{arm} seed {seed} {r.get('status')}")
        continue
    arms.setdefault(arm, {})[int(seed)] = (r["val_loss"][r["primary"]], r["tokens"] / max(r["seconds"], 1e-9))
pairs = sorted(set(arms.get("default", {})) & set(arms.get("staged", {})))
mean = lambda arm, i: sum(arms[arm][s][i] for s in pairs) / len(pairs)
print((f"{len(pairs)} seeds with both arms completed; final validation loss default {mean('default', 0):.5f}, staged {mean('staged', 0):.5f}; "
       f"tokens/s default {mean('default', 1):.0f}, staged {mean('staged', 1):.0f}" if pairs else "FAILED: no seed with both arms completed (see arith-*.log)")
      + (f"; NOT COMPLETED: {', '.join(broken)}" if broken else ""))
PY
)"
fi

if has program; then
	# the reference PyTorch trainer (examples/pytorch/train.py: bf16 autocast, SDPA and
	# torch.compile on a GPU where torch has them) on llama-124m, 20 steps of 32,768
	# tokens: once as a trial of sfsweep run (the embedded stack, a gpu worker, checkpoints
	# mirrored to the store), once bare with the same parameters. The ratio of their
	# tokens/s is what the orchestration costs (docs/trainer.md).
	cat >"$WORK/program.yaml" <<YAML
name: program-gpu
trainer: {name: torch-llama, program: $ROOT/examples/pytorch/train.py, interpreter: python3, version: gpu-check}
model: llama-124m
gpus: 1
data: {path: $DATA/go-gpt2}
seq_len: 512
micro_batch: 16
batch_tokens: 32768
steps: 20
eval_every: 10
eval_seqs: 64
test_seqs: 64
checkpoint_every: 10
seeds: [0]
optimizers:
  - {name: sfadamw, lr: 2e-3, betas: [[0.9, 0.99]]}
YAML
	(cd "$WORK" && timeout 400 bash -c "SFSWEEP_TEST_RUN_MAIN=1 '$WORK/sfsweep.test' run -ui=false -page off -dir '$WORK/program-state' -out '$WORK/program-out' '$WORK/program.yaml'") >"$OUT/program-sfsweep.log" 2>&1
	start=$(date +%s%N)
	timeout 400 python3 "$ROOT/examples/pytorch/train.py" --optimizer=sfadamw --lr=0.002 --beta1=0.9 --beta2=0.99 \
		--steps=20 --seed=0 --micro_batch=16 --seq_len=512 --batch_tokens=32768 --eval_every=10 --eval_seqs=64 \
		--test_seqs=64 --checkpoint_every=10 --checkpoint_dir="$WORK/program-bare" --data="$DATA/go-gpt2" \
		--dim=768 --layers=12 --heads=12 --hidden=2048 --vocab=50304 --context=512 >"$OUT/program-bare.log" 2>&1
	end=$(date +%s%N)
	python3 - "$WORK/program-state" "$start" "$end" <<'PY' | tee "$OUT/program.txt"
import glob, json, sys
state, bare = sys.argv[1], (int(sys.argv[3]) - int(sys.argv[2])) / 1e9
res = [json.load(open(f)) for f in glob.glob(state + "/s3/*/trials/*/result.json")]
if not res:
    print("== program: FAILED (no result; see program-sfsweep.log)")
    sys.exit(0)
r, tokens = res[0], 20 * 32768
print(f"== program: {r['status']}, val {r['val_loss']}; through sfsweep run {tokens / r['seconds']:.0f} tokens/s "
      f"({r['seconds']:.1f} s), bare {tokens / bare:.0f} tokens/s ({bare:.1f} s): {bare / r['seconds']:.3f}x")
PY
fi
