#!/bin/bash
# The checks that need a real GPU, as one script for a machine that has one
# (docs/gpu_backend.md, "What was verified"): builds xla._core for that
# machine's Python with g++ (no Bazel needed there; EIGEN names Eigen's
# headers), runs the GPU tests on the device and the GPU benchmark (and,
# with SCALING_TIMEOUT=seconds, benchmarks/thread_scaling.py; with
# LOWP_TIMEOUT=seconds, the runtime ISA variants' tests and the s8/bf16
# matmul benchmark under each of the two widest variants (or those
# LOWP_ISAS names), at all threads and one; with WORKLOADS_TIMEOUT=seconds,
# benchmarks/cpu_workloads.py and benchmarks/jax_modules.py beside the
# jax.jit installed there; GPU=0 skips the GPU's tests and benchmark,
# GPU_BENCH=0 the benchmark alone), and leaves logs in $OUT (default
# /tmp/gpu_check).
#
#   EIGEN=/usr/include/eigen3 tools/gpu_device_check.sh [PYTHON]
set -u
PY=${1:-python3}
OUT=${OUT:-/tmp/gpu_check}
EIGEN=${EIGEN:-/usr/include/eigen3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L
"$PY" -c "import sys, llvmlite, numpy; print(sys.version.split()[0], 'llvmlite', llvmlite.__version__, 'numpy', numpy.__version__)"
"$PY" -c "import cuda.bindings; print('cuda-bindings', cuda.bindings.__version__)"

suffix=$("$PY" -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
if [ ! -f "xla/_core$suffix" ]; then
  obj=$(mktemp -d)
  includes=$("$PY" -m pybind11 --includes) || exit 1
  t=$(date +%s)
  # Everything for the baseline ISA; the runtime's hot kernels (matmul.cc,
  # convolution.cc, linalg.cc, spectral.cc, tiled_gemm.cc) once per ISA variant up to
  # avx512, and matmul_lowp.cc for every variant, as Bazel does
  # (xla/backends/cpu/runtime/isa.bzl).
  flags="-O2 -std=c++17 -fPIC -fvisibility=hidden -fwrapv $includes -I. -I$EIGEN"
  avx512="-mavx2 -mfma -mavx512f -mavx512bw -mavx512dq -mavx512vl"
  variants=(baseline "")
  [ "$(uname -m)" = x86_64 ] && variants+=(avx2 "-mavx2 -mfma" avx512 "$avx512" \
      avx512_vnni "$avx512 -mavx512vnni" avx512_vnni_bf16 "$avx512 -mavx512vnni -mavx512bf16" \
      amx "$avx512 -mavx512vnni -mavx512bf16 -mamx-tile -mamx-int8 -mamx-bf16")
  for f in csrc/buffer_assignment.cc csrc/fusion.cc csrc/graph.cc csrc/scheduler.cc \
           $(ls xla/backends/cpu/runtime/*.cc xla/backends/gpu/runtime/*.cc | \
             grep -v -e _test.cc -e /matmul.cc -e /convolution.cc -e /linalg.cc \
                  -e /spectral.cc -e /tiled_gemm.cc -e /matmul_lowp.cc) python/*.cc; do
    g++ $flags -c "$f" -o "$obj/0_$(basename "$f").o" &
  done
  for ((i = 0; i < ${#variants[@]}; i += 2)); do
    isa=${variants[i]}
    units=(matmul_lowp)
    [ $i -le 4 ] && units+=(matmul convolution linalg spectral tiled_gemm)
    for u in "${units[@]}"; do
      g++ $flags ${variants[i+1]} -DXLA_CPU_ISA_NAMESPACE=isa_$isa -DEigen=xla_eigen_$isa \
          -c "xla/backends/cpu/runtime/$u.cc" -o "$obj/$((i / 2 + 1))_${isa}_$u.o" &
    done
  done
  wait
  # The baseline objects first, then the variants narrowest first (the glob
  # sorts 0_, 1_, 2_, 3_): the linker keeps the first copy it sees of an
  # inline function that several units share.
  g++ -shared -o "xla/_core$suffix" "$obj"/*.o -lpthread || exit 1
  echo "built xla/_core$suffix in $(( $(date +%s) - t )) s"
fi
"$PY" -c "from xla import _core; print('cpu runtime variants:', _core.cpu_runtime_isas())"
# The low-precision matmuls on the widest runtime variants (AMX tiles where
# the CPU has them), when asked: their tests, then the benchmark per variant.
if [ -n "${LOWP_TIMEOUT:-}" ]; then
  timeout "$LOWP_TIMEOUT" "$PY" -m pytest -q -p no:cacheprovider -rs tests/cpu/test_cpu_isa.py \
      tests/cpu/test_cpu_low_precision_dots.py 2>&1 | tee "$OUT/lowp_tests.log" | tail -15
  for isa in ${LOWP_ISAS:-$("$PY" -c "from xla import _core; print(*_core.cpu_runtime_isas()[-2:])")}; do
    for threads in 0 1; do
      echo "== XLA_CPU_RUNTIME_ISA=$isa threads=${threads/#0/all}"
      PYTHONPATH=$PWD XLA_CPU_RUNTIME_ISA=$isa timeout "$LOWP_TIMEOUT" "$PY" \
          benchmarks/cpu_runtime_matmul.py --lowp --repeats=5 --threads=$threads 2>&1
    done
  done | tee "$OUT/lowp_bench.txt"
fi
if [ "${GPU:-1}" != 0 ] && ! "$PY" -c "import xla; print('platform gpu:', xla.devices('gpu'))"; then
  echo "no GPU platform: the GPU's tests and benchmark are skipped"
elif [ "${GPU:-1}" != 0 ]; then
  "$PY" -m pip show cuda-bindings nvidia-cublas nvidia-cufft 2>/dev/null | grep -E "^(Name|Version)"
  timeout ${TEST_TIMEOUT:-280} "$PY" -m pytest -q -p no:cacheprovider -rs tests/gpu tests/test_conformance.py \
      -k "not ptxas and not corpus_on_the_emulator and not Cpu and not emulator" \
      2>&1 | tee "$OUT/tests.log" | tail -40
  if [ "${GPU_BENCH:-1}" != 0 ]; then
    PYTHONPATH=$PWD timeout ${BENCH_TIMEOUT:-200} "$PY" benchmarks/gpu_backend.py --repeats=10 \
        --out="$OUT/gpu_backend.txt" 2>&1 | tee "$OUT/bench.log" | tail -20
  fi
fi
# The CPU workload table and the JAX-lowered modules beside jax.jit /
# XLA:CPU on this machine's CPU, when asked.
if [ -n "${WORKLOADS_TIMEOUT:-}" ]; then
  lscpu | grep -E "^(Model name|CPU\(s\)|Flags)" | cut -c1-400 > "$OUT/cpu.txt"
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu timeout "$WORKLOADS_TIMEOUT" "$PY" benchmarks/cpu_workloads.py \
      --repeats=${WORKLOADS_REPEATS:-7} 2>&1 | tee "$OUT/cpu_workloads.txt" | tail -40
  PYTHONPATH=$PWD JAX_PLATFORMS=cpu timeout "$WORKLOADS_TIMEOUT" "$PY" benchmarks/jax_modules.py \
      --repeats=${WORKLOADS_REPEATS:-7} 2>&1 | tee "$OUT/jax_modules.txt" | tail -12
fi
# The CPU backend's thread scaling on this (many-core) machine, when asked.
if [ -n "${SCALING_TIMEOUT:-}" ]; then
  PYTHONPATH=$PWD timeout "$SCALING_TIMEOUT" "$PY" benchmarks/thread_scaling.py --repeats=5 \
      2>&1 | tee "$OUT/thread_scaling.txt" | tail -20
fi
