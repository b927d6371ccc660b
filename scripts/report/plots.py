#!/usr/bin/env python3
"""Draws the pages of `tune report` (issue 15): one self-contained HTML file per kernel, charts as PNG data: URIs.

Reads the JSON that `tune report` computed (`--data`: index.json and one <kernel>.json per kernel) and writes
<kernel>.html and index.html into `--out`. It computes no figure of its own beyond sorting and binning, writes
nowhere else, and needs matplotlib and numpy (scripts/setup-python.sh installs the pinned versions into .venv).
"""
import argparse
import base64
import html
import io
import json
import os
import sys
import textwrap

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError as error:
    sys.exit(f"plots.py needs matplotlib and numpy ({error}); run scripts/setup-python.sh")

plt.rcParams.update({"font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 10,
                     "figure.dpi": 100, "savefig.dpi": 110, "axes.grid": True, "grid.alpha": 0.3})
COLOURS = plt.rcParams["axes.prop_cycle"].by_key()["color"]
STAGES = [("host_read_ms", "host read (summed over workers)"), ("copy_in_ms", "host to device"),
          ("kernel_ms", "kernel"), ("copy_out_ms", "device to host")]


def png(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def label(recording):
    text = recording["device"] or "unknown GPU"
    return f"{text}, {recording['problem']}" if recording.get("problem") else text


def valid_times(recording):
    times = [t for t in recording["configurations"]["time_ms"] if t is not None]
    return np.array(sorted(times))


def spans_decades(times):
    return len(times) > 0 and times.max() / times.min() > 8


def distribution_figure(recording):
    times = valid_times(recording)
    best = times[0]
    figure, (histogram, ecdf) = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    if spans_decades(times):
        bins = np.geomspace(times[0], times[-1] * 1.0001, 40)
        histogram.set_xscale("log")
    else:
        bins = 40
    histogram.hist(times, bins=bins, color=COLOURS[0], edgecolor="white")
    for factor, colour, name in ((1.05, "#2ca02c", "within 5%"), (1.10, "#ff7f0e", "within 10%")):
        histogram.axvspan(best, best * factor, color=colour, alpha=0.25 if factor == 1.05 else 0.15, label=name)
    histogram.set_title(f"Time of the {len(times)} valid configurations")
    histogram.set_xlabel("kernel time (ms)" + (", log scale" if spans_decades(times) else ""))
    histogram.set_ylabel("configurations")
    histogram.legend(loc="upper right")

    ratio = times / best
    ecdf.step(ratio, np.arange(1, len(ratio) + 1) / len(ratio), where="post", color=COLOURS[0])
    ecdf.axvline(1.05, color="#2ca02c", linestyle="--",
                 label=f"5% of the best: {recording['within_5_percent']['count']} configurations "
                       f"({100 * recording['within_5_percent']['share']:.1f}%)")
    ecdf.axvline(1.10, color="#ff7f0e", linestyle="--",
                 label=f"10% of the best: {recording['within_10_percent']['count']} configurations "
                       f"({100 * recording['within_10_percent']['share']:.1f}%)")
    ecdf.set_xlim(1.0, max(1.3, ratio[-1] * 1.02))
    ecdf.set_title("Share of configurations at most x times the best")
    ecdf.set_xlabel("time / best time")
    ecdf.set_ylabel("share of valid configurations")
    ecdf.legend(loc="lower right")
    figure.suptitle(f"Distribution of times: {label(recording)} (best {best:.4g} ms)", fontsize=13)
    return png(figure)


def effects_figure(recording):
    configurations = recording["configurations"]
    times = configurations["time_ms"]
    status = configurations["status"]
    # Parameters recorded with one value only say nothing here; the page names them.
    varied = [k for k, p in enumerate(configurations["parameters"])
              if len({json.dumps(v) for v in configurations["values"][k]}) > 1]
    if not varied:
        return None
    parameters = [configurations["parameters"][k] for k in varied]
    columns = min(3, len(parameters))
    rows = (len(parameters) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.6 * rows + 0.8), squeeze=False,
                                layout="constrained")
    valid = np.array([t for t in times if t is not None])
    log_scale = spans_decades(valid)
    generator = np.random.default_rng(1)
    for index, parameter in enumerate(parameters):
        axis = axes[index // columns][index % columns]
        column = configurations["values"][varied[index]]
        declared = parameter["values"]
        present = [v for v in declared if any(c == v for c in column)]
        names = []
        for position, value in enumerate(present):
            points = np.array([t for c, t in zip(column, times) if c == value and t is not None])
            failed = sum(1 for c, s, t in zip(column, status, times) if c == value and t is None)
            names.append(f"{value}\n({failed} failed)" if failed else str(value))
            if len(points) == 0:
                continue
            jitter = generator.uniform(-0.28, 0.28, len(points))
            axis.scatter(position + jitter, points, s=5, alpha=0.35, color=COLOURS[0], linewidths=0)
            quartiles = np.percentile(points, [25, 50, 75])
            axis.plot([position - 0.32, position + 0.32], [quartiles[1]] * 2, color="black", linewidth=2)
            axis.plot([position, position], [quartiles[0], quartiles[2]], color="black", linewidth=1.2)
            axis.plot(position, points.min(), marker="v", color="#d62728", markersize=6)
        axis.set_xticks(range(len(present)))
        axis.set_xticklabels(names, fontsize=9 if len(present) > 6 else 10)
        if log_scale:
            axis.set_yscale("log")
        axis.set_title(parameter["name"])
        axis.set_xlabel("value")
        axis.set_ylabel("kernel time (ms)")
    for index in range(len(parameters), rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    figure.suptitle(f"Time per parameter value: {label(recording)}\n"
                    "dots: configurations; bar: median; line: interquartile range; red triangle: best",
                    fontsize=13)
    return png(figure)


def interaction_figure(recording):
    importance = recording["importance"]
    if importance.get("not_computed"):
        return None
    names = [p["parameter"] for p in importance["parameters"]]
    count = len(names)
    matrix = np.full((count, count), np.nan)
    for index, parameter in enumerate(importance["parameters"]):
        matrix[index, index] = parameter["main_effect"]["mean"]
    for pair in importance["interactions"]:
        first, second = (names.index(name) for name in pair["parameters"])
        matrix[first, second] = matrix[second, first] = pair["share"]["mean"]
    size = max(4.5, 0.9 * count + 2.5)
    figure, axis = plt.subplots(figsize=(size + 1.2, size))
    image = axis.imshow(matrix, cmap="viridis", vmin=0, vmax=max(0.05, np.nanmax(matrix)))
    for row in range(count):
        for column in range(count):
            value = matrix[row, column]
            if not np.isnan(value):
                bright = value > 0.6 * np.nanmax(matrix)
                axis.text(column, row, f"{value:.3f}", ha="center", va="center", fontsize=10,
                          color="black" if bright else "white", fontweight="bold" if row == column else "normal")
    axis.set_xticks(range(count))
    axis.set_xticklabels(names, rotation=40, ha="right")
    axis.set_yticks(range(count))
    axis.set_yticklabels(names)
    axis.grid(False)
    colour_bar = figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    colour_bar.set_label("share of the variance of log(time)")
    explained = importance["explained"]
    axis.set_title(f"Importance: {label(recording)}\ndiagonal: main effect; off the diagonal: pairwise interaction\n"
                   f"main effects and pairs explain {explained['mean']:.3f} "
                   f"[{explained['low']:.3f}, {explained['high']:.3f}]", fontsize=11)
    return png(figure)


def convergence_figure(recording):
    replay = recording.get("replay") or {}
    if "strategies" not in replay:
        return None
    figure, axis = plt.subplots(figsize=(9, 5))
    top = 1.0
    for index, (name, curve) in enumerate(replay["strategies"].items()):
        budget = np.array(curve["budget"], dtype=float)
        middle = np.array([np.nan if v is None else v for v in curve["median"]], dtype=float)
        low = np.array([np.nan if v is None else v for v in curve["lower_quartile"]], dtype=float)
        high = np.array([np.nan if v is None else v for v in curve["upper_quartile"]], dtype=float)
        colour = COLOURS[index % len(COLOURS)]
        axis.plot(budget, middle, color=colour, linewidth=2, marker="o", markersize=3, label=name)
        axis.fill_between(budget, low, high, color=colour, alpha=0.18)
        finite = middle[np.isfinite(middle)]
        if len(finite):
            top = max(top, float(finite.max()))
    axis.axhline(1.05, color="#2ca02c", linestyle="--", linewidth=1, label="within 5% of the optimum")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_ylim(0.98, max(1.2, min(top * 1.15, 20)))
    axis.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axis.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    axis.set_xlabel("evaluations (log scale)")
    axis.set_ylabel("best time found / recorded optimum (log scale)")
    axis.set_title(f"Convergence replayed on the record: {label(recording)}\n"
                   f"median over {replay['seeds']} seeds, band: first to third quartile", fontsize=12)
    axis.legend(loc="upper right")
    return png(figure)


def portability_figure(group):
    devices = group["devices"]
    count = len(devices)
    matrix = np.full((count, count), np.nan)
    text = [["" for _ in range(count)] for _ in range(count)]
    for row in range(count):
        for column in range(count):
            cell = group["matrix"][row][column]
            if cell["state"] == "measured":
                matrix[row, column] = cell["fraction_of_optimum"]
                text[row][column] = f"{cell['fraction_of_optimum']:.3f}\n(rank {cell['rank']})"
            else:
                text[row][column] = "failed" if cell["state"] == "failed" else "not measured"
    size = max(5, 1.8 * count + 2)
    figure, axis = plt.subplots(figsize=(size + 1.5, size))
    image = axis.imshow(matrix, cmap="RdYlGn", vmin=max(0.0, min(0.5, np.nanmin(matrix))), vmax=1.0)
    for row in range(count):
        for column in range(count):
            axis.text(column, row, text[row][column], ha="center", va="center", fontsize=11)
    axis.set_xticks(range(count))
    axis.set_xticklabels(devices, rotation=20, ha="right")
    axis.set_yticks(range(count))
    axis.set_yticklabels(devices)
    axis.set_xlabel("measured on")
    axis.set_ylabel("best configuration of")
    axis.grid(False)
    colour_bar = figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    colour_bar.set_label("optimum / time (1 = as fast as the GPU's own best)")
    problem = f" {group['problem']}" if group.get("problem") else ""
    axis.set_title(f"Portability of tuned configurations: {group['kernel']}{problem}", fontsize=12)
    return png(figure)


def stream_figure(recording, top=8):
    stages = recording["configurations"].get("stream_stages")
    if not stages:
        return None
    times = recording["configurations"]["time_ms"]
    order = sorted((i for i, t in enumerate(times) if t is not None), key=lambda i: times[i])[:top]
    parameters = recording["configurations"]["parameters"]
    values = recording["configurations"]["values"]
    names = [" ".join(f"{p['name']}={values[k][i]}" for k, p in enumerate(parameters)) for i in order]
    figure, axis = plt.subplots(figsize=(11, 0.6 * len(order) + 2))
    positions = np.arange(len(order))
    height = 0.8 / (len(STAGES) + 1)
    for index, (key, name) in enumerate(STAGES):
        axis.barh(positions + index * height, [stages[key][i] for i in order], height=height,
                  color=COLOURS[index], label=name)
    axis.barh(positions + len(STAGES) * height, [stages["end_to_end_ms"][i] for i in order], height=height,
              color="black", label="end to end")
    axis.set_yticks(positions + 0.4 - height / 2)
    axis.set_yticklabels(names, fontsize=9)
    axis.invert_yaxis()
    axis.set_xlabel("time per pass (ms)")
    axis.set_title(f"Loader stages of the {len(order)} fastest configurations: {label(recording)}\n"
                   "stages overlap in a pipeline, so they can add up to more than the end-to-end time", fontsize=12)
    axis.legend(loc="lower right")
    return png(figure)


def rate_text(gflops):
    return f"{gflops / 1e3:.1f} TFLOP/s" if gflops >= 1e3 else f"{gflops:.3g} GFLOP/s"


def roof_angle(axis, x0, y0, x1, y1):
    """The on-screen angle (degrees) of the segment between two data points, for text laid along a line."""
    (a, b), (c, d) = axis.transData.transform([(x0, y0), (x1, y1)])
    return float(np.degrees(np.arctan2(d - b, c - a)))


def roofline_figure(gpu, entries):
    """One GPU's roofs (measured ceilings) and the best configuration of each of its recordings as a point."""
    ceilings = entries[0]["ceilings"]
    copy = ceilings["copy_gbps"]
    roofs = []  # (GFLOP/s, label, line style)
    if ceilings["fma_gflops"] > 0:
        roofs.append((ceilings["fma_gflops"], f"fp32 FMA {rate_text(ceilings['fma_gflops'])}", "--"))
    if ceilings["tensor_gflops"] > 0:
        source = ceilings["tensor_source"] or "cuBLAS bf16"
        roofs.append((ceilings["tensor_gflops"], f"tensor cores ({source}) {rate_text(ceilings['tensor_gflops'])}", "-."))
        if any(entry["compute_roof"] == "tf32" for entry in entries):  # half the 16-bit rate (tuner/analysis/roofline.h)
            tf32 = ceilings["tensor_gflops"] / 2
            roofs.append((tf32, f"tf32 tensor cores (half of {source}) {rate_text(tf32)}", ":"))
    intensities = [e["intensity"] for e in entries]
    ridges = [roof / copy for roof, _, _ in roofs]
    low = min(min(intensities) / 8, 0.1)
    high = max(max(intensities) * 8, max(ridges, default=0) * 8, 10)
    top_roof = max((roof for roof, _, _ in roofs), default=copy * high)
    figure, axis = plt.subplots(figsize=(11, 6.2))
    axis.set_xscale("log")
    axis.set_yscale("log")
    rates = [e["gflops"] for e in entries]
    axis.set_xlim(low, high)
    axis.set_ylim(min(copy * low, min(rates)) / 3, max(top_roof, max(rates)) * 4)
    figure.canvas.draw()  # fixes the axes' size, so the angle of the memory roof's label is the one shown
    memory_end = min(high, top_roof / copy)
    axis.plot([low, memory_end], [copy * low, copy * memory_end], color="black", linewidth=2.2,
              label=f"memory roof: device copy {copy:.0f} GB/s (bytes read + written)")
    label_x = low * 1.4
    axis.text(label_x, copy * label_x * 1.35, f"device copy {copy:.0f} GB/s", fontsize=10,
              rotation=roof_angle(axis, low, copy * low, memory_end, copy * memory_end), rotation_mode="anchor",
              ha="left", va="bottom")
    for roof, text, style in roofs:
        axis.plot([roof / copy, high], [roof, roof], color="black", linewidth=2.2, linestyle=style,
                  label=f"compute roof: {text}")
        axis.text(high / 1.15, roof * 1.12, text, fontsize=10, ha="right", va="bottom")
    for index, entry in enumerate(entries):
        colour = COLOURS[(index + 1) % len(COLOURS)]
        bound = entry["compute_roof"] if entry["bound"] == "compute" else "memory"
        roof_text = {"memory": "the memory roof", "fma": "the FMA roof", "tensor": "the tensor roof",
                     "tf32": "the tf32 roof"}[bound]
        if entry["bound"] == "unknown":
            roof_text += " (no compute roof)"
        axis.scatter([entry["intensity"]], [entry["gflops"]], s=90, color=colour, edgecolor="black", zorder=5,
                     label=f"best of {entry['label']}")
        # Text in a corner the roofs leave empty (above the memory roof on the left, under the compute roofs on the
        # right); problems wrapped so a GEMM's five symbols stay narrow.
        right_half = np.log(entry["intensity"] / low) > 0.5 * np.log(high / low)
        intensity = entry["intensity"]
        name = "\n".join(textwrap.wrap(entry["label"].replace(",", ", "), 34))
        intensity_text = f"{intensity:.0f}" if intensity >= 100 else f"{intensity:.3g}"
        above = " (measured above: see the warning)" if entry.get("warning") else ""
        axis.annotate(f"{name}\n{rate_text(entry['gflops'])} at {intensity_text} flop/B\n"
                      f"{100 * entry['fraction']:.1f}% of {roof_text}{above}",
                      (entry["intensity"], entry["gflops"]),
                      xytext=(0.97, 0.52 - 0.17 * index) if right_half else (0.03, 0.93 - 0.17 * index),
                      textcoords="axes fraction", ha="right" if right_half else "left", va="top", fontsize=10,
                      arrowprops={"arrowstyle": "-", "color": colour},
                      bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": colour, "alpha": 0.9})
    axis.set_xlabel("arithmetic intensity (flop per byte of minimum traffic, spec metrics; log scale)")
    axis.set_ylabel("performance of the best configuration (GFLOP/s, log scale)")
    missing = "" if roofs else "\nno compute ceiling measured on this GPU: the memory roof alone is drawn"
    axis.set_title(f"Roofline: {gpu}\nceilings from {ceilings['source']}{missing}", fontsize=12)
    axis.legend(loc="lower right", fontsize=9)
    return png(figure)


def roofline_section(kernel):
    """The roofline charts (one per GPU) and a note for every recording that could not be placed, saying why."""
    parts = ["<h2>Roofline</h2>"]
    by_gpu = {}
    for recording in kernel["recordings"]:
        roofline = recording.get("roofline") or {"unavailable": "no roofline data"}
        if "unavailable" in roofline:
            parts.append(f"<p class=note>{html.escape(label(recording))}: not on the roofline: "
                         f"{html.escape(roofline['unavailable'])}.</p>")
        else:
            by_gpu.setdefault((roofline["gpu"], roofline["ceilings"]["source"]), []).append(roofline)
    if by_gpu:
        parts.insert(1, "<p>Each recording's best configuration at its arithmetic intensity (the spec's "
                        "<code>metrics.flops</code> / <code>metrics.bytes</code> for that configuration and problem) "
                        "against the ceilings measured on its GPU (<code>tune ceilings</code>): the attainable "
                        "performance is the lower of the memory roof (copy bandwidth x intensity) and the kernel's "
                        "compute roof. A point's percentage is of that attainable figure.</p>")
    for (gpu, _), entries in by_gpu.items():
        parts.append(image(roofline_figure(gpu, entries), f"roofline of {gpu}"))
        for entry in entries:
            parts.append(f"<p>{html.escape(entry['label'])} on {html.escape(gpu)}: {rate_text(entry['gflops'])} "
                         f"({entry['flops']:.4g} flop, {entry['bytes']:.4g} bytes in {entry['time_ms']:.4g} ms), "
                         + (f"{100 * entry['fraction']:.1f}% of the memory roof's "
                            f"{rate_text(entry['attainable_gflops'])} at this intensity, which is not a bound on this "
                            "kernel's compute" if entry["bound"] == "unknown" else
                            f"{100 * entry['fraction']:.1f}% of the attainable {rate_text(entry['attainable_gflops'])} "
                            f"({entry['bound']}-bound at this intensity)")
                         + f". Compute roof: {html.escape(entry['compute_roof_note'])}.</p>")
            if entry.get("warning"):
                parts.append(f"<p class=note>Warning: {html.escape(entry['label'])}: "
                             f"{html.escape(entry['warning'])}.</p>")
    return parts


def image(uri, alt):
    return f'<img src="{uri}" alt="{html.escape(alt)}">'


def configuration_text(configuration):
    return ", ".join(f"{key}={value}" for key, value in configuration.items())


def page(kernel):
    title = f"kernlathe report: {kernel['kernel']}"
    parts = [f"<h1>{html.escape(title)}</h1>"]
    settings = kernel["settings"]
    parts.append(f"<p>{len(kernel['recordings'])} recording(s). Importance: functional ANOVA of log(time) on a random "
                 f"forest, {settings['resamples']} bootstrap resamples, seed {settings['seed']} (see the README, "
                 f"section Analysis). Drawn from the output of <code>tune analyze</code> and <code>tune replay</code>."
                 f"</p>")
    if kernel["portability"]:
        parts.append("<h2>Portability across GPUs</h2>")
        parts.append("<p>Each row's best configuration measured on each column's GPU, as that GPU's optimum divided "
                     "by its time (1 is that GPU's best; lower is slower), with its rank there.</p>")
        for group in kernel["portability"]:
            parts.append(image(portability_figure(group), f"portability matrix of {group['kernel']}"))
            default = group.get("portable_default")
            if default:
                parts.append(f"<p>Portable default (best worst case over {group['valid_everywhere']} configurations "
                             f"valid on every GPU): <code>{html.escape(configuration_text(default['configuration']))}"
                             f"</code>, at worst {default['worst_fraction']:.3f} of a GPU's optimum.</p>")
    parts.extend(roofline_section(kernel))
    for recording in kernel["recordings"]:
        parts.append(f"<h2>{html.escape(label(recording))}</h2>")
        failures = ", ".join(f"{count} {name}" for name, count in recording["failures_by_status"].items())
        parts.append(f"<p>{recording['evaluations']} configurations evaluated: {recording['valid']} valid, "
                     f"{recording['failed']} failed{' (' + html.escape(failures) + ')' if failures else ''}. "
                     f"Best {recording['best_ms']:.4g} ms, median {recording['median_ms']:.4g} ms, worst "
                     f"{recording['worst_ms']:.4g} ms. Best configuration: "
                     f"<code>{html.escape(configuration_text(recording['best_configuration']))}</code>. "
                     f"Source: <code>{html.escape(recording['source'])}</code>.</p>")
        for note in recording.get("notes", []):
            parts.append(f"<p class=note>{html.escape(note)}</p>")
        parts.append("<h3>Distribution of times</h3>")
        parts.append(image(distribution_figure(recording), "distribution of times"))
        parts.append("<h3>Parameter effects</h3>")
        effects = effects_figure(recording)
        constant = [p["name"] for k, p in enumerate(recording["configurations"]["parameters"])
                    if len({json.dumps(v) for v in recording["configurations"]["values"][k]}) <= 1]
        if effects:
            parts.append(image(effects, "time per parameter value"))
        if constant:
            parts.append(f"<p class=note>Recorded with one value only, not drawn: {html.escape(', '.join(constant))}.</p>")
        parts.append("<h3>Importance and interactions</h3>")
        heatmap = interaction_figure(recording)
        if heatmap:
            parts.append(image(heatmap, "interaction heatmap"))
        else:
            parts.append(f"<p class=note>Not computed: {html.escape(recording['importance']['not_computed'])}</p>")
        parts.append("<h3>Convergence of search strategies</h3>")
        convergence = convergence_figure(recording)
        if convergence:
            replay = recording["replay"]
            parts.append(f"<p>Strategies replayed on the recorded measurements with <code>{html.escape(replay['spec'])}"
                         f"</code> ({replay['recorded']} recorded of {replay['valid_in_space']} valid configurations "
                         "in the space; one not recorded counts as a failed evaluation).</p>")
            parts.append(image(convergence, "convergence curves"))
        else:
            reason = (recording.get("replay") or {}).get("unavailable", "no replay data")
            parts.append(f"<p class=note>Not drawn: {html.escape(reason)}.</p>")
        stream = stream_figure(recording)
        if stream:
            parts.append("<h3>Loader stage breakdown</h3>")
            parts.append(image(stream, "loader stage breakdown"))
    style = ("body{font-family:sans-serif;max-width:1250px;margin:1em auto;padding:0 1em;color:#222;line-height:1.4}"
             "img{max-width:100%;height:auto;display:block;margin:0.5em 0 1.5em}code{background:#f3f3f3;padding:0 3px}"
             "h2{border-bottom:1px solid #ccc;margin-top:2em}.note{color:#555;font-style:italic}")
    return (f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="folder with index.json and one JSON file per kernel")
    parser.add_argument("--out", required=True, help="folder the HTML pages are written to")
    arguments = parser.parse_args()
    with open(os.path.join(arguments.data, "index.json"), encoding="utf-8") as stream:
        index = json.load(stream)
    links = []
    for name in index["kernels"]:
        with open(os.path.join(arguments.data, name), encoding="utf-8") as stream:
            kernel = json.load(stream)
        with open(os.path.join(arguments.out, kernel["page"]), "w", encoding="utf-8") as stream:
            stream.write(page(kernel))
        devices = sorted({r["device"] for r in kernel["recordings"]})
        links.append(f'<li><a href="{html.escape(kernel["page"])}">{html.escape(kernel["kernel"])}</a>: '
                     f'{len(kernel["recordings"])} recording(s) on {html.escape(", ".join(devices))}</li>')
        print(f"plots.py: wrote {kernel['page']}", file=sys.stderr)
    with open(os.path.join(arguments.out, "index.html"), "w", encoding="utf-8") as stream:
        stream.write("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>kernlathe reports</title></head>"
                     "<body style='font-family:sans-serif'><h1>kernlathe reports</h1><ul>" + "".join(links) +
                     "</ul></body></html>\n")


if __name__ == "__main__":
    main()
