#!/usr/bin/env bash
# Debian's CUDA toolkit (section non-free) unpacked into the git-ignored .cuda/, on a Debian
# machine whose apt sources enable only main, without installing anything or changing the
# system's apt configuration: a private sources list and private list and cache folders.
# No GPU is needed; CI never runs this.
#
# Usage: bench/gpu/toolkit.sh [fetch|ptxas] [RELEASE]
#
#   fetch  (default) fetches and unpacks RELEASE into .cuda/RELEASE/ and writes the wrappers
#          .cuda/RELEASE/bin/{nvcc,ptxas,cuobjdump,nvdisasm}. A second run only checks them.
#          `PATH=$PWD/.cuda/trixie/bin:$PATH go generate -tags cuda ./training/cuda` then
#          regenerates kernels.ptx with it.
#   ptxas  compiles training/cuda/kernels.cu to PTX as bench/gpu/check.sh's ptx stage does,
#          assembles it for sm_90 and writes out/toolkit/RELEASE/report.md: per kernel the
#          registers, shared memory, stack and spills (ptxas -v) and the SASS loads, stores
#          and tensor-core instructions (cuobjdump -sass); and how the PTX differs from the
#          committed kernels.ptx. Exits 1 if a kernel spills. PTXAS_FLAGS adds flags to
#          ptxas (-maxrregcount=24: what a register cap would cost).
#
# RELEASE: trixie (default; CUDA 12.4: sm_90a wgmma and TMA, and g++-12 is a supported host
# compiler) or bookworm (CUDA 11.8: sm_80 mma.sync at most; it supports g++ up to 11 only,
# so its nvcc runs with -ccbin g++-12 -allow-unsupported-compiler, which is sound for PTX:
# the host compiler only preprocesses, cicc generates the device code).
#
# Packages, at pinned versions (the PTX generator is part of the arithmetic): the whole of
# nvidia-cuda-toolkit (nvcc, cicc, ptxas, cuobjdump, nvdisasm, libdevice, compute-sanitizer),
# the headers of nvidia-cuda-dev (16 MB of its 0.8-0.9 GB: cuda_bf16.h, cuda.h, cublas*.h),
# and of libcu++-dev (nv/target, which cuda_fp16.h includes; section main). libnvvm4 is not
# needed: cicc links no libnvvm. When Debian moves on, the pinned versions leave
# deb.debian.org; CUDA_DEB_MIRROR=http://snapshot.debian.org/archive/debian/20250801T000000Z
# fetches them from the archive.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMD=fetch
case ${1:-} in fetch | ptxas) CMD=$1 && shift ;; esac
REL=${1:-trixie}
MIRROR=${CUDA_DEB_MIRROR:-http://deb.debian.org/debian}
case $REL in
trixie) PKGS="nvidia-cuda-toolkit=12.4.131~12.4.1-2 nvidia-cuda-dev=12.4.127~12.4.1-2 libcu++-dev=2.3.2-2"
	HOSTFLAGS= ;;
bookworm) PKGS="nvidia-cuda-toolkit=11.8.89~11.8.0-5~deb12u1 nvidia-cuda-dev=11.8.89~11.8.0-5~deb12u1 libcu++-dev=1.8.1-2"
	HOSTFLAGS="-ccbin g++-12 -allow-unsupported-compiler" ;;
*) echo "toolkit.sh: unknown release $REL (trixie or bookworm)" >&2 && exit 2 ;;
esac
DEST=$ROOT/.cuda/$REL
TK=$DEST/usr/lib/nvidia-cuda-toolkit

check() { # the wrappers run and name the release's version
	local v
	v=$("$DEST/bin/nvcc" --version | tail -2 | head -1) && "$DEST/bin/ptxas" --version >/dev/null &&
		"$DEST/bin/cuobjdump" --version >/dev/null && "$DEST/bin/nvdisasm" --version >/dev/null &&
		echo "toolkit.sh: .cuda/$REL: $v (nvcc, ptxas, cuobjdump, nvdisasm)"
}

