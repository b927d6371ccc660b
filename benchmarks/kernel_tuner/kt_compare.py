#!/usr/bin/env python3
"""Whole-run wall time of `tune` against Kernel Tuner 1.5 (CuPy backend) on the same kernels (issue 18).

For each case of cases.yaml both tools tune the same spec: same template and instantiation, same valid
configurations, same problem, arguments and launch geometry, on the same GPU, one after the other, each with cold
caches (tune: a fresh cubin cache, record folder and best-configuration folder; Kernel Tuner: no cache file and a
fresh CuPy kernel cache). Each tool's run is timed as a user sees it: from the start of its process to its exit.
Before timing, the inputs are checked: Kernel Tuner's search space must hold exactly the configurations
`tune space` lists, and for every configuration Kernel Tuner's kernel string, kernel name and geometry must be
tune's (README.md beside this file).

  GPU host:  kt_compare.py --tune .device/bin/tune --out DIR      (benchmarks/kernel_tuner_bench.sh runs this)
  anywhere:  kt_compare.py --tune build/tune --dry-run [--check-instantiation]

Exit codes: 0 every case ran (whatever the ratios), 1 a case failed or a check found a difference, 2 bad usage.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
sys.path.insert(0, str(HERE))

import kernel_tuner_inputs  # noqa: E402
import tune_spec  # noqa: E402

GOAL_RATIO = 10.0  # issue 18: tune's whole run at least ten times shorter than Kernel Tuner's


@dataclass
class Case:
    name: str
    spec: str
    problem: str
    search: str               # exhaustive | random
    budget: int | None = None
    seed: int | None = None
    kernel_tuner_name: str | None = None


@dataclass
class Outcome:
    """One tool's timed run."""
    command: list[str]
    seconds: float = 0.0
    exit_code: int | None = None
    timed_out: bool = False
    evaluated: int | None = None
    best_ms: float | None = None
    best_configuration: dict | None = None
    details: dict = field(default_factory=dict)
    error: str | None = None


def load_cases(path: Path) -> list[Case]:
    document = yaml.safe_load(path.read_text())
    cases = []
    for entry in document["cases"]:
        case = Case(**entry)
        if case.search not in ("exhaustive", "random"):
            raise SystemExit(f"{path}: case {case.name}: search must be exhaustive or random")
        if case.search == "random" and not case.budget:
            raise SystemExit(f"{path}: case {case.name}: a random search needs a budget")
        cases.append(case)
    return cases


# ----------------------------------------------------------------------------------------------- tune

class Tune:
    def __init__(self, binary: Path, arch: str | None):
        self.binary = binary
        self.arch = arch  # a built-in profile (dry runs), or None for the GPU

    def _arch_options(self) -> list[str]:
        return ["--arch", self.arch] if self.arch else []

    def space(self, case: Case) -> tuple[dict, list[dict]]:
        """`tune space --json` and every valid configuration (canonical forms, as tune enumerates them)."""
        base = [str(self.binary), "space", case.spec, "--problem", case.problem, "--json"] + self._arch_options()

        def output(command: list[str]) -> str:
            done = subprocess.run(command, capture_output=True, text=True, cwd=REPOSITORY)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr.strip()}")
            return done.stdout

        summary = json.loads(output(base))
        listed = output(base + ["--list", str(summary["valid"])]).splitlines()
        configurations = [json.loads(line) for line in listed[1:]]
        if len(configurations) != summary["valid"]:
            raise RuntimeError(f"tune space listed {len(configurations)} of {summary['valid']} configurations")
        return summary, configurations

    def run_command(self, case: Case, out: Path, best: Path, ceiling_cache: Path | None = None) -> list[str]:
        command = [str(self.binary), "run", case.spec, "--problem", case.problem, "--out", str(out),
                   "--best-dir", str(best), "--json"]
        if ceiling_cache is not None:
            command += ["--ceiling-cache", str(ceiling_cache)]
        if case.search == "exhaustive":
            command += ["--strategy", "exhaustive"]
        else:
            command += ["--strategy", "random", "--budget", str(case.budget)]
            if case.seed is not None:
                command += ["--seed", str(case.seed)]
        return command


