#!/usr/bin/env python3
"""Every performance figure the README and docs/*.md quote comes from a committed raw output (issue 31).

Two forms are recognised, and each figure they carry is looked up in the files they cite:
  tables     a table with a column headed "raw": each row's raw cell links one or more files under results/
             ([name](results/...)), and every number in the row's other cells must appear in those files; a raw cell
             that says "none committed" marks a row whose figures have no raw output (listed, not failed)
  sentences  a link whose text starts with "raw" ([raw](results/...)) vouches for the numbers before it in the same
             sentence (back to the previous raw link, the sentence's start or the paragraph's start)
A figure matches a number of the file that rounds to it at the precision shown ("4382" matches 4382.4, "103.2%"
matches 103.21 or a fraction 1.0321, "728.6" TFLOP/s matches 728562 GFLOP/s), thousands separators and signs aside. Numbers inside `code`, link targets,
dates, clock times, commit hashes and names (H200, sm_90, bf16) are not figures.
In docs/results.md (and a README section headed "Measured") every table must have a raw column: a table there
without one fails.

Usage: tests/docs_figures_check.py [SOURCE_DIR]   (exit 0: every figure found; 1: a figure missing or a file absent)
"""
import bisect
import glob
import os
import re
import sys

NUMBER = re.compile(r"(?<![\w.^/])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w]*[A-WYZa-wyz_])")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
NOT_FIGURES = [
    re.compile(r"`[^`]*`"),                                       # code: commands, paths, names
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),                         # dates
    re.compile(r"\b\d{1,2}:\d{2}(?:-\d{1,2}:\d{2})?\b"),           # clock times
    re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b"),  # commit hashes
    re.compile(r"\bcommits? [0-9a-f]{7,40}\b"),                    # "commit 7800504": a hash of digits only
    re.compile(r"\bissues? #?\d+\b"),                              # issue numbers
]


def figures(text):
    """The numbers of a piece of markdown that are figures, as (text, value, decimals)."""
    text = LINK.sub(lambda link: link.group(1), text)
    for pattern in NOT_FIGURES:
        text = pattern.sub(" ", text)
    found = []
    for match in NUMBER.finditer(text):
        shown = match.group(1)
        plain = shown.replace(",", "")
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        found.append((shown, float(plain), decimals))
    return found


class RawFile:
    """The numbers of one committed file, sorted, for lookups at a precision."""
    cache = {}

    def __init__(self, path):
        text = open(path, errors="replace").read()
        values = set()
        for match in re.finditer(r"\d+(?:,\d{3})*(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
            token = match.group(0)
            for candidate in {token, token.replace(",", "")} | set(token.split(",")):
                try:
                    values.add(float(candidate))
                except ValueError:
                    pass
        self.values = sorted(values)

    @classmethod
    def of(cls, path):
        if path not in cls.cache:
            cls.cache[path] = cls(path)
        return cls.cache[path]

    def has(self, value, decimals, percent):
        tolerance = 0.5 * 10 ** -decimals + 1e-9
        # The file's unit may be 1000 times smaller or larger (GFLOP/s shown as TFLOP/s, ms shown as us); a
        # percentage may be a fraction there.
        scales = [1, 1000, 0.001] + ([0.01] if percent else [])
        for scale in scales:
            target, scaled_tolerance = value * scale, tolerance * scale
            index = bisect.bisect_left(self.values, target - scaled_tolerance)
            if index < len(self.values) and self.values[index] <= target + scaled_tolerance:
                return True
        return False


def missing_figures(text, files):
    """The figures of text found in none of files."""
    missing = []
    for shown, value, decimals in figures(text):
        percent = bool(re.search(re.escape(shown) + r"\s*%", text))
        if not any(RawFile.of(path).has(value, decimals, percent) for path in files):
            missing.append(shown)
    return missing


def cited_files(cell, document_dir, source_dir, problems, where):
    files = []
    for _, target in LINK.findall(cell):
        path = os.path.normpath(os.path.join(document_dir, target.split("#")[0]))
        if not path.startswith(os.path.join(source_dir, "results") + os.sep):
            problems.append(f"{where}: the raw link {target} is not a file under results/")
        elif not os.path.isfile(path):
            problems.append(f"{where}: the raw link {target} names no committed file")
        else:
            files.append(path)
    return files


def split_row(line):
    cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())]
    return cells[1:-1] if len(cells) >= 2 else cells


