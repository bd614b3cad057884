"""Dataset files: rows of `{"prompt": str, ...}` in JSONL, Parquet, CSV (with a header) or a
JSON array.

Both backends consume the same rows. Each row's prompt is the `prompt` column, else the
file's first column (the managed service's rule; a warning names the column taken), and
reaches `Task.parse` untouched, as a string. A malformed file or row fails with a
`DatasetError` naming the file and the row number (1-based, counting data rows only): JSON
that repeats a key, nests past Python's recursion limit or holds an integer past its
4,300-digit limit included. Writes are atomic: a failed write leaves no file behind and
never a half-written one.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import io
import json
import logging
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentrft.task import TaskInputError

if TYPE_CHECKING:
    from agentrft.task import Task

Format = Literal["jsonl", "parquet", "csv", "json"]
FORMATS: tuple[str, ...] = ("jsonl", "parquet", "csv", "json")
_SUFFIXES = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
}
PROMPT_COLUMN = "prompt"
#: Longest integer literal read from JSON rows (Python refuses past 4,300 digits).
MAX_INT_DIGITS = 4300

log = logging.getLogger("agentrft.datasets")


class DatasetError(ValueError):
    """A dataset file cannot be read or written; the message names the file and the row."""


class _RowJSONError(ValueError):
    """A JSON row breaks a rule `json` itself does not check (repeated key, huge integer)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    row = dict(pairs)
    if len(row) != len(pairs):  # json keeps the last value silently; a row means one
        counts = collections.Counter(k for k, _ in pairs)
        repeated = next(k for k, n in counts.items() if n > 1)
        raise _RowJSONError(f"repeats the key {repeated[:60]!r}")
    return row


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise _RowJSONError(
            f"holds an integer of {len(digits):,} digits (at most {MAX_INT_DIGITS:,}); "
            "store long numbers as strings"
        )
    return int(digits)


_ROW_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_int=_bounded_int)
_TOO_DEEP = "nests too deeply to parse (about 1,000 levels at most)"
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def loads_json(text: str) -> Any:
    """`json.loads` for rows: a repeated key or an over-long integer raises `ValueError`
    with a readable message, and so does nesting past Python's recursion limit."""
    try:
        return _ROW_DECODER.decode(text)
    except RecursionError:
        raise _RowJSONError(_TOO_DEEP) from None


def _row_at_fault(text: str) -> str | None:
    """For a JSON array that `loads_json` refused with `_RowJSONError`: "row N (line L)
    <why>" for the first element at fault, found by decoding the elements one by one
    (only on this error path). None if `text` is not an array or no element is at fault."""

    def skip_space(pos: int) -> int:
        match = _JSON_SPACE.match(text, pos)
        return match.end() if match else pos

    pos = skip_space(0)
    if not text.startswith("[", pos):
        return None
    pos = skip_space(pos + 1)
    row = 0
    while pos < len(text) and text[pos] != "]":
        row += 1
        where = f"row {row} (line {text.count(chr(10), 0, pos) + 1})"
        try:
            _, pos = _ROW_DECODER.raw_decode(text, pos)
        except _RowJSONError as exc:
            return f"{where} {exc}"
        except RecursionError:
            return f"{where} {_TOO_DEEP}"
        except json.JSONDecodeError:
            return None
        pos = skip_space(pos)
        if text.startswith(",", pos):
            pos = skip_space(pos + 1)
    return None


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    """The format named by `fmt`, else by the file's extension."""
    if fmt:
        fmt = fmt.lower().lstrip(".")
        if fmt not in FORMATS:
            raise DatasetError(f"unknown dataset format {fmt!r}; use one of {', '.join(FORMATS)}")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise DatasetError(
            f"{path}: cannot tell the format from the extension {suffix or '(none)'!r}; "
            f"use .jsonl, .parquet, .csv or .json, or name the format ({', '.join(FORMATS)})"
        )
    return _SUFFIXES[suffix]


# -- reading ------------------------------------------------------------------------------