def nvrtc_version() -> str:
    """The NVRTC version tune's cache keys carry, from the library tune would load."""
    candidates = [os.environ.get("KERNLATHE_NVRTC", ""), "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                  "/usr/local/cuda/lib64/libnvrtc.so"]
    for candidate in filter(None, candidates):
        try:
            library = ctypes.CDLL(candidate)
        except OSError:
            continue
        major, minor = ctypes.c_int(), ctypes.c_int()
        library.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return f"{major.value}.{minor.value}"
    raise RuntimeError("no NVRTC library found (set LD_LIBRARY_PATH to the CUDA toolkit's lib64)")


# ----------------------------------------------------------------------------------------------- Kernel Tuner

def kernel_tuner_plan(case: Case, summary: dict, configurations: list[dict], restrictions: str) -> dict:
    """Everything the timed Kernel Tuner process reads: the user's script, in data."""
    return {
        "case": case.name,
        "spec": str(REPOSITORY / case.spec),
        "problem": tune_spec.parse_problem_overrides(case.problem),
        "parameters": summary["parameters"],
        "restrictions": restrictions,
        "valid_configurations": configurations if restrictions == "membership" else [],
        "kernel_tuner_name": case.kernel_tuner_name,
        "strategy": "brute_force" if case.search == "exhaustive" else "random_sample",
        "budget": case.budget,
        "seed": case.seed,
    }


def describe_plan(spec: tune_spec.KernelSpec, plan: dict, device: dict) -> str:
    """The Kernel Tuner call the timed process makes, written out for the reader."""
    restrictions = (kernel_tuner_inputs.translated_restrictions(spec, device) if plan["restrictions"] == "translated"
                    else ["<membership in tune's listed configurations>"])
    strategy_options = {"max_fevals": plan["budget"]} if plan["strategy"] == "random_sample" else None
    lines = [
        "kernel_tuner.tune_kernel(",
        f"    kernel_name={kernel_tuner_inputs.kernel_name(spec, plan['kernel_tuner_name'])!r},",
        f"    kernel_source=<tune's instantiated source of {spec.template_file.name} per configuration>,",
        "    problem_size=<the spec's grid per configuration>, grid_div_x=1, grid_div_y=1, grid_div_z=1,",
        f"    arguments=<{', '.join(a.name for a in spec.arguments)}>,",
        f"    tune_params={kernel_tuner_inputs.tune_parameters(spec)},",
        f"    restrictions={restrictions},",
        f"    block_size_names={kernel_tuner_inputs.block_size_names(spec)},",
        f"    answer=<run_kernel of the reference {spec.reference_configuration()}>,",
        "    verify=<|x - ref| <= " + ", ".join(f"{d}: {spec.tolerance_for(d)[1]} + {spec.tolerance_for(d)[0]} |ref|"
                                            for d in sorted({a.dtype for a in spec.arguments if a.is_buffer})) + ">,",
        f"    lang='cupy', compiler_options={kernel_tuner_inputs.kernel_tuner_options(spec)}, defines={{}},",
        f"    strategy={plan['strategy']!r}, strategy_options={strategy_options})",
    ]
    return "\n".join(lines)


def check_kernel_tuner_inputs(spec: tune_spec.KernelSpec, plan: dict, configurations: list[dict],
                              device: dict) -> list[str]:
    """Kernel Tuner, given the plan's inputs, must see tune's space and build tune's kernels. Uses Kernel Tuner's
    own functions (search space, kernel string and name, geometry). Returns the differences found."""
    from kernel_tuner import util as kt_util
    from kernel_tuner.core import KernelSource
    from kernel_tuner.searchspace import Searchspace

    problems = []
    names = [p.name for p in spec.parameters]
    tune_params = kernel_tuner_inputs.tune_parameters(spec)
    if plan["restrictions"] == "membership":
        restrictions = kernel_tuner_inputs.membership_restriction(spec, configurations)
    else:
        restrictions = kernel_tuner_inputs.translated_restrictions(spec, device)
    started = time.perf_counter()
    # As tune_kernel builds it (interface.py): the device's thread limit, the default block size names.
    searchspace = Searchspace(tune_params, restrictions, device["max_threads_per_block"])
    construction = time.perf_counter() - started
    tune_set = {tuple(kernel_tuner_inputs.to_kernel_tuner_configuration(spec, c)[n] for n in names)
                for c in configurations}
    kernel_tuner_set = set(map(tuple, searchspace.list))
    if searchspace.size != len(configurations) or kernel_tuner_set != tune_set:
        only_tune = sorted(tune_set - kernel_tuner_set)[:3]
        only_kernel_tuner = sorted(kernel_tuner_set - tune_set)[:3]
        problems.append(f"search space: Kernel Tuner {searchspace.size}, tune {len(configurations)}; only in tune "
                        f"{only_tune}, only in Kernel Tuner {only_kernel_tuner}")

    instantiator = tune_spec.Instantiator(spec, device)
    name = kernel_tuner_inputs.kernel_name(spec, plan["kernel_tuner_name"])
    block_names = kernel_tuner_inputs.block_size_names(spec)
    kt_util.append_default_block_size_names(block_names)
    source = KernelSource(name, lambda params: instantiator.instantiate(
        kernel_tuner_inputs.to_tune_configuration(spec, params)).source, "cupy", {})
    for configuration in configurations:
        params = kernel_tuner_inputs.to_kernel_tuner_configuration(spec, configuration)
        instance = instantiator.instantiate(configuration)
        threads, grid = kt_util.setup_block_and_grid(lambda _: instance.grid, (1, 1, 1), params, block_names)
        kt_name, kt_string, _ = source.prepare_list_of_files(name, params, grid, threads, block_names)
        wrong = []
        if tuple(threads) != instance.block:
            wrong.append(f"block {threads} vs tune's {instance.block}")
        if tuple(grid) != instance.grid:
            wrong.append(f"grid {grid} vs tune's {instance.grid}")
        if kt_string != instance.source:
            wrong.append("kernel string differs from tune's source")
        if not kernel_tuner_inputs.same_instantiation(instance.name_expression, kt_name):
            wrong.append(f"kernel name {kt_name} vs tune's {instance.name_expression}")
        if wrong:
            problems.append(f"{configuration}: " + "; ".join(wrong))
            if len(problems) > 5:
                break
    print(f"  Kernel Tuner inputs: search space {searchspace.size} configurations (built in {construction:.3f} s), "
          f"{len(configurations)} kernel strings, names and geometries compared with tune's: "
          f"{'same' if not problems else 'DIFFERENT'}", flush=True)
    return problems


def check_instantiation(tune: Tune, case: Case, spec: tune_spec.KernelSpec, configurations: list[dict],
                        device: dict, arch: str) -> list[str]:
    """tune compiles every configuration into an empty cubin cache; the cache's keys must be the keys of the
    sources this module writes (tune_spec.cubin_cache_key): same source text, headers, options and name."""
    instantiator = tune_spec.Instantiator(spec, device)
    options = tune_spec.tune_compile_options(spec, arch)
    key_arch = next(o.split("=", 1)[1] for o in options if o.startswith("--gpu-architecture="))
    version = nvrtc_version()
    expected = {tune_spec.cubin_cache_key(instantiator.instantiate(c), instantiator.headers, options, key_arch, version)
                for c in configurations}
    with tempfile.TemporaryDirectory(prefix="kt-compare-cubins-") as cache:
        command = [str(tune.binary), "compile-check", case.spec, "--problem", case.problem, "--all"]
        command += tune._arch_options()
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, text=True, cwd=REPOSITORY,
                       env={**os.environ, "XDG_CACHE_HOME": cache})
        seconds = time.perf_counter() - started
        compiled = {entry[:-len(".cubin")] for entry in os.listdir(Path(cache) / "kernlathe" / "cubins")
                    if entry.endswith(".cubin")}
    same = compiled == expected
    print(f"  instantiation: tune compiled {len(compiled)} configurations in {seconds:.1f} s; their cubin cache "
          f"keys {'are' if same else 'are NOT'} the keys of the {len(expected)} sources given to Kernel Tuner",
          flush=True)
    return [] if same else [f"cubin cache keys: {len(compiled - expected)} of tune's not written here, "
                            f"{len(expected - compiled)} written here not tune's"]


