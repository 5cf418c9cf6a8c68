#!/usr/bin/env bash
# Builds what bench/gpu/check.sh runs, on a Linux x86-64 machine with Go and gcc and no GPU
# and no CUDA toolkit, into .gpubin/ (git-ignored): the cuda-tagged test binaries of
# training/cuda, training and cmd/sfsweep (xz-compressed), the two prepared corpora, and
# the kernels' PTX made with Debian's CUDA 12.4 (the ptx stage's fallback).
#
# CUDA headers: CUDA_INCLUDE, else /usr/include when Debian's nvidia-cuda-dev is installed
# there, else those bench/gpu/toolkit.sh unpacks into .cuda/ (CUDA 12.4 from Debian trixie,
# fetched on the first run). gorgonia.org/cu compiles against them as against the
# toolkit's. Libraries: no CUDA library is needed here. The binaries link libcuda.so.1,
# libcublas.so.13 and libcublasLt.so.13 by soname; link-time stand-ins holding the symbols
# the binaries use are generated into .cuda/stubs/ from the linker's list of undefined ones,
# and the GPU machine's real libraries are loaded at run time.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
INC=${CUDA_INCLUDE:-/usr/include}
if [ -z "${CUDA_INCLUDE:-}" ] && [ ! -f /usr/include/cuda.h ]; then
	bench/gpu/toolkit.sh fetch
	INC=$ROOT/.cuda/trixie/usr/include
fi
STUBS=$ROOT/.cuda/stubs
mkdir -p "$STUBS" .gpubin/data
export GOTOOLCHAIN=local CGO_ENABLED=1
export CGO_CFLAGS="-I$ROOT/training/cuda/include -I$INC -Wno-deprecated-declarations"
export CGO_LDFLAGS="-L$STUBS -Wl,-z,lazy"

stubs() { # regenerate the stand-ins from the undefined symbols of a link of package $1
	: >"$STUBS/all.txt.new"
	[ -f "$STUBS/all.txt" ] && cp "$STUBS/all.txt" "$STUBS/all.txt.new"
	go test -c -tags cuda -o /dev/null "$1" 2>&1 | grep -o "undefined reference to \`[A-Za-z0-9_]*'" |
		sed "s/undefined reference to \`//; s/'//" >>"$STUBS/all.txt.new" || true
	sort -u "$STUBS/all.txt.new" >"$STUBS/all.txt"
	grep '^cu[A-Z]' "$STUBS/all.txt" | sed 's/.*/void &(void){}/' >"$STUBS/cuda.c"
	grep '^cublas' "$STUBS/all.txt" | grep -v '^cublasLt' | sed 's/.*/void &(void){}/' >"$STUBS/cublas.c"
	grep '^cublasLt' "$STUBS/all.txt" | sed 's/.*/void &(void){}/' >"$STUBS/cublasLt.c"
	gcc -shared -fPIC -o "$STUBS/libcuda.so" -Wl,-soname,libcuda.so.1 "$STUBS/cuda.c"
	gcc -shared -fPIC -o "$STUBS/libcublas.so" -Wl,-soname,libcublas.so.13 "$STUBS/cublas.c"
	gcc -shared -fPIC -o "$STUBS/libcublasLt.so" -Wl,-soname,libcublasLt.so.13 "$STUBS/cublasLt.c"
}
[ -f "$STUBS/libcublasLt.so" ] || { echo 'void sfsweep_stub(void){}' >"$STUBS/e.c"; for l in cuda cublas cublasLt; do gcc -shared -fPIC -o "$STUBS/lib$l.so" "$STUBS/e.c"; done; }
stubs ./training/cuda

go test -c -tags cuda -o .gpubin/cuda.test ./training/cuda
go test -c -tags cuda -o .gpubin/training.test ./training
go test -c -tags cuda -ldflags "-s -w" -o .gpubin/sfsweep.test ./cmd/sfsweep
xz -6 -T0 -f .gpubin/cuda.test .gpubin/training.test .gpubin/sfsweep.test

# the kernels' PTX, for check.sh's ptx stage where the GPU machine's nvcc is missing or
# fails: Debian's CUDA 12.4 (toolkit.sh) with the stage's flags, and which nvcc made it
NVCC=$ROOT/.cuda/trixie/bin/nvcc
if [ -x "$NVCC" ] || bench/gpu/toolkit.sh fetch >/dev/null; then
	"$NVCC" -ptx -arch=sm_80 -O3 -fmad=false -o .gpubin/kernels.ptx training/cuda/kernels.cu
	"$NVCC" --version | tail -2 | head -1 >.gpubin/kernels.ptx.txt
fi

for c in "byte 400000 go-byte" "gpt2 8000000 go-gpt2"; do
	set -- $c
	[ -d ".gpubin/data/$3" ] && continue
	tmp=$(mktemp -d)
	go run ./cmd/sfsweep data default -tokenizer "$1" -max-bytes "$2" -out "$tmp" >/dev/null
	mv "$tmp"/gosrc-* ".gpubin/data/$3" && rm -rf "$tmp"
done
du -sh .gpubin
