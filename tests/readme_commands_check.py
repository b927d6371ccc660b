#!/usr/bin/env python3
"""Every command of the README's quick start runs: the fenced block that follows the HTML comment naming this
script is read from README.md itself, so an edit of the README that breaks one of its commands fails this check.

Each line of the block is a `tune` command (`build/tune ...` or `tune ...`; `#` starts a comment, a trailing `\\`
continues a line). A command whose comment says "needs a GPU" is not run and is named as skipped; every other one
runs with the built binary, without a shell, in a copy of the files a checkout's commands read (kernels/, spaces/,
templates/, workloads/, results/), with its own cubin cache, so nothing is written into the source tree or the
user's cache. A command passes when it exits 0.

Usage: tests/readme_commands_check.py TUNE_BINARY [SOURCE_DIR]
(exit 0: every command ran and exited 0; 1: the failures listed with their output; 2: bad usage or no block found)
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = "tests/readme_commands_check.py"
NEEDS_GPU = "needs a GPU"
# What the README's commands read, relative to the checkout, as a reader runs them from its root.
COPIED = ["kernels", "spaces", "templates", "workloads", "results"]
TIMEOUT_SECONDS = 300


def quick_start_lines(readme_text):
    """The lines of the fenced block after the marker comment, continuations joined, blank lines dropped."""
    lines = readme_text.splitlines()
    marker = next((index for index, line in enumerate(lines) if "<!--" in line and MARKER in line), None)
    if marker is None:
        return None
    opening = next((index for index in range(marker + 1, len(lines)) if lines[index].startswith("```")), None)
    if opening is None:
        return None
    commands, pending = [], ""
    for line in lines[opening + 1:]:
        if line.startswith("```"):
            break
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip():
            commands.append(line.strip())
    return commands


def parse(line):
    """(the command's words, whether its comment says it needs a GPU); no words for a line that is only a comment."""
    words = shlex.split(line, comments=True)
    return words, NEEDS_GPU in line.partition(" #")[2]


def copy_checkout(source_dir, root):
    for name in COPIED:
        source = os.path.join(source_dir, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(root, name), symlinks=True)


def main(arguments):
    if not arguments:
        print(__doc__)
        return 2
    tune = os.path.abspath(arguments[0])
    source_dir = os.path.abspath(arguments[1] if len(arguments) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    with open(os.path.join(source_dir, "README.md"), encoding="utf-8") as file:
        lines = quick_start_lines(file.read())
    if not lines:
        print(f"README.md: no fenced block of commands after an HTML comment naming {MARKER}")
        return 2

    failures, ran, skipped = [], 0, 0
    with tempfile.TemporaryDirectory(prefix="readme-commands-") as root:
        copy_checkout(source_dir, root)
        environment = dict(os.environ, XDG_CACHE_HOME=os.path.join(root, "cache"))
        for line in lines:
            words, needs_gpu = parse(line)
            if not words:
                continue
            if words[0] not in ("tune", "build/tune"):
                print(f"FAILED (not a tune command: the block holds only `build/tune ...` lines): {line}")
                failures.append(line)
                continue
            if needs_gpu:
                print(f"skipped ({NEEDS_GPU}): {line}")
                skipped += 1
                continue
            started = time.monotonic()
            try:
                finished = subprocess.run([tune] + words[1:], cwd=root, env=environment, capture_output=True,
                                          text=True, errors="replace", timeout=TIMEOUT_SECONDS)
                status = finished.returncode
                output = (finished.stdout + finished.stderr).strip()
            except subprocess.TimeoutExpired:
                status, output = None, f"still running after {TIMEOUT_SECONDS} s"
            seconds = time.monotonic() - started
            ran += 1
            if status == 0:
                print(f"ok ({seconds:.1f} s): {line}")
                continue
            tail = "\n".join("  | " + text for text in output.splitlines()[-20:])
            what = "timed out" if status is None else f"exit {status}"
            print(f"FAILED ({what}, {seconds:.1f} s): {line}\n{tail}")
            failures.append(line)
    print(f"{ran} README commands run, {skipped} skipped ({NEEDS_GPU}), {len(failures)} failed")
    if ran == 0:
        print("README.md: the quick start block holds no command that runs without a GPU")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