# ----------------------------------------------------------------------------------------------- timing

def timed_run(command: list[str], env: dict, timeout: float, stdout_path: Path, stderr_path: Path,
              cwd: Path = REPOSITORY) -> Outcome:
    """Runs a command from process start to exit, wall clock, killing its process group past the timeout."""
    outcome = Outcome(command=command)
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env, cwd=cwd,
                                   start_new_session=True)
        try:
            outcome.exit_code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            outcome.timed_out = True
        outcome.seconds = time.monotonic() - started
    return outcome


def process_seconds(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, capture_output=True, cwd=REPOSITORY)
    return time.monotonic() - started


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_tune(tune: Tune, case: Case, work: Path, logs: Path, timeout: float,
             ceiling_cache: Path | None = None) -> Outcome:
    """One timed tune run with empty caches; with ceiling_cache, the GPU's ceilings come from that folder (filled
    once per GPU by an untimed run, as a user's first run fills it) and every other cache is empty."""
    cache = work / "tune-cache"
    out = work / "tune-records"
    best = work / "tune-best"
    for folder in (cache, out, best):
        shutil.rmtree(folder, ignore_errors=True)
    cache.mkdir(parents=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "CUDA_CACHE_DISABLE": "1"}
    stdout_path, stderr_path = logs / f"{case.name}.tune.json", logs / f"{case.name}.tune.log"
    outcome = timed_run(tune.run_command(case, out, best, ceiling_cache), env, timeout, stdout_path, stderr_path)
    if outcome.timed_out or outcome.exit_code != 0:
        outcome.error = f"exit {outcome.exit_code}" if not outcome.timed_out else f"not finished in {timeout:.0f} s"
        outcome.details["log_tail"] = tail(stderr_path)
        return outcome
    report = json.loads(stdout_path.read_text())
    outcome.evaluated = report.get("evaluated")
    best_rows = report.get("best") or []
    if best_rows:
        outcome.best_ms = best_rows[0].get("median_ms")
        outcome.best_configuration = best_rows[0].get("configuration")
        if best_rows[0].get("final_round"):
            outcome.details["best_final_round_mean_ms"] = best_rows[0]["final_round"].get("mean_ms")
    outcome.details.update({k: report.get(k) for k in ("device", "valid", "statuses", "seconds", "stop_reason",
                                                      "evaluations_per_second", "final_rounds", "profile")})
    return outcome


