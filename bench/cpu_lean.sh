#!/bin/sh
# The CPU goals of issue 17 on FLUX.1's MLP at 1024 tokens (x 1024 x 3072
# bf16, w 12288 x 3072, bias, tanh-GELU), each figure a whole process
# under /usr/bin/time (user, system, wall seconds, peak KiB):
#   capture synth --with-outputs (7 emulations)       goal: under 60 s
#   replay (oracle, 6 candidates, special cases)      goal: at most 1.0x the NumPy template
#   replay_template.py (fp64 GEMM, GELU, RMS/max/mean per candidate)
#   run --reference eager --candidate fused_epilogue  goal: at most 2x replay
#   bench_oracle 1024 3072 12288 (in-process ratio)   goal: at most 1.5x one DGEMM
# On a shared machine quote CPU seconds (user + system) and ratios of runs
# taken in turn, not one wall time. Usage: bench/cpu_lean.sh BUILD_DIR [WORK_DIR]
set -eu
build=$(cd "$1" && pwd) work=${2:-/tmp/admit_cpu_lean}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work" && cd "$work"
k=$build/admit-kernel
/usr/bin/time -f "synth user %U sys %S wall %e peak_kib %M" "$k" capture synth -o flux1024.h5 --tokens 1024 \
    --channels 3072 --out-features 12288 --with-outputs --gzip 0 > /dev/null
ls -l flux1024.h5
for i in 1 2 3; do
    /usr/bin/time -f "replay user %U sys %S wall %e peak_kib %M" "$k" replay flux1024.h5 > /dev/null
    /usr/bin/time -f "template user %U sys %S wall %e peak_kib %M" /usr/bin/python3 "$src/bench/replay_template.py" \
        flux1024.h5 > /dev/null
    /usr/bin/time -f "run user %U sys %S wall %e peak_kib %M" "$k" run flux1024.h5 --reference eager \
        --candidate fused_epilogue > /dev/null
done
"$build/bench_oracle" 1024 3072 12288 3