fetch() {
	if [ "$(cat "$DEST/.packages" 2>/dev/null)" = "$PKGS" ]; then check && return; fi
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null ||
		{ echo "toolkit.sh: needs apt-get and dpkg-deb (Debian)" >&2 && return 1; }
	rm -rf "$DEST" && mkdir -p "$DEST"
	local apt=$ROOT/.cuda/apt/$REL
	mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/debs"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $REL main non-free" >"$apt/sources.list"
	local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache::Archives=$apt/archives"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root -qq)
	case $MIRROR in *snapshot.debian.org*) o+=(-o Acquire::Check-Valid-Until=false) ;; esac
	apt-get "${o[@]}" update
	rm -f "$apt"/debs/*.deb
	# shellcheck disable=SC2086 # PKGS is a list
	(cd "$apt/debs" && apt-get "${o[@]}" download $PKGS)
	local deb
	for deb in "$apt"/debs/*.deb; do
		case $deb in
		*/nvidia-cuda-dev_*) dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$DEST" --wildcards './usr/include/*' ;;
		*) dpkg-deb -x "$deb" "$DEST" ;;
		esac
	done
	rm -rf "$apt" && rmdir "$ROOT/.cuda/apt" 2>/dev/null || true

	# nvcc.profile is a link to /etc/nvcc.profile, whose paths are /usr/lib/nvidia-cuda-toolkit:
	# the same settings relative to nvcc's folder, and the unpacked headers
	rm -f "$TK/bin/nvcc.profile"
	cat >"$TK/bin/nvcc.profile" <<'EOF'
NVVMIR_LIBRARY_DIR = $(_HERE_)/../libdevice
PATH += $(_HERE_):$(_HERE_)/../../../bin:
INCLUDES += "-I$(_HERE_)/../../../include" $(_SPACE_)
EOF
	mkdir -p "$DEST/bin"
	# shellcheck disable=SC2016 # $0 is the wrapper's
	printf '#!/bin/sh\nexec "$(dirname "$0")/../usr/lib/nvidia-cuda-toolkit/bin/nvcc" %s "$@"\n' "$HOSTFLAGS" >"$DEST/bin/nvcc"
	local t
	# shellcheck disable=SC2016
	for t in ptxas cuobjdump nvdisasm; do printf '#!/bin/sh\nexec "$(dirname "$0")/../usr/bin/%s" "$@"\n' "$t" >"$DEST/bin/$t"; done
	chmod +x "$DEST"/bin/*
	check
	echo "$PKGS" >"$DEST/.packages"
}

report() {
	local out=$ROOT/out/toolkit/$REL k=$ROOT/training/cuda/kernels.ptx
	mkdir -p "$out"
	"$DEST/bin/nvcc" -ptx -arch=sm_80 -O3 -fmad=false -o "$out/kernels.ptx" "$ROOT/training/cuda/kernels.cu"
	# shellcheck disable=SC2086 # a list of flags
	"$DEST/bin/ptxas" -arch=sm_90 -v ${PTXAS_FLAGS:-} -o "$out/kernels.cubin" "$out/kernels.ptx" 2>"$out/ptxas.log"
	"$DEST/bin/cuobjdump" -sass "$out/kernels.cubin" >"$out/kernels.sass"
	{
		echo "# kernels.cu with $("$DEST/bin/nvcc" --version | tail -2 | head -1)"
		echo
		echo "nvcc -ptx -arch=sm_80 -O3 -fmad=false; ptxas -arch=sm_90 -v${PTXAS_FLAGS:+ $PTXAS_FLAGS}; cuobjdump -sass"
		echo
		echo "| kernel | registers | static smem B | stack B | spill stores B | spill loads B | LDG.128 | STG.128 | LDL/STL | HMMA |"
		echo "|---|---|---|---|---|---|---|---|---|---|"
		awk -f - "$out/ptxas.log" "$out/kernels.sass" <<'EOF'
FNR == NR && /Compiling entry function/ { k = $0; sub(/.*function '/, "", k); sub(/'.*/, "", k); ks[++n] = k; next }
FNR == NR && /stack frame/ { st[k] = $1; ss[k] = $5; sl[k] = $9; next }
FNR == NR && /Used [0-9]+ registers/ { r[k] = $0; sub(/.*Used /, "", r[k]); sub(/ .*/, "", r[k])
	sm[k] = 0; if ($0 ~ /bytes smem/) { s = $0; sub(/ bytes smem.*/, "", s); sub(/.* /, "", s); sm[k] = s }; next }