def check_tables(lines, name, document_dir, source_dir, measured, problems, unsourced):
    """Tables: rows of those with a raw column are checked; a table of the Measured section without one fails."""
    index = 0
    checked = 0
    while index < len(lines):
        line = lines[index]
        if not (line.startswith("|") and index + 1 < len(lines) and re.match(r"^\|[-:| ]+\|\s*$", lines[index + 1])):
            index += 1
            continue
        header = [cell.lower() for cell in split_row(line)]
        start = index
        index += 2
        rows = []
        while index < len(lines) and lines[index].startswith("|"):
            rows.append((index, split_row(lines[index])))
            index += 1
        if "raw" not in header:
            if measured(start):
                problems.append(f"{name}:{start + 1}: a table of the Measured section without a raw column")
            continue
        raw_column = header.index("raw")
        for row_index, cells in rows:
            where = f"{name}:{row_index + 1}"
            raw_cell = cells[raw_column] if raw_column < len(cells) else ""
            others = " | ".join(cell for column, cell in enumerate(cells) if column != raw_column)
            if "none committed" in raw_cell.lower():
                unsourced.append(f"{where}: {others[:100]}")
                continue
            files = cited_files(raw_cell, document_dir, source_dir, problems, where)
            if not files:
                problems.append(f"{where}: no raw file cited")
                continue
            missing = missing_figures(others, files)
            if missing:
                problems.append(f"{where}: {', '.join(missing)} not in {', '.join(os.path.relpath(f, source_dir) for f in files)}")
            checked += 1
    return checked


def check_sentences(text, name, document_dir, source_dir, problems):
    """Prose: each [raw](...) link vouches for the numbers before it in its sentence."""
    checked = 0
    for paragraph_match in re.finditer(r"(?:^(?!\|)(?!```).+\n?)+", text, re.M):
        paragraph = paragraph_match.group(0)
        line = text.count("\n", 0, paragraph_match.start()) + 1
        previous_end = 0
        for link in LINK.finditer(paragraph):
            if not link.group(1).lower().startswith("raw"):
                continue
            before = paragraph[previous_end:link.start()]
            sentence_start = max((m.end() for m in re.finditer(r"[.;:]\s+(?=[A-Z0-9(`*])", before)), default=0)
            fragment = before[sentence_start:]
            previous_end = link.end()
            where = f"{name}:{line + paragraph.count(chr(10), 0, link.start())}"
            files = cited_files(link.group(0), document_dir, source_dir, problems, where)
            if not files:
                continue
            missing = missing_figures(fragment, files)
            if missing:
                problems.append(f"{where}: {', '.join(missing)} not in {os.path.relpath(files[0], source_dir)} "
                                f"(\"{' '.join(fragment.split())[-90:]}\")")
            checked += 1
    return checked


def measured_lines(lines):
    """Line indexes of the README's "## Measured" section (to the next level-2 heading)."""
    inside, found = False, set()
    for index, line in enumerate(lines):
        if line.startswith("## "):
            inside = line.strip() == "## Measured"
        if inside:
            found.add(index)
    return found


def main(arguments):
    source_dir = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), ".."))
    documents = [os.path.join(source_dir, "README.md")] + sorted(glob.glob(os.path.join(source_dir, "docs", "*.md")))
    problems, unsourced = [], []
    tables = sentences = 0
    for document in documents:
        name = os.path.relpath(document, source_dir)
        text = open(document).read()
        # Fenced code is not prose.
        text = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.M | re.S)
        lines = text.split("\n")
        # Measured results live in docs/results.md (all of it) or a README section headed "Measured".
        in_measured = set(range(len(lines))) if name == os.path.join("docs", "results.md") else (
            measured_lines(lines) if name == "README.md" else set())
        tables += check_tables(lines, name, os.path.dirname(document), source_dir, in_measured.__contains__,
                               problems, unsourced)
        sentences += check_sentences(text, name, os.path.dirname(document), source_dir, problems)
    print(f"{tables} table rows and {sentences} sentences checked against their raw files; "
          f"{len(unsourced)} rows marked as having none committed")
    for row in unsourced:
        print(f"  no raw output: {row}")
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