def run_kernel_tuner(case: Case, plan: dict, work: Path, logs: Path, timeout: float, python: str) -> Outcome:
    cupy_cache = work / "cupy-cache"
    shutil.rmtree(cupy_cache, ignore_errors=True)
    cupy_cache.mkdir(parents=True)
    plan_path = work / "kernel_tuner_plan.json"
    result_path = work / "kernel_tuner_result.json"
    result_path.unlink(missing_ok=True)
    plan_path.write_text(json.dumps(plan, indent=1))
    env = {**os.environ, "CUPY_CACHE_DIR": str(cupy_cache), "CUDA_CACHE_DISABLE": "1"}
    command = [python, str(HERE / "kernel_tuner_inputs.py"), str(plan_path), str(result_path)]
    log_path = logs / f"{case.name}.kernel_tuner.log"
    # In the work folder: Kernel Tuner writes the source of a configuration that fails into its working folder.
    outcome = timed_run(command, env, timeout, log_path, logs / f"{case.name}.kernel_tuner.stderr.log", cwd=work)
    if outcome.timed_out or outcome.exit_code != 0 or not result_path.exists():
        outcome.error = f"exit {outcome.exit_code}" if not outcome.timed_out else f"not finished in {timeout:.0f} s"
        outcome.details["log_tail"] = tail(logs / f"{case.name}.kernel_tuner.stderr.log")
        return outcome
    result = json.loads(result_path.read_text())
    outcome.evaluated = result["evaluated"]
    outcome.best_ms = result["best_time_ms"]
    outcome.best_configuration = result["best_configuration"]
    outcome.details = result
    return outcome


