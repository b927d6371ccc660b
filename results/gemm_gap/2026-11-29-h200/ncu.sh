#!/usr/bin/env bash
# ncu comparison of our stored nn.Linear GEMM entries with cuBLAS at two shapes.
set -x
export KERNLATHE_SOURCE_DIR=$PWD LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
.device/bin/tune export gemm_bf16 -o $OUT/exp > $OUT/export.log 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
for shape in "4096 6144 4096" "16384 4096 4096"; do
  tag=$(echo $shape | tr ' ' x)
  .device/bin/kernlathe_gemm_example $OUT/exp $shape nk > $OUT/example_$tag.txt 2>&1
  timeout 200 $NCU --clock-control none --set full --launch-count 3 -o $OUT/ncu_$tag .device/bin/kernlathe_gemm_example $OUT/exp $shape nk > $OUT/ncu_$tag.log 2>&1
  $NCU --import $OUT/ncu_$tag.ncu-rep --page details > $OUT/ncu_$tag.details.txt 2>&1
  $NCU --import $OUT/ncu_$tag.ncu-rep --page raw --csv > $OUT/ncu_$tag.raw.csv 2>&1
done
ls -la $OUT
