"""Which BLAS this PyTorch computes its matrix products with, and on how many threads.

blas_info() multiplies two matrices (so that a lazily loaded BLAS is mapped), then reads
the shared libraries mapped into this process: the one that answers OpenBLAS's, BLIS's or
MKL's own query functions names the vendor; MKL linked into torch itself shows in its build
configuration. Debian's python3-torch is built against the generic libblas.so.3, which is
the Netlib reference implementation (unblocked loops, one thread: "reference", from its
directory .../blas/) unless the alternatives or LD_LIBRARY_PATH point elsewhere; any other
library that answers no query is "unknown".

  python3 blas.py   # prints the JSON
"""
import ctypes
import json
import os
import re

import torch


def _mapped_blas():
    """Real paths of the mapped shared libraries that look like a BLAS."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            base = os.path.basename(parts[5]).lower()
            if re.match(r"lib(open)?blas|libblis|libmkl_rt|libmkl_core|libcblas", base):
                p = os.path.realpath(parts[5])
                if p not in libs:
                    libs.append(p)
    return libs


def _query(lib):
    """(vendor, version, threads) from a library's own query functions, or None."""
    try:
        h = ctypes.CDLL(lib)
    except OSError:
        return None
    if hasattr(h, "openblas_get_config"):
        h.openblas_get_config.restype = ctypes.c_char_p
        threads = h.openblas_get_num_threads() if hasattr(h, "openblas_get_num_threads") else None
        return "openblas", h.openblas_get_config().decode(), threads
    if hasattr(h, "bli_info_get_version_str"):
        h.bli_info_get_version_str.restype = ctypes.c_char_p
        threads = h.bli_thread_get_num_threads() if hasattr(h, "bli_thread_get_num_threads") else None
        return "blis", h.bli_info_get_version_str().decode(), threads
    if hasattr(h, "mkl_get_max_threads"):
        return "mkl", "", h.mkl_get_max_threads()
    return None


def blas_info():
    """The BLAS torch uses: vendor, version, library, threads, torch's own threads."""
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    config = torch.__config__.show()
    m = re.search(r"BLAS_INFO=(\w+)", config)
    info = {
        "vendor": "reference",
        "version": "",
        "library": "",
        "threads": None,
        "torch_blas_info": m.group(1) if m else "",
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "parallel_backend": "",
    }
    m = re.search(r"ATen parallel backend: (.*)", torch.__config__.parallel_info())
    if m:
        info["parallel_backend"] = m.group(1).strip()
    libs = _mapped_blas()
    if libs:
        info["library"] = libs[0]
    for lib in libs:
        q = _query(lib)
        if q:
            info["vendor"], info["version"], info["threads"] = q
            info["library"] = lib
            return info
    if info["torch_blas_info"] == "mkl" or "Math Kernel Library" in config:
        # MKL linked into torch: it runs on torch's OpenMP threads
        info["vendor"], info["threads"] = "mkl", torch.get_num_threads()
        info["library"] = torch.__file__
        m = re.search(r"Math Kernel Library Version ([^\n]*)", config)
        info["version"] = m.group(1).strip() if m else ""
    elif "/blas/" in info["library"]:
        info["threads"] = 1  # Netlib's reference BLAS, where Debian's alternatives keep it
    else:
        info["vendor"] = "unknown"
    return info


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads first (0: leave)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    print(json.dumps(blas_info()))