def read_rows(path: str | Path, fmt: str | None = None) -> list[dict[str, Any]]:
    """All rows of a dataset file, as dicts (CSV values stay strings)."""
    path = Path(path)
    fmt = detect_format(path, fmt)
    if not path.is_file():
        raise DatasetError(f"dataset file {path} does not exist")
    reader = {"jsonl": _read_jsonl, "json": _read_json, "csv": _read_csv, "parquet": _read_parquet}
    rows = reader[fmt](path)
    if not rows:
        raise DatasetError(f"{path}: the file holds no rows")
    return rows


def prompt_column(rows: Sequence[dict[str, Any]], source: str = "dataset") -> str:
    """`prompt` when the first row has it, else the first row's first column."""
    first = rows[0]
    if PROMPT_COLUMN in first:
        return PROMPT_COLUMN
    if not first:
        raise DatasetError(
            f'{source}: the first row has no columns; rows look like {{"prompt": "..."}}'
        )
    return next(iter(first))


def prompts_from_rows(rows: Sequence[dict[str, Any]], source: str = "dataset") -> list[str]:
    """Each row's prompt string (the `prompt` column, else the first column, with a
    warning that names it)."""
    if not rows:
        raise DatasetError(f"{source}: no rows")
    column = prompt_column(rows, source)
    if column != PROMPT_COLUMN:
        log.warning(
            "%s has no %r column; using its first column %s as the prompt, as the managed "
            "service does (name the prompt column %r to choose it)",
            source,
            PROMPT_COLUMN,
            _short(column),
            PROMPT_COLUMN,
        )
    prompts = []
    for i, row in enumerate(rows, start=1):
        if column not in row or row[column] is None:
            raise DatasetError(f"{source}: row {i} has no {column!r} value")
        value = row[column]
        if not isinstance(value, str):
            raise DatasetError(
                f"{source}: row {i}: the {column!r} value must be a string, got "
                f"{type(value).__name__} ({_short(value)}); store structured prompts as a "
                f"JSON-encoded string"
            )
        prompts.append(value)
    return prompts


def read_prompts(path: str | Path, fmt: str | None = None) -> list[str]:
    """The prompt string of every row of a dataset file."""
    return prompts_from_rows(read_rows(path, fmt), source=str(path))


