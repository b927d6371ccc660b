#!/usr/bin/env bash
# WG_STORE bulk against the direct-store winner, through the example (burst rounds beside cuBLAS, every element checked).
export KERNLATHE_SOURCE_DIR=$PWD LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ex=.device/bin/kernlathe_gemm_example
for shape in "4096 6144 4096" "16384 4096 4096" "4096 4096 14336" "4096 28672 4096" "1000 4096 4096" "1000 4000 4096" "77 4001 4096"; do
  for v in pp128x128c2s6 pp128x128c2s4b co128x256c2s3b co128x256c1s3b co256x128c2s3b; do
    tag=$(echo $shape | tr ' ' x)
    $ex .devrun/v_${v} $shape nk > $OUT/ex_${v}_${tag}.txt 2>&1; rc=$?
    echo "$tag $v rc=$rc $(grep -o 'kernlathe [0-9.]* ms.*' $OUT/ex_${v}_${tag}.txt | tail -1) | $(grep -o '[0-9]* of [0-9]* elements' $OUT/ex_${v}_${tag}.txt) | $(grep -o 'same arch[^:]*\|exact\|default[^:]*' $OUT/ex_${v}_${tag}.txt | head -1)"
  done
done
cd $OUT && tar czf bulk.tgz ex_* && rm ex_*
