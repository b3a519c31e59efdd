#!/bin/sh
# On the device machine (ci/gpu-test is the packed, self-describing run of
# the same): the GPU tests (real cuBLASLt kernels through the
# harness, the GPU oracle against the CPU's, the CUDA twins against their
# emulations), the GPU fusion table, and
# (with "flux") the FLUX.1 MLP-sized run of the real GELU_BIAS epilogue
# against the real eager path. Outputs to $1.
set -u
out=${1:-.}
cd "$(dirname "$0")/../build" || exit 1
export LD_LIBRARY_PATH="$PWD/rt:$PWD" ADM_SOURCE_DIR="$(dirname "$PWD")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
CK_RUN_CASE=Kernels ./tests/check_cuda 2>&1 | tee "$out/kernels.txt"
CK_RUN_CASE=Oracle ./tests/check_cuda 2>&1 | tee "$out/oracle.txt"
CK_RUN_CASE=Libm ./tests/check_cuda 2>&1 | tee "$out/libm.txt"
CK_RUN_CASE=Twins ./tests/check_cuda 2>&1 | tee "$out/twins.txt"
./admit-kernel table ../fusions/dit_gpu.json --json "$out/table_gpu.json" 2>&1 | tee "$out/table_gpu.txt"
./admit-kernel oracle ../captures/data/flux_fc1_gelu_small.h5 --gpu | tail -4
if [ "${2:-}" = flux ]; then
    ./admit-kernel capture synth -o /tmp/flux_fc1.h5 --tokens 4096 --channels 3072 --out-features 12288 --seed 1 \
        --gzip 0 --model "FLUX.1-dev (synthetic)" --layer transformer_blocks.0.ff.net.0
    time ./admit-kernel run /tmp/flux_fc1.h5 --reference cublas_eager --candidate cublaslt_gelu_bias \
        --candidate cublaslt_bias --reader fp8_e4m3 --json "$out/run_flux.json" 2>&1 | tee "$out/run_flux.txt"
fi
