#!/bin/sh
# Regenerates the bundled captures with the project's own generator: DiT-
# shaped activations (outlier channels, max/p99 = 8; FLUX.1-dev MLP input
# statistics) at sizes CI can afford, each with the outputs of every
# registered implementation of its op (for replay) and two special cases.
# Usage: captures/make_bundled.sh path/to/admit-kernel
set -eu
ak=${1:-build/admit-kernel}
d=$(dirname "$0")/data
mkdir -p "$d"
rm -f "$d"/*.h5
syn() { "$ak" capture synth --gzip 9 --with-outputs --model "${MODEL:-FLUX.1-dev (synthetic)}" "$@"; }
syn -o "$d/flux_fc1_gelu_small.h5" --op linear+gelu --tokens 96 --channels 512 --out-features 256 --seed 1 \
    --layer transformer_blocks.0.ff.net.0 --step 0
syn -o "$d/flux_fc1_linear_small.h5" --op linear --params '{}' --tokens 96 --channels 512 --out-features 256 --seed 2 \
    --layer transformer_blocks.1.ff.net.0 --step 0
MODEL="Wan2.2 (synthetic)" syn -o "$d/wan_nvfp4_ff.h5" --op linear+gelu --nvfp4-grid --tokens 96 --channels 512 \
    --out-features 256 --seed 3 --layer blocks.0.ffn.0
MODEL="Helios (synthetic)" syn -o "$d/dit_gated_residual.h5" --op gated_residual --tokens 96 --channels 512 --seed 4 \
    --layer blocks.0.gate_msa
MODEL="LingBot Video (synthetic)" syn -o "$d/dit_rmsnorm.h5" --op rmsnorm --params '{"eps":1e-6}' --tokens 96 \
    --channels 512 --seed 5 --layer blocks.0.norm_q
MODEL="LTX-2 (synthetic)" syn -o "$d/dit_adaln_layernorm.h5" --op layernorm --params '{"eps":1e-6,"modulate":true}' \
    --tokens 96 --channels 512 --seed 6 --layer transformer_blocks.0.norm1
MODEL="FLUX.2 VAE (synthetic)" syn -o "$d/vae_groupnorm_silu.h5" --op groupnorm \
    --params '{"groups":32,"silu":true,"channels_last":true,"eps":1e-6}' --tokens 128 --channels 256 --seed 7 \
    --layer decoder.up_blocks.0.resnets.0.norm1
MODEL="Wan2.2 VAE (synthetic)" syn -o "$d/vae_rmsnorm_silu.h5" --op rmsnorm --params '{"eps":1e-6,"silu":true}' \
    --tokens 128 --channels 256 --seed 8 --layer decoder.upsamples.0.residual.0
MODEL="SANA-Video (synthetic)" syn -o "$d/sana_linear_attention.h5" --op linear_attention --params '{"eps":1e-6}' \
    --tokens 128 --channels 64 --seed 9 --layer transformer_blocks.0.attn1
MODEL="FLUX.1-dev (synthetic)" syn -o "$d/dit_attention_causal.h5" --op attention --params '{"causal":true}' \
    --tokens 160 --channels 64 --seed 10 --layer transformer_blocks.0.attn
MODEL="sglang admission (synthetic)" syn -o "$d/row_sum_fp32.h5" --op row_sum --params '{}' --dtype fp32 --tokens 64 \
    --channels 512 --seed 11 --layer row_sum