def kernel_tuner_breakdown(outcome: Outcome) -> str:
    """Where Kernel Tuner's run went: this process's phases and Kernel Tuner's own totals."""
    phases, totals = outcome.details.get("phases"), outcome.details.get("kernel_tuner_totals_ms")
    if not phases or not totals or totals.get("total_compile_time") is None:
        return ""
    return (f" (import {phases['import_seconds']:.1f} s, inputs {phases['inputs_seconds']:.1f} s, answer "
            f"{phases['answer_seconds']:.1f} s, tune_kernel {phases['tune_kernel_seconds']:.1f} s: compile "
            f"{totals['total_compile_time'] / 1000:.1f} s, verification {totals['total_verification_time'] / 1000:.1f} "
            f"s, benchmark {totals['total_benchmark_time'] / 1000:.1f} s)")


def verdict(tune: Outcome, kernel_tuner: Outcome) -> tuple[float | None, str, str]:
    """(ratio, its text, goal). A Kernel Tuner run stopped at its time limit gives a lower bound (">12.3x")."""
    if tune.error:
        return None, "-", "error (tune)"
    if kernel_tuner.timed_out:
        bound = kernel_tuner.seconds / tune.seconds
        return bound, f">{bound:.1f}x", ("pass" if bound >= GOAL_RATIO else "undecided")
    if kernel_tuner.error:
        return None, "-", "error (Kernel Tuner)"
    ratio = kernel_tuner.seconds / tune.seconds
    return ratio, f"{ratio:.1f}x", ("pass" if ratio >= GOAL_RATIO else "FAIL")


def print_table(rows: list[dict]) -> None:
    header = ("kernel", "problem", "search", "valid", "evaluated tune/KT", "tune s", "Kernel Tuner s", "ratio",
              ">=10x", "best ms tune/KT")
    table = [header]
    for row in rows:
        tune, kt = row["tune"], row["kernel_tuner"]

        def figure(value, digits=4):
            return "-" if value is None else f"{value:.{digits}f}"

        kt_seconds = f"{kt['seconds']:.1f}" + (" (stopped)" if kt["timed_out"] else "")
        table.append((row["case"], row["problem"], row["search"], str(row["valid"]),
                      f"{tune['evaluated'] if tune['evaluated'] is not None else '-'}/"
                      f"{kt['evaluated'] if kt['evaluated'] is not None else '-'}",
                      f"{tune['seconds']:.1f}", kt_seconds, row["ratio_text"], row["goal"],
                      f"{figure(tune['best_ms'])}/{figure(kt['best_ms'])}"))
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for index, line in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))
        if index == 0:
            print("  ".join("-" * width for width in widths))


# ----------------------------------------------------------------------------------------------- main

def repository_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=REPOSITORY, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.environ.get("KERNLATHE_COMMIT", "unknown")


