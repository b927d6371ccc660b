#!/usr/bin/env bash
# A/B: stored GEMM entries compiled from the committed template (exp_old) and the edited one (exp_new).
export KERNLATHE_SOURCE_DIR=$PWD LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ex=.device/bin/kernlathe_gemm_example
for rep in 1 2; do
for shape in "16384 4096 4096" "4096 6144 4096" "4096 28672 4096" "4096 4096 14336" "4096 4096 4096" "1000 4096 4096" "128 4096 4096" "16384 28672 4096"; do
  for v in old new; do
    tag=$(echo $shape | tr ' ' x)
    nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader -lms 20 > $OUT/clk_${v}_${tag}_$rep.txt &
    pid=$!
    $ex .devrun/exp_$v $shape nk > $OUT/ex_${v}_${tag}_$rep.txt 2>&1
    kill $pid
    echo "$v $tag $rep $(tail -1 $OUT/ex_${v}_${tag}_$rep.txt) | $(grep -c . $OUT/ex_${v}_${tag}_$rep.txt)"
  done
done
done
cd $OUT && tar czf ab.tgz ex_* clk_* && rm ex_* clk_*
