"""kernlathe.records: a records file as a DataFrame (or a list of dicts), typed as the record writer wrote it."""

from pathlib import Path

import pytest

import kernlathe

REPOSITORY = Path(__file__).resolve().parents[2]

RECORD = (
    "hash,BLOCK,VEC,GRID_STRIDE,LAYOUT,status,message,time_median_ms,timestamp\n"
    "3f2a,128,4,true,row,ok,,0.0123,1714567890.25\n"
    "77aa,256,8,false,col,compile_error,\"error: a, b\\nline two\",,1714567891.5\n"
    "torn,512,1,tr"
)


def write_record(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "evaluations.csv").write_text(RECORD)
    (run / "run.json").write_text('{"device": {"name": "NVIDIA H200"}}')
    return run


def test_rows_as_dicts_typed_and_torn_row_skipped(tmp_path):
    rows = kernlathe.records(write_record(tmp_path), as_dataframe=False)
    assert len(rows) == 2
    assert rows[0] == {"hash": "3f2a", "BLOCK": 128, "VEC": 4, "GRID_STRIDE": True, "LAYOUT": "row", "status": "ok",
                       "message": "", "time_median_ms": 0.0123, "timestamp": 1714567890.25}
    assert rows[1]["status"] == "compile_error"
    assert rows[1]["message"] == "error: a, b\nline two"
    assert rows[1]["time_median_ms"] is None


def test_a_byte_order_mark_before_the_header_is_not_part_of_it(tmp_path):
    run = write_record(tmp_path)
    (run / "evaluations.csv").write_bytes(b"\xef\xbb\xbf" + RECORD.encode())
    rows = kernlathe.records(run, as_dataframe=False)
    assert list(rows[0])[0] == "hash"
    assert rows[0]["hash"] == "3f2a"


def test_dataframe_with_run_metadata(tmp_path):
    pandas = pytest.importorskip("pandas")
    frame = kernlathe.records(write_record(tmp_path) / "evaluations.csv")
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns)[:3] == ["hash", "BLOCK", "VEC"]
    assert frame["BLOCK"].tolist() == [128, 256]
    assert frame.attrs["run"]["device"]["name"] == "NVIDIA H200"
    assert frame.loc[frame.status == "ok", "time_median_ms"].iloc[0] == pytest.approx(0.0123)


def test_a_committed_record_reads_whole():
    record = next((REPOSITORY / "results/runs").glob("*/sm_90/*/evaluations.csv"))
    rows = kernlathe.records(record, as_dataframe=False)
    header = record.read_text().splitlines()[0].split(",")
    assert len(rows) == len(record.read_text().strip().splitlines()) - 1
    assert set(rows[0]) == set(header)
    assert all(row["status"] for row in rows)


def test_a_row_with_the_wrong_field_count_names_its_line(tmp_path):
    path = tmp_path / "evaluations.csv"
    path.write_text("hash,status\nab,ok\ncd,ok,extra\n")
    with pytest.raises(ValueError, match=r"evaluations.csv:3: 3 fields, the header has 2"):
        kernlathe.records(path, as_dataframe=False)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        kernlathe.records(tmp_path)