def build_commit(tune: str) -> str:
    """The commit the tune binary was built from (`tune --version` names it), which holds where binaries built in a
    checkout run elsewhere; the checkout's HEAD when the binary does not say."""
    try:
        version = subprocess.run([tune, "--version"], capture_output=True, text=True, check=True).stdout
        match = re.search(r"\(commit ([0-9a-f]+(?:\+changes)?)\)", version)
        if match:
            return match.group(1)
    except (OSError, subprocess.CalledProcessError):
        pass
    return repository_commit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tune", default=str(REPOSITORY / "build" / "tune"), help="the tune binary")
    parser.add_argument("--out", default="kernel-tuner-comparison", help="logs, records and the JSON summary")
    parser.add_argument("--work", help="caches and scratch records of the runs (default: a temporary folder, "
                                       "removed at the end)")
    parser.add_argument("--cases", default=str(HERE / "cases.yaml"))
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument("--restrictions", choices=("translated", "membership"), default="translated",
                        help="Kernel Tuner restrictions: the space's constraints as restriction strings, or "
                             "membership in tune's listed configurations")
    parser.add_argument("--python", default=sys.executable, help="the Python that runs Kernel Tuner")
    parser.add_argument("--tune-timeout", type=float, default=300.0, help="seconds a tune run may take")
    parser.add_argument("--kernel-tuner-timeout", type=float, default=300.0,
                        help="seconds a Kernel Tuner run may take; a run stopped there gives a lower bound")
    parser.add_argument("--dry-run", action="store_true",
                        help="no GPU: print what each tool would run and check Kernel Tuner's inputs against "
                             "tune's, on the --arch profile")
    parser.add_argument("--arch", default="sm_90", help="device profile of a dry run")
    parser.add_argument("--ceilings", choices=("cold", "known"), default="cold",
                        help="cold: tune measures the GPU's ceilings in every timed run (its caches all empty); "
                             "known: one untimed run fills a ceiling cache first, as a user's first run on a GPU "
                             "does, and the timed runs read it (their cubin caches still empty)")
    parser.add_argument("--check-instantiation", action="store_true",
                        help="also compile every configuration with tune and compare its cubin cache keys with "
                             "the sources given to Kernel Tuner (NVRTC, no GPU)")
    options = parser.parse_args()

    cases = load_cases(Path(options.cases))
    if options.only:
        wanted = set(options.only.split(","))
        unknown = wanted - {case.name for case in cases}
        if unknown:
            parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
        cases = [case for case in cases if case.name in wanted]
    tune = Tune(Path(options.tune).resolve(), options.arch if options.dry_run else None)
    out = Path(options.out).resolve()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    work_root = Path(options.work).resolve() if options.work else Path(tempfile.mkdtemp(prefix="kt-compare-"))
    try:
        return compare(options, cases, tune, out, logs, work_root)
    finally:
        if not options.work:
            shutil.rmtree(work_root, ignore_errors=True)


