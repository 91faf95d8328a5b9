# scripts/gpu_cells.sh - sourced by scripts/gpu_bundle.sh (which runs these cells on the CPU here and packs their curves
# as the reference) and by scripts/gpu_check.sh (which runs the same cells with --device cuda on the GPU machine and
# compares): one 20-step cell of each app that takes --device cuda, on generated data (nothing to download), sized
# like the tiny cells of tests/cuda_logic/test_app_cells.cpp. Defined once so the two runs cannot drift apart.
#
# Each entry: NAME|EXECUTABLE|ARGS (ARGS split on spaces). Every cell also gets DL_GPU_CELL_ARGS and, from the caller,
# --device, --threads, --out and a data cache of its own (DL_DATA_DIR). Attention dropout is 0 (its masks are drawn in
# another order on a device, docs/cuda.md), so the curves differ only by the order of float sums: close, not equal.
DL_GPU_CELLS=(
  "lra_listops_transformer|lra_benchmark|--preset tiny --task listops --model transformer --regime scratch --set train_size=512 --set val_size=64 --set test_size=64 --set eval_batches=2"
  "lra_listops_s4d|lra_benchmark|--preset tiny --task listops --model s4d --regime scratch --set train_size=512 --set val_size=64 --set test_size=64 --set eval_batches=2"
  "fpt_bit_xor_full|fpt|--task bit_xor --arm full --set dropout=0 --set train_size=2000 --set val_size=256 --set test_size=256"
  "pconv_compositional_lightconv|pretrained_convs|--task compositional --model lightconv --regime scratch --set train_size=512 --set val_size=64 --set test_size=64 --set eval_examples=64"
  "classify_listops_s4d|classify|--task listops --layer s4d --set warmup=2 --set train_size=512 --set val_size=64 --set test_size=64"
)
DL_GPU_CELL_STEPS=20
DL_GPU_CELL_ARGS=(cell --seed 0 --quiet --set steps=$DL_GPU_CELL_STEPS --set eval_every=5)
