"""Records as data: an evaluations.csv written by `tune run` (tuner/record/csv_record.h) as a pandas DataFrame, or a
list of dicts where pandas is not installed, so that an analysis can go on in a notebook."""

import csv
import json
from pathlib import Path

# Columns the record writer gives a type (tuner/record/evaluation.h); parameters are typed by their values.
_TEXT_COLUMNS = {"hash", "status", "message", "device", "throttle_reasons_text"}
_UNESCAPES = {"\\\\": "\\", "\\n": "\n", "\\r": "\r"}


def _unescape(text):
    if "\\" not in text:
        return text
    out, index = [], 0
    while index < len(text):
        pair = text[index:index + 2]
        if pair in _UNESCAPES:
            out.append(_UNESCAPES[pair])
            index += 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def _typed(column, text):
    if column in _TEXT_COLUMNS or text == "":
        return _unescape(text) if text != "" or column in _TEXT_COLUMNS else None
    if text == "true":
        return True
    if text == "false":
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return _unescape(text)


def _read_rows(path):
    # utf-8-sig: a byte order mark before the header (a CSV saved by a spreadsheet) is not part of its first name.
    text = path.read_text(encoding="utf-8-sig")
    # A final line without its newline is a row torn by a killed writer: readers skip it, as `tune` does.
    if text and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise ValueError(f"{path}: empty records file (no header)")
    rows = []
    for line_number, fields in enumerate(reader, start=2):
        if len(fields) != len(header):
            raise ValueError(f"{path}:{line_number}: {len(fields)} fields, the header has {len(header)}")
        rows.append({column: _typed(column, field) for column, field in zip(header, fields)})
    return header, rows


def records(path, *, as_dataframe=None):
    """The evaluations of a records file: `path` is an evaluations.csv or the run directory holding it. Returns a
    pandas DataFrame (columns in the file's order; run.json's metadata, where present, in .attrs["run"]) when
    pandas imports, else a list of dicts. as_dataframe=False always gives the list; True requires pandas."""
    path = Path(path)
    if path.is_dir():
        path = path / "evaluations.csv"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no records file")
    header, rows = _read_rows(path)
    metadata_path = path.with_name("run.json")
    metadata = json.loads(metadata_path.read_text()) if metadata_path.is_file() else None
    if as_dataframe is False:
        return rows
    try:
        import pandas
    except ImportError:
        if as_dataframe:
            raise
        return rows
    frame = pandas.DataFrame(rows, columns=header)
    if metadata is not None:
        frame.attrs["run"] = metadata
    return frame
