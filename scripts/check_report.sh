#!/usr/bin/env bash
# The test of `tune report` (ctest Report.PagesRenderInChromium): builds the report of committed records (conv3x3 on
# the H200 and the H100, the GEMM wgmma-only records of both, the small conv3x3 stream on the H200), opens each page in headless Chromium and fails when
# the page logs a console error or an image does not decode (no data, or naturalWidth 0). Saves a screenshot of each
# page beside the report. Checks the roofline: charts where ceilings exist, a note where none do.
# Usage: scripts/check_report.sh BUILD_DIR [OUT_DIR]   (OUT_DIR default BUILD_DIR/report-check)
# Exit 77 (ctest: skipped) when Chromium is not installed and cannot be: scripts/setup.sh installs it.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:?usage: scripts/check_report.sh BUILD_DIR [OUT_DIR]}"
out="${2:-$build/report-check}"

scripts/setup-python.sh
browser="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$browser" ]]; then
  echo "check_report: SKIPPED: chromium is not installed (apt-get install chromium, or scripts/setup.sh)" >&2
  exit 77
fi

rm -rf "$out"
mkdir -p "$out"
"$build/tune" report results/runs/conv3x3/sm_90/h200/W=8192_H=8192 results/runs/conv3x3/sm_90/h100/W=8192_H=8192 \
  results/runs/gemm_bf16/sm_90/h200-wgmma-only results/runs/gemm_bf16/sm_90/h100-wgmma-only \
  results/runs/conv3x3_stream_small \
  --ceilings results/ceilings/h200.json --ceilings results/ceilings/h100.json -o "$out" --bootstrap 4 --replay-seeds 3

# The roofline: a chart per GPU where ceilings exist (both from the files under results/ceilings),
# and a note saying why where none do (a copy of the H200 record whose run.json holds no ceiling, no --ceilings).
failed=0
for page in conv3x3 gemm_bf16; do
  for gpu in "NVIDIA H200" "NVIDIA H100 80GB HBM3"; do
    grep -q "alt=\"roofline of $gpu\"" "$out/$page.html" || { echo "check_report: $page: no roofline of $gpu" >&2; failed=1; }
  done
done
bare="$out/.no-ceilings/conv3x3/sm_90/W=8192_H=8192"
mkdir -p "$bare"
cp results/runs/conv3x3/sm_90/h200/W=8192_H=8192/evaluations.csv "$bare/"
sed -E '/"(copy_bandwidth_gbps|ceiling_[a-z_]+)"/d' results/runs/conv3x3/sm_90/h200/W=8192_H=8192/run.json >"$bare/run.json"
"$build/tune" report "$bare" -o "$out/.no-ceilings/report" --no-replay --bootstrap 2 >/dev/null
if grep -q 'alt="roofline of' "$out/.no-ceilings/report/conv3x3.html" ||
   ! grep -q 'not on the roofline: no ceilings of NVIDIA H200' "$out/.no-ceilings/report/conv3x3.html"; then
  echo "check_report: a record without ceilings should get the note, not a roofline" >&2
  failed=1
fi
rm -rf "$out/.no-ceilings"
# A streamed record adds the loader's stage breakdown.
grep -q 'alt="loader stage breakdown"' "$out/conv3x3_stream_small.html" ||
  { echo "check_report: conv3x3_stream_small: no loader stage breakdown" >&2; failed=1; }

for page in conv3x3 gemm_bf16 conv3x3_stream_small; do
  html="$out/$page.html"
  [[ -s "$html" ]] || { echo "check_report: $html was not written" >&2; failed=1; continue; }
  if grep -Eq '<(img|script|link)[^>]+(src|href)="https?:' "$html"; then
    echo "check_report: $html loads something from the network" >&2
    failed=1
  fi
  # A copy of the page with a probe: after load it counts the images that decoded and writes the verdict into
  # the DOM, which --dump-dom prints; window errors are written there too.
  probe="$out/.probe-$page.html"
  sed 's#</body>#<script>window.addEventListener("error",function(e){document.title="PROBE-ERROR "+e.message});window.addEventListener("load",function(){var images=document.images,broken=[];for(var i=0;i<images.length;i++){if(!images[i].complete||images[i].naturalWidth===0)broken.push(images[i].alt)}var d=document.createElement("pre");d.id="probe";d.textContent="PROBE images="+images.length+" broken="+broken.length+" ["+broken.join("; ")+"]";document.body.appendChild(d)});</script></body>#' \
    "$html" >"$probe"
  common=(--headless --disable-gpu --no-sandbox --hide-scrollbars --virtual-time-budget=5000 --user-data-dir="$out/.chromium")
  dom="$("$browser" "${common[@]}" --enable-logging=stderr --v=0 --dump-dom "file://$(realpath "$probe")" 2>"$out/.console-$page.log" || true)"
  verdict="$(grep -o 'PROBE images=[0-9]* broken=[0-9]* \[[^]]*\]' <<<"$dom" || true)"
  echo "check_report: $page: ${verdict:-no verdict}" >&2
  if [[ -z "$verdict" ]] || ! grep -q ' broken=0 ' <<<"$verdict" || grep -q 'PROBE images=0 ' <<<"$verdict"; then
    echo "check_report: $page: images missing or broken" >&2
    failed=1
  fi
  if grep -q '<title>PROBE-ERROR' <<<"$dom" || grep -Eq 'CONSOLE|Uncaught' "$out/.console-$page.log"; then
    echo "check_report: $page: console errors:" >&2
    grep -E 'CONSOLE|Uncaught|PROBE-ERROR' "$out/.console-$page.log" >&2 || true
    failed=1
  fi
  "$browser" "${common[@]}" --window-size=1300,2600 --screenshot="$out/$page.png" "file://$(realpath "$html")" \
    >/dev/null 2>&1 || true
  [[ -s "$out/$page.png" ]] || { echo "check_report: no screenshot of $page" >&2; failed=1; }
done
rm -rf "$out/.chromium"
((failed)) || rm -f "$out"/.probe-*.html "$out"/.console-*.log
if ((failed)); then
  echo "check_report: FAILED (report in $out)" >&2
  exit 1
fi
echo "check_report: pages render, every image decodes, no console error (screenshots in $out)" >&2
