#!/usr/bin/env bash
# A stand-in for nvcc in the campaign tests, which run on machines without CUDA: it answers
# --version like nvcc, and for a compile it checks that the input exists, writes an empty
# shared object at -o OUT and prints a ptxas-like `-Xptxas -v` report on stderr, as nvcc
# does. The compile cache keeps kernel.cu beside kernel.so, so the scripted bench worker
# reads the candidate's source from there.
#
# A source holding the word KS_FAKE_COMPILE_ERROR fails the way nvcc does: a diagnostic
# naming the file and line on stderr, exit 1, no output file.
#
# A full disk: while the file $KS_FAKE_NVCC_FULL_DISK names exists, a compile fails the way
# nvcc's host compiler does when its temporary folder is full ("error writing to ...: No space
# left on device", exit 1, no output file), except the first $KS_FAKE_NVCC_FULL_DISK_SKIP
# compiles (default 0), counted in that file's sibling .count (one line per compile).
set -u
out=
input=
while [ $# -gt 0 ]; do
  case "$1" in
    --version)
      echo "nvcc: NVIDIA (R) Cuda compiler driver"
      echo "Copyright (c) 2005-2025 NVIDIA Corporation"
      echo "Cuda compilation tools, release 13.0, V13.0.0 (fake_nvcc.sh for tests)"
      exit 0 ;;
    -o) out=${2:-}; shift ;;
    -o*) out=${1#-o} ;;
    -I|-Xcompiler|-Xptxas|-cudart|-x|-arch|-l|-L) shift ;;
    -*) ;;
    *.cu) input=$1 ;;
  esac
  shift
done
if [ -z "$input" ] || [ ! -f "$input" ]; then
  echo "nvcc fatal   : No input files specified; use option --help for more information" >&2
  exit 1
fi
if [ -z "$out" ]; then
  echo "nvcc fatal   : fake_nvcc.sh needs -o OUT" >&2
  exit 1
fi
full=${KS_FAKE_NVCC_FULL_DISK:-}
if [ -n "$full" ] && [ -e "$full" ]; then
  echo compile >>"$full.count"
  if [ "$(wc -l <"$full.count")" -gt "${KS_FAKE_NVCC_FULL_DISK_SKIP:-0}" ]; then
    echo "cc1plus: fatal error: error writing to /tmp/ccQ2fAKE.s: No space left on device" >&2
    echo "compilation terminated." >&2
    exit 1
  fi
fi
line=$(grep -n KS_FAKE_COMPILE_ERROR "$input" | head -n 1 | cut -d: -f1)
if [ -n "$line" ]; then
  echo "$input($line): error: identifier \"KS_FAKE_COMPILE_ERROR\" is undefined" >&2
  echo "1 error detected in the compilation of \"$input\"." >&2
  exit 1
fi
: >"$out" || exit 1
cat >&2 <<'PTXAS'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z11fake_kernelPKfPfl' for 'sm_90a'
ptxas info    : Function properties for _Z11fake_kernelPKfPfl
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, used 0 barriers, 380 bytes cmem[0]
PTXAS
exit 0