FNR != NR && /Function :/ { f = $3; next }
FNR != NR && /LDG\.E\.128/ { lg[f]++ }
FNR != NR && /STG\.E\.128/ { sg[f]++ }
FNR != NR && /(LDL|STL)/ { lo[f]++ }
FNR != NR && /HMMA/ { hm[f]++ }
END { for (i = 1; i <= n; i++) { k = ks[i]
	printf "| %s | %s | %s | %s | %s | %s | %d | %d | %d | %d |\n", k, r[k], sm[k], st[k], ss[k], sl[k], lg[k], sg[k], lo[k], hm[k]
	spill += ss[k] + sl[k] }
	printf "\n%d kernels; spilled bytes (stores + loads) over all: %d\n", n, n ? spill : -1 }
EOF
		echo
		compare "$out/kernels.ptx" "$k"
	} >"$out/report.md"
	cat "$out/report.md"
	grep -q '^[1-9][0-9]* kernels; .* over all: 0$' "$out/report.md" ||
		{ echo "toolkit.sh: a kernel spills, or ptxas -v named none" >&2 && return 1; }
}

compare() { # this toolkit's PTX ($1) against the committed one ($2), after their headers
	local d f
	d=$(diff <(body "$1") <(body "$2") | tee "${1%.ptx}.diff" || true)
	echo "## Against the committed kernels.ptx ($(grep -m1 'release' "$2" | sed 's|^// ||'))"
	echo
	if [ -z "$d" ]; then echo "Identical after the header (.version)." && return; fi
	echo "After the header (.version), $(grep -c '^<' <<<"$d") lines here and $(grep -c '^>' <<<"$d") committed differ."
	f=$(diff <(fops "$1") <(fops "$2") | grep '^[<>]' | sed 's/^</here:     /; s/^>/committed:/' || true)
	echo "The floating-point instructions of each kernel, with their immediates and without their"
	if [ -z "$f" ]; then echo "registers, compared as sorted lists: the same." && echo; else
		printf 'registers, compared as sorted lists, differ in:\n\n```\n%s\n```\n\n' "$f"
	fi
	sass "$1" "$2"
	if [ "$(wc -l <<<"$d")" -le 80 ]; then
		printf 'The whole difference (here <, committed >):\n\n```\n%s\n```\n' "$d"
	else echo "The whole difference (here <, committed >): ${1%.ptx}.diff" | sed "s|$ROOT/||"; fi
}

sass() { # both PTX assembled by this ptxas, the committed one under this toolkit's PTX ISA
	local v t d
	v=$(grep -m1 '^\.version' "$1") t=$(mktemp -d)
	sed "s/^\.version .*/$v/" "$2" >"$t/c.ptx"
	if "$DEST/bin/ptxas" -arch=sm_90 -o "$t/c.cubin" "$t/c.ptx" 2>/dev/null; then
		"$DEST/bin/cuobjdump" -sass "$t/c.cubin" >"$t/c.sass"
		d=$(diff "${1%.ptx}.sass" "$t/c.sass" | grep '^[<>].*/\*[0-9a-f]*\*/ ' | sed 's|/\* 0x.*||; s/  */ /g' || true)
		echo "The SASS of both for sm_90 (the committed PTX assembled here as $v):" \
			"$(grep -c '^<' <<<"$d" || true) instructions differ${d:+ (here <, committed >)}:"
		if [ -n "$d" ]; then printf '\n```\n%s\n```\n' "$(head -40 <<<"$d")"; fi
	else echo "This ptxas does not assemble the committed PTX as $v."; fi
	echo
	rm -rf "$t"
}

body() { sed '1,/^\.address_size/d' "$1"; }

fops() { # per kernel, the sorted floating-point instructions with registers erased
	awk '/^\.visible \.entry/ { k = $3; sub(/\(.*/, "", k) }
	/^\t[a-z@]/ && k != "" { l = $0; sub(/^\t(@%p[0-9]+ )?/, "", l); split(l, t, /[ \t]+/)
		if (t[1] !~ /\.(f32|f64|bf16|bf16x2|f16|f16x2)$/ && t[1] !~ /\.f32\./ || t[1] ~ /^(mov|ld|st)\./) next
		gsub(/%[a-z]+[0-9]+/, "R", l); gsub(/[ \t]+/, " ", l); print k, l }' "$1" | sort
}

case $CMD in
fetch) fetch ;;
ptxas) fetch && report ;;
esac
