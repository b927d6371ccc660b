#!/usr/bin/env python3
"""Stacked bars of where a streamed workload's time goes, per configuration (issue 7).

Reads a record CSV of a streamed spec (evaluations.csv with the stream_* columns written by `tune run`) and draws,
for the fastest configurations and the default (naive loader) one, host-to-device, kernel and device-to-host time
beside the end-to-end time of a pass. Stages overlap in a good pipeline, so the bars' sum exceeds the total there.

    scripts/plot_stream_breakdown.py results/runs/conv3x3_stream_small/sm_90/.../evaluations.csv -o breakdown.png
"""
import argparse
import csv
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_stream_breakdown.py needs matplotlib: pip install matplotlib (or run it on the GPU host, which has it)")

STAGES = [("stream_copy_in_ms", "host to device", "#4878d0"), ("stream_kernel_ms", "kernel", "#ee854a"),
          ("stream_copy_out_ms", "device to host", "#6acc64")]
NOT_PARAMETERS = {"hash", "status", "message"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="evaluations.csv of a streamed spec")
    parser.add_argument("-o", "--output", default="stream_breakdown.png", help="image to write (png, svg, pdf)")
    parser.add_argument("--top", type=int, default=8, help="fastest configurations to show (default 8)")
    arguments = parser.parse_args()

    with open(arguments.csv, newline="") as stream:
        rows = list(csv.DictReader(stream))
    if not rows or "stream_end_to_end_ms" not in rows[0]:
        sys.exit(f"{arguments.csv}: no stream_* columns; is this the record of a streamed spec?")
    header = list(rows[0].keys())
    parameters = header[1:header.index("status")]
    ok = [row for row in rows if row["status"] == "ok" and float(row["stream_end_to_end_ms"] or 0) > 0]
    if not ok:
        sys.exit(f"{arguments.csv}: no successful streamed evaluation to plot")
    ok.sort(key=lambda row: float(row["stream_end_to_end_ms"]))
    chosen = ok[: arguments.top]
    # The slowest evaluated configuration stands in for the naive loader when the default was not among the top.
    slowest = ok[-1]
    if slowest not in chosen:
        chosen.append(slowest)

    labels = ["\n".join(f"{name}={row[name]}" for name in parameters if name not in NOT_PARAMETERS) for row in chosen]
    positions = range(len(chosen))
    width = 0.2
    figure, axes = plt.subplots(figsize=(max(8, 1.6 * len(chosen)), 6))
    for offset, (column, label, colour) in enumerate(STAGES):
        axes.bar([p + (offset - 1) * width for p in positions], [float(row[column]) for row in chosen], width,
                 label=label, color=colour)
    axes.plot(list(positions), [float(row["stream_end_to_end_ms"]) for row in chosen], "k_", markersize=40,
              markeredgewidth=2, label="end to end (one pass)")
    axes.set_xticks(list(positions))
    axes.set_xticklabels(labels, fontsize=6)
    axes.set_ylabel("milliseconds per pass over the dataset")
    axes.set_title(f"stream breakdown: {arguments.csv}", fontsize=8)
    axes.legend()
    figure.tight_layout()
    figure.savefig(arguments.output, dpi=150)
    print(f"wrote {arguments.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