def compare(options: argparse.Namespace, cases: list[Case], tune: Tune, out: Path, logs: Path, work_root: Path) -> int:
    """Checks and, unless a dry run, times every case; prints the table and writes the JSON. Returns the exit code."""
    if options.dry_run:
        device = dict(tune_spec.SM90_PROFILE) if options.arch == "sm_90" else None
        if device is None:
            print("kt_compare: a dry run knows the sm_90 profile only", file=sys.stderr)
            return 2
    else:
        probe = subprocess.run([options.python, str(HERE / "kernel_tuner_inputs.py"), "--device-properties"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"kt_compare: cannot read the GPU's properties through CuPy:\n{probe.stderr}", file=sys.stderr)
            return 1
        device = json.loads(probe.stdout)
        # Untimed warm-up of both tools' files (binary, Python modules) in the page cache, then, for the record,
        # each tool's bare start-up: tune printing its version, Python importing Kernel Tuner.
        subprocess.run([str(tune.binary), "--version"], capture_output=True)
        subprocess.run([options.python, "-c", "import cupy, numpy, kernel_tuner"], capture_output=True)
        startup = {"tune_version_seconds": process_seconds([str(tune.binary), "--version"]),
                   "kernel_tuner_import_seconds": process_seconds([options.python, "-c", "import kernel_tuner"])}
        print(f"start-up: `tune --version` {startup['tune_version_seconds']:.3f} s, `import kernel_tuner` "
              f"{startup['kernel_tuner_import_seconds']:.3f} s", flush=True)

    failures = 0
    rows = []
    for case in cases:
        print(f"== {case.name} ({case.spec}, {case.problem}, {case.search}"
              f"{f' {case.budget}' if case.budget else ''})", flush=True)
        try:
            summary, configurations = tune.space(case)
        except RuntimeError as error:
            print(f"  {error}", flush=True)
            failures += 1
            continue
        spec = tune_spec.load_spec(REPOSITORY / case.spec, summary["parameters"],
                                   tune_spec.parse_problem_overrides(case.problem))
        plan = kernel_tuner_plan(case, summary, configurations, options.restrictions)
        problems = check_kernel_tuner_inputs(spec, plan, configurations, device)
        if options.check_instantiation:
            problems += check_instantiation(tune, case, spec, configurations, device,
                                            options.arch if options.dry_run else f"sm_{device['arch']}")
        for problem in problems:
            print(f"  DIFFERENCE: {problem}", flush=True)
        if problems:
            failures += 1
            continue
        work = work_root / case.name
        work.mkdir(parents=True, exist_ok=True)
        if options.dry_run:
            print(f"  tune: XDG_CACHE_HOME=<empty> "
                  f"{' '.join(tune.run_command(case, work / 'tune-records', work / 'tune-best'))}")
            print("  Kernel Tuner (CUPY_CACHE_DIR=<empty>, no cache file):")
            print("    " + describe_plan(spec, plan, device).replace("\n", "\n    "), flush=True)
            continue

        ceiling_cache = None
        if options.ceilings == "known":
            ceiling_cache = work_root / "ceiling-cache"
            if not ceiling_cache.exists():  # once per benchmark: an untimed run measures and caches them
                ceiling_cache.mkdir(parents=True)
                run_tune(tune, case, work, logs, options.tune_timeout, ceiling_cache)
        tune_outcome = run_tune(tune, case, work, logs, options.tune_timeout, ceiling_cache)
        print(f"  tune: {tune_outcome.seconds:.1f} s, {tune_outcome.evaluated} evaluated"
              f"{', ' + tune_outcome.error if tune_outcome.error else ''}", flush=True)
        if tune_outcome.error:  # no ratio to compute: spare the GPU time
            kt_outcome = Outcome(command=[], error="not run (tune failed)")
        else:
            kt_outcome = run_kernel_tuner(case, plan, work, logs, options.kernel_tuner_timeout, options.python)
        print(f"  Kernel Tuner: {kt_outcome.seconds:.1f} s, {kt_outcome.evaluated} evaluated"
              f"{', ' + kt_outcome.error if kt_outcome.error else ''}{kernel_tuner_breakdown(kt_outcome)}", flush=True)
        for outcome, tool in ((tune_outcome, "tune"), (kt_outcome, "Kernel Tuner")):
            if outcome.error and outcome.details.get("log_tail"):
                print(f"  {tool} log (last lines):\n    " + outcome.details["log_tail"].replace("\n", "\n    "))
        expected = summary["valid"] if case.search == "exhaustive" else min(case.budget, summary["valid"])
        for outcome, tool in ((tune_outcome, "tune"), (kt_outcome, "Kernel Tuner")):
            if not outcome.error and outcome.evaluated != expected:
                print(f"  NOTE: {tool} evaluated {outcome.evaluated} configurations, {expected} expected")
        records = out / "records" / case.name
        records.mkdir(parents=True, exist_ok=True)
        for source in [*(work / "tune-records").glob("*"), work / "kernel_tuner_plan.json",
                       work / "kernel_tuner_result.json"]:
            if source.is_file():
                shutil.copy(source, records / (source.name if source.parent.name != "tune-records"
                                               else "tune_" + source.name))
        ratio_value, ratio, goal = verdict(tune_outcome, kt_outcome)
        if goal.startswith("error") or goal == "FAIL":  # a missed goal (below 10x) fails the run too
            failures += 1
        rows.append({"case": case.name, "spec": case.spec, "problem": case.problem, "search": case.search,
                     "budget": case.budget, "valid": summary["valid"], "combinations": summary["total"],
                     "restrictions": options.restrictions, "ratio": ratio_value, "ratio_text": ratio,
                     "ratio_is_lower_bound": kt_outcome.timed_out, "goal": goal,
                     "tune": vars(tune_outcome), "kernel_tuner": vars(kt_outcome)})

    if not options.dry_run and rows:
        print()
        print_table(rows)
        gpu = next((row["tune"]["details"].get("device") or row["kernel_tuner"]["details"].get("device_name")
                    for row in rows), None)
        document = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": build_commit(options.tune),
                    "gpu": gpu, "device_properties": device, "startup": startup, "goal_ratio": GOAL_RATIO,
                    "cases": rows}
        (out / "kernel_tuner_comparison.json").write_text(json.dumps(document, indent=2, default=str) + "\n")
        print(f"\nwritten: {out / 'kernel_tuner_comparison.json'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