def task_prompts(
    task: Task[Any, Any],
    *,
    data: str | Path | None,
    split: str,
    n: int | None,
    seed: int,
    data_flag: str = "--data FILE",
) -> list[str]:
    """The prompts a run or an evaluation plays: the rows of the dataset file `data` (its
    first `n`), else the rows `task` makes for `split`. Either way every row is checked the
    same way (`prompts_from_rows`): the one row loader of the CLI and the backends.

    A task that makes no rows fails with a `TaskInputError` naming `data_flag`, the way
    the caller takes a file instead (`--data FILE`, `--set train_dataset=FILE`).
    """
    if data:
        prompts = read_prompts(data)
        return prompts[:n] if n else prompts
    try:
        rows = task.make_dataset(split, n, seed)
    except TaskInputError as exc:
        raise TaskInputError(f"{exc}; give rows with {data_flag} (JSONL, Parquet, CSV)") from None
    return prompts_from_rows(rows, source=f"task {task.name!r} split {split!r}")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{path}: row {len(rows) + 1} (line {lineno})"
            try:
                value = loads_json(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{where} is not valid JSON: {exc.msg}") from None
            except _RowJSONError as exc:
                raise DatasetError(f"{where} {exc}") from None
            if not isinstance(value, dict):
                raise DatasetError(
                    f'{where} must be a JSON object like {{"prompt": "..."}}, got '
                    f"{type(value).__name__}"
                )
            rows.append(value)
    return rows


def _read_json(path: Path) -> list[dict[str, Any]]:
    with _open_text(path) as fh:
        text = fh.read()
    try:
        value = loads_json(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{path} is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    except _RowJSONError as exc:
        row = _row_at_fault(text)
        raise DatasetError(f"{path}: {row}" if row else f"{path} {exc}") from None
    if not isinstance(value, list):
        raise DatasetError(
            f"{path} must hold a JSON array of objects, got {type(value).__name__}; "
            f"for one object per line use .jsonl"
        )
    for i, row in enumerate(value, start=1):
        if not isinstance(row, dict):
            raise DatasetError(
                f'{path}: row {i} must be a JSON object like {{"prompt": "..."}}, got '
                f"{type(row).__name__}"
            )
    return value


def _read_csv(path: Path) -> list[dict[str, Any]]:
    # Prompts can be long (a whole document); the csv module's default cap is 128 KiB.
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    rows: list[dict[str, Any]] = []
    with _open_text(path, newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            if not header or not any(h.strip() for h in header):
                raise DatasetError(f"{path}: the first line must be a header (e.g. prompt)")
            if len(set(header)) != len(header):
                raise DatasetError(f"{path}: the header repeats a column name: {header}")
            for values in reader:
                if not values:  # blank line
                    continue
                if len(values) != len(header):
                    raise DatasetError(
                        f"{path}: row {len(rows) + 1} (line {reader.line_num}) has "
                        f"{len(values)} fields but the header has {len(header)} "
                        f"({', '.join(header)}); quote values that contain commas"
                    )
                rows.append(dict(zip(header, values, strict=True)))
        except csv.Error as exc:
            raise DatasetError(
                f"{path}: row {len(rows) + 1} (line {reader.line_num}) is not valid CSV: {exc}"
            ) from None
    return rows


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa  # heavy; only when a Parquet file is read
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"{path} is not a readable Parquet file: {exc}") from None
    return table.to_pylist()


@contextlib.contextmanager
def _open_text(path: Path, newline: str | None = None) -> Any:
    try:
        # utf-8-sig: spreadsheet exports start with a byte-order mark that is not data.
        with path.open(encoding="utf-8-sig", newline=newline) as fh:
            yield fh
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# -- writing ------------------------------------------------------------------------------


def write_rows(
    rows: Iterable[dict[str, Any]],
    path: str | Path,
    fmt: str | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write rows atomically (temp file + rename); refuses to replace a file unless asked."""
    path = Path(path)
    fmt = detect_format(path, fmt)
    rows = list(rows)
    for i, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise DatasetError(f"{path}: row {i} is a {type(row).__name__}, not a dict")
    if path.exists() and not overwrite:
        raise DatasetError(f"{path} already exists; pass --force to overwrite it")
    if path.is_dir():
        raise DatasetError(f"{path} is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = {"jsonl": _jsonl_bytes, "json": _json_bytes, "csv": _csv_bytes}
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        if fmt == "parquet":
            os.close(fd)
            _write_parquet(rows, tmp, path)
        else:
            with os.fdopen(fd, "wb") as fh:
                fh.write(writer[fmt](rows))
        tmp.chmod(0o644)  # mkstemp makes 0600; a dataset is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _jsonl_bytes(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _json_bytes(rows: list[dict[str, Any]]) -> bytes:
    return (json.dumps(rows, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    header: list[str] = []
    for row in rows:
        header.extend(k for k in row if k not in header)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_csv_cell(row.get(k)) for k in header])
    return buf.getvalue().encode("utf-8")


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _write_parquet(rows: list[dict[str, Any]], tmp: Path, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: rows do not fit one Parquet schema: {exc}") from None
    pq.write_table(table, tmp)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_prompts_parse(task: Task[Any], prompts: list[str], source: str, say: Any = None) -> None:
    """Refuse rows of which none parses as an instance of `task` (a run on them would
    train on the lowest reward alone); `say` a warning when only some fail. Called before a
    model is loaded or a file written, for rows from a file (the task's own rows parse)."""
    bad: list[int] = []
    first = ""
    for i, prompt in enumerate(prompts):
        try:
            task.parse(prompt)
        except Exception as exc:  # TaskInputError, or a plugin's parse bug
            if not bad:
                first = (
                    str(exc) if isinstance(exc, TaskInputError) else f"{type(exc).__name__}: {exc}"
                )
            bad.append(i + 1)
    if not bad:
        return
    if len(bad) == len(prompts):
        raise DatasetError(
            f"{source}: none of its {len(prompts)} rows parses as a {task.name} instance "
            f"(row 1: {first}); `agentrft dataset make --task {task.name}` writes rows in "
            f"its format, `agentrft dataset check` checks a file"
        )
    if say is not None:
        shown = ", ".join(map(str, bad[:10])) + (" …" if len(bad) > 10 else "")
        say(
            f"warning: {len(bad)} of {len(prompts)} rows of {source} do not parse as "
            f"{task.name} instances and would score the lowest reward (rows {shown}); "
            f"row {bad[0]}: {first}",
            highlight=False,
        )
