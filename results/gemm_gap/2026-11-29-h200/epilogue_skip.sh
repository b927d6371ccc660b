#!/usr/bin/env bash
# Epilogue cost: configurations with their stores (plain) and with the stores skipped (skip, results wrong).
export KERNLATHE_SOURCE_DIR=$PWD LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ex=.device/bin/kernlathe_gemm_example
for shape in "4096 6144 4096" "16384 4096 4096" "4096 4096 14336"; do
  for v in pp128x128c2s6 co128x256c2s3 co128x256c2s4 co256x128c2s4 co128x256c1s4; do
    for mode in plain skip; do
      tag=$(echo $shape | tr ' ' x)
      $ex .devrun/v_${v}_$mode $shape nk > $OUT/ex_${v}_${mode}_${tag}.txt 2>&1
      echo "$tag $v $mode $(grep -o 'kernlathe [0-9.]* ms.*' $OUT/ex_${v}_${mode}_${tag}.txt | tail -1) | $(grep -o '[0-9]* of [0-9]* elements' $OUT/ex_${v}_${mode}_${tag}.txt) | $(grep -c 'exact' $OUT/ex_${v}_${mode}_${tag}.txt)"
    done
  done
done
cd $OUT && tar czf epi.tgz ex_* && rm ex_*
