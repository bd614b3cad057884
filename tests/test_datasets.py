"""Dataset files: round trips in all four formats, the prompt column rule, and malformed
files or rows reported with the file and the row number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrft.datasets import (
    DatasetError,
    detect_format,
    prompts_from_rows,
    read_prompts,
    read_rows,
    task_prompts,
    write_rows,
)
from agentrft.task import TaskInputError
from agentrft.testing import FindNumberTask

ROWS = [
    {"prompt": '{"secret": 3, "low": 1, "high": 9}', "split": "train"},
    {"prompt": 'commas, "quotes", and\na newline', "split": "train"},
    {"prompt": "ünïcødé ✓", "split": "validation"},
]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv", "json"])
def test_round_trip_keeps_rows_and_prompts(tmp_path: Path, fmt: str) -> None:
    path = write_rows(ROWS, tmp_path / f"rows.{fmt}")
    assert detect_format(path) == fmt
    assert read_rows(path) == ROWS
    assert read_prompts(path) == [r["prompt"] for r in ROWS]
    assert [p.name for p in tmp_path.iterdir()] == [f"rows.{fmt}"]  # no temp file left


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "csv", "json"])
def test_explicit_format_overrides_the_extension(tmp_path: Path, fmt: str) -> None:
    path = write_rows(ROWS, tmp_path / "rows.data", fmt)
    assert read_prompts(path, fmt) == [r["prompt"] for r in ROWS]


def test_first_column_is_the_prompt_without_a_prompt_column(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("question,answer\nwhat is 2+2?,4\nand 3+3?,6\n", encoding="utf-8")
    assert read_prompts(path) == ["what is 2+2?", "and 3+3?"]


def test_csv_values_stay_strings(tmp_path: Path) -> None:
    path = write_rows([{"prompt": "007", "n": 3}], tmp_path / "r.csv")
    assert read_rows(path) == [{"prompt": "007", "n": "3"}]


def test_jsonl_bad_json_names_the_row_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a"}\n\n{"prompt": "b"}\n{"prompt": oops}\n', encoding="utf-8")
    with pytest.raises(DatasetError) as exc:
        read_rows(path)
    msg = str(exc.value)
    assert str(path) in msg and "row 3" in msg and "line 4" in msg and "not valid JSON" in msg


def test_jsonl_row_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "a"}\n["b"]\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"row 2 .*must be a JSON object"):
        read_rows(path)


def test_csv_row_with_wrong_field_count(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("prompt,id\nhello,1\nhello, world,2\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.csv: row 2 \(line 3\) has 3 fields but"):
        read_rows(path)


def test_csv_without_header(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="header"):
        read_rows(path)


def test_json_array_element_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"prompt": "a"}, "b"]), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.json: row 2 must be a JSON object"):
        read_rows(path)


def test_json_that_is_not_an_array(tmp_path: Path) -> None:
    path = tmp_path / "obj.json"
    path.write_text('{"prompt": "a"}', encoding="utf-8")
    with pytest.raises(DatasetError, match="JSON array"):
        read_rows(path)


def test_non_string_prompt_is_reported_by_row(tmp_path: Path) -> None:
    path = write_rows([{"prompt": "a"}, {"prompt": "b"}, {"prompt": 7}], tmp_path / "r.jsonl")
    with pytest.raises(DatasetError, match=r"r.jsonl: row 3: the 'prompt' value must be a string"):
        read_prompts(path)


def test_missing_prompt_value_is_reported_by_row(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="row 2 has no 'prompt' value"):
        prompts_from_rows([{"prompt": "a"}, {"other": "b"}], source="x")


def test_parquet_null_prompt_is_reported_by_row(tmp_path: Path) -> None:
    path = write_rows([{"prompt": "a"}, {"prompt": None}], tmp_path / "r.parquet")
    with pytest.raises(DatasetError, match="row 2 has no 'prompt' value"):
        read_prompts(path)


def test_corrupt_parquet_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"not parquet at all")
    with pytest.raises(DatasetError, match=r"broken\.parquet is not a readable Parquet file"):
        read_rows(path)


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        read_rows(tmp_path / "nope.jsonl")
    with pytest.raises(DatasetError, match="cannot tell the format"):
        read_rows(tmp_path / "rows.txt")
    with pytest.raises(DatasetError, match="unknown dataset format 'xml'"):
        detect_format(tmp_path / "rows.jsonl", "xml")


def test_empty_file_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    with pytest.raises(DatasetError, match="no rows"):
        read_rows(path)


def test_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    path = write_rows(ROWS, tmp_path / "r.jsonl")
    with pytest.raises(DatasetError, match="already exists; pass --force"):
        write_rows([{"prompt": "new"}], path)
    assert read_rows(path) == ROWS
    write_rows([{"prompt": "new"}], path, overwrite=True)
    assert read_rows(path) == [{"prompt": "new"}]


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    path = write_rows(ROWS, tmp_path / "r.parquet")
    before = path.read_bytes()
    # One column holding a string and a dict cannot be one Parquet type.
    with pytest.raises(DatasetError, match="one Parquet schema"):
        write_rows([{"prompt": "a"}, {"prompt": {"x": 1}}], path, overwrite=True)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["r.parquet"]


def test_failed_first_write_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(DatasetError):
        write_rows([{"prompt": "a"}, "not a row"], tmp_path / "r.jsonl")  # type: ignore[list-item]
    assert list(tmp_path.iterdir()) == []


def test_byte_order_mark_and_long_csv_fields(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    long_prompt = "x" * 300_000
    path.write_bytes(("\ufeffprompt,id\n" + long_prompt + ",1\n").encode("utf-8"))
    assert read_rows(path) == [{"prompt": long_prompt, "id": "1"}]
    jl = tmp_path / "bom.jsonl"
    jl.write_bytes('\ufeff{"prompt": "a"}\n'.encode())
    assert read_prompts(jl) == ["a"]


class _MadeRows(FindNumberTask):
    """find_number that makes the rows it is given (or none at all)."""

    def __init__(self, rows: list[dict] | None) -> None:
        self.rows = rows

    def make_dataset(self, split: str, n: int | None, seed: int) -> list[dict]:
        if self.rows is None:
            raise TaskInputError(f"task {self.name!r} does not generate datasets")
        return self.rows


def test_task_prompts_checks_made_rows_as_strictly_as_file_rows(tmp_path: Path) -> None:
    made = _MadeRows([{"prompt": "a"}, {"prompt": {"secret": 3}}])
    with pytest.raises(DatasetError, match="split 'train': row 2: the 'prompt' value must be"):
        task_prompts(made, data=None, split="train", n=None, seed=0)
    with pytest.raises(DatasetError, match="split 'train': row 1 has no 'prompt' value"):
        task_prompts(_MadeRows([{"prompt": None}]), data=None, split="train", n=None, seed=0)
    # A file wins over the task's rows, and `n` keeps its first rows.
    path = tmp_path / "rows.jsonl"
    write_rows([{"prompt": "x"}, {"prompt": "y"}, {"prompt": "z"}], path)
    assert task_prompts(made, data=path, split="train", n=2, seed=0) == ["x", "y"]


def test_task_prompts_names_the_way_to_give_rows_when_a_task_makes_none() -> None:
    none = _MadeRows(None)
    with pytest.raises(TaskInputError, match=r"datasets; give rows with --data FILE \(JSONL"):
        task_prompts(none, data=None, split="validation", n=None, seed=0)
    with pytest.raises(TaskInputError, match="give rows with --set train_dataset=FILE"):
        task_prompts(
            none, data=None, split="train", n=None, seed=0, data_flag="--set train_dataset=FILE"
        )
