#!/bin/sh
# Regenerates the bundled captures with the project's own generator.
# Usage: captures/make_bundled.sh path/to/admit-kernel
set -eu
ak=${1:-build/admit-kernel}
d=$(dirname "$0")/data
mkdir -p "$d"
# FLUX.1-dev MLP up-projection input statistics (max/p99 = 8), at a size CI
# can afford: 128 tokens x 1024 channels into 512 features.
"$ak" capture synth -o "$d/flux_fc1_gelu_small.h5" --op linear+gelu --tokens 128 --channels 1024 \
    --out-features 256 --seed 1 --model "FLUX.1-dev (synthetic)" --layer "transformer_blocks.0.ff.net.0" --step 0 --gzip 9 --with-outputs
"$ak" capture synth -o "$d/flux_fc1_linear_small.h5" --op linear --params '{}' --tokens 128 --channels 1024 \
    --out-features 256 --seed 2 --model "FLUX.1-dev (synthetic)" --layer "transformer_blocks.1.ff.net.0" --step 0 --gzip 9 --with-outputs
"$ak" capture synth -o "$d/dit_act_gelu.h5" --op gelu --tokens 256 --channels 1024 --seed 3 \
    --model "FLUX.1-dev (synthetic)" --layer "transformer_blocks.0.ff.act" --gzip 9
"$ak" capture synth -o "$d/dit_act_rmsnorm.h5" --op rmsnorm --params '{"eps":1e-6}' --tokens 256 --channels 1024 --seed 4 \
    --model "FLUX.1-dev (synthetic)" --layer "transformer_blocks.0.attn.norm_q" --gzip 9
