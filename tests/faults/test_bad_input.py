"""Bad input through the `agentrft` CLI: every case exits non-zero with one clear line.

`CASES` is a table of bad inputs (config files, `--set` values, dataset files, task names,
flags, empty, binary and huge files, wrong types). Each must end with a non-zero exit and
one `error: ...` line (or click's usage box for a malformed flag) that names the input, with
no traceback, no "this is a bug" line, no whole-input echo and no secret in the output.

The tests drive the table in-process (typer's CliRunner) on the tiny `find_number` task.
Run this file as a script to drive the same table through the real console script in
subprocesses (on the installed `wordle` task) and print the tally per outcome:

    .venv/bin/python tests/faults/test_bad_input.py            # this checkout
    .venv/bin/python tests/faults/test_bad_input.py --src DIR  # another tree's src/
"""

from __future__ import annotations

import json
import logging
import math
import random
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SECRET = "sk-test-SECRET-4f9a1c"  # planted in inputs; must never be printed back

# --- inputs --------------------------------------------------------------------------------


def billion_laughs(levels: int = 9) -> bytes:
    """The YAML alias bomb: 9 levels of 9 aliases each expand to 9**9 strings."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return ("\n".join(lines) + "\n").encode()


def deep(n: int = 100_000, open_: str = "[", close: str = "]") -> str:
    return open_ * n + close * n


LONG_INT = "7" * 5000  # past Python's 4300-digit int/str conversion limit
NUMBER_ROW = json.dumps({"prompt": json.dumps({"secret": 3, "low": 1, "high": 9})})
#: One good trajectories-file line; a bad line after it must be named by its number.
TRAJECTORY_LINE = json.dumps({"id": "t1", "task": "find_number", "prompt": "p"}).encode() + b"\n"


def binary(n: int = 4096, seed: int = 7) -> bytes:
    return bytes(random.Random(seed).randrange(256) for _ in range(n))


def huge_yaml() -> bytes:
    # A valid, 2 MB config: far past what a config file needs, so it is refused unread.
    return b"seed: 1\n" + b"# padding\n" * 200_000


def huge_row() -> bytes:
    # One 10 MB JSONL row whose prompt is a list: the error must not print it back.
    return json.dumps({"prompt": list(range(1_500_000))}).encode() + b"\n"


def parquet(columns: dict[str, list[Any]]) -> Callable[[], bytes]:
    def make() -> bytes:
        import io

        import pyarrow as pa
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        arrays = {k: pa.array(v, type=None if v else pa.string()) for k, v in columns.items()}
        pq.write_table(pa.table(arrays), buf)
        return buf.getvalue()

    return make


@dataclass(frozen=True)
class Bad:
    """One bad input: `argv` is shell-split after `{f}` (the file), `{dir}` and `{task}`
    are filled in."""

    id: str
    argv: str
    file: bytes | str | Callable[[], bytes] | None = None
    name: str = "in.yaml"
    names: str | None = None  # what the error line must name (default: the file name)
    usage: bool = False  # a malformed flag: click's usage box instead of `error: ...`
    slow: bool = False  # only in the subprocess tally (needs seconds)
    real: bool = False  # only in the subprocess tally (a command of an installed plugin)

    def content(self) -> bytes | None:
        f = self.file
        if f is None or isinstance(f, bytes):
            return f
        if isinstance(f, str):
            return f.encode()
        return f()


def _cfg(
    id: str, text: bytes | str | Callable[[], bytes], names: str | None = None, **kw: Any
) -> Bad:
    return Bad(id, "config show -c {f}", text, names=names, **kw)


def _set(id: str, item: str, names: str) -> Bad:
    return Bad(id, "config show --set " + shlex.quote(item), names=names)


def _data(id: str, content: Any, name: str, names: str | None = None, verb: str = "show") -> Bad:
    argv = "dataset show {f}" if verb == "show" else "dataset check {f} --task {task}"
    return Bad(id, argv, content, name=name, names=names)


CASES: list[Bad] = [
    # config files ----------------------------------------------------------------------
    Bad("config-missing", "config show -c {dir}/nope.yaml", names="nope.yaml"),
    Bad("config-is-dir", "config show -c {dir}", names="config"),
    _cfg("config-binary", binary()),
    _cfg("config-nul-bytes", b"seed: 1\x00\x00\n"),
    _cfg("config-utf16", "seed: 1\n".encode("utf-16")),
    _cfg("config-wrong-suffix", "seed: 1\n", name="in.txt"),
    _cfg("config-top-level-list", "- 1\n- 2\n"),
    _cfg("config-top-level-scalar", "hello\n"),
    _cfg("config-yaml-syntax", "seed: [1, 2\n"),
    _cfg("config-yaml-tab-indent", "local:\n\tmodel: x\n"),
    _cfg("config-python-tag", "seed: !!python/object/apply:os.system ['true']\n"),
    _cfg("config-two-documents", "seed: 1\n---\nseed: 2\n"),
    _cfg("config-alias-bomb", billion_laughs()),
    _cfg("config-recursive-alias", "a: &a [*a]\n"),
    _cfg("config-deep-yaml", deep()),
    _cfg(
        "config-deep-yaml-block",
        "".join(" " * i + f"k{i}:\n" for i in range(3000)) + " " * 3000 + "x: 1\n",
    ),
    _cfg("config-deep-json", deep(100_000, '{"a":', "}"), name="in.json"),
    _cfg("config-long-int", f"seed: {LONG_INT}\n"),
    _cfg("config-long-int-json", f'{{"seed": {LONG_INT}}}', name="in.json"),
    _cfg("config-huge", huge_yaml),
    _cfg(
        "config-duplicate-key", "learning_rate: 1e-5\nlearning_rate: 1e-3\n", names="learning_rate"
    ),
    _cfg("config-duplicate-nested", "local:\n  model: a\n  model: b\n", names="model"),
    _cfg("config-lr-inf", "learning_rate: .inf\n", names="learning_rate"),
    _cfg("config-lr-1e999", "learning_rate: 1e999\n", names="learning_rate"),
    _cfg("config-lr-nan", "learning_rate: .nan\n", names="learning_rate"),
    _cfg("config-threshold-nan", "success_threshold: .nan\n", names="success_threshold"),
    _cfg("config-kl-inf", "local:\n  kl_beta: .inf\n", names="kl_beta"),
    _cfg("config-grad-norm-inf", "local:\n  max_grad_norm: .inf\n", names="max_grad_norm"),
    _cfg("config-poll-inf", "sagemaker:\n  poll_s: .inf\n", names="poll_s"),
    _cfg("config-timeout-inf", "limits:\n  timeout_s: .inf\n", names="timeout_s"),
    _cfg("config-temps-nan", "eval:\n  temperatures: [.nan]\n", names="temperatures"),
    _cfg("config-temps-negative", "eval:\n  temperatures: [-1]\n", names="temperatures"),
    _cfg("config-temps-empty", "eval:\n  temperatures: []\n", names="temperatures"),
    _cfg("config-pass-k-zero", "pass_k_values: [0]\n", names="pass_k_values"),
    _cfg("config-unknown-key", "lr: 1e-5\n", names="lr"),
    _cfg("config-wrong-type", "group_size: many\n", names="group_size"),
    _cfg("config-bool-for-int", "group_size: true\n", names="group_size"),
    _cfg("config-section-scalar", "local: 5\n", names="local"),
    _cfg("config-huge-value", "task: [" + ", ".join([f'"{SECRET}"'] * 20_000) + "]\n"),
    Bad(
        "config-long-task-name",
        "eval --policy expert -c {f}",
        f"task: {SECRET}{'x' * 5_000}\n",
        names="task",
    ),
    _cfg("config-toml-syntax", "seed = \n", name="in.toml"),
    _cfg("config-toml-long-int", f"seed = {LONG_INT}\n", name="in.toml"),
    _cfg("config-toml-deep", "a = " + deep(100_000) + "\n", name="in.toml"),
    _cfg("config-toml-binary", binary(), name="in.toml"),
    _cfg("config-toml-duplicate", "seed = 1\nseed = 2\n", name="in.toml"),
    _cfg("config-toml-inf", "learning_rate = inf\n", name="in.toml", names="learning_rate"),
    # --set values ----------------------------------------------------------------------
    Bad("set-no-equals", "config show --set group_size", names="group_size"),
    Bad("set-empty-key", "config show --set =5", names="=5"),
    Bad("set-dots-only", "config show --set ...=5", names="...=5"),
    _set("set-unknown-key", "lr=1e-5", "lr"),
    _set("set-wrong-type", "group_size=abc", "group_size"),
    _set("set-empty-value", "group_size=", "group_size"),
    _set("set-lr-inf", "learning_rate=.inf", "learning_rate"),
    _set("set-lr-nan", "learning_rate=.nan", "learning_rate"),
    _set("set-lr-1e999", "learning_rate=1e999", "learning_rate"),
    _set("set-clip-inf", "clip_low_threshold=-.inf", "clip_low_threshold"),
    _set("set-temps-inf", "eval.temperatures=[.inf]", "temperatures"),
    _set("set-long-int", f"seed={LONG_INT}", "seed"),
    _set("set-deep", "seed=" + deep(50_000), "seed"),
    _set("set-deep-flow-map", "seed=" + deep(25_000, "{a: ", "}"), "seed"),
    _set("set-alias-bomb", "seed=" + billion_laughs().decode(), "seed"),
    _set("set-duplicate-key", "local={model: a, model: b}", "model"),
    _set("set-section-scalar", "local=5", "local"),
    _set("set-under-scalar", "seed.x=1", "seed"),
    _set("set-too-hot", "temperature=3", "temperature"),
    _set("set-python-tag", "seed=!!python/name:os.system", "seed"),
    # task names ------------------------------------------------------------------------
    Bad("task-unknown", "reward check --task wordel", names="wordel"),
    Bad("task-empty", "reward check --task ''", names="task"),
    Bad("task-path", "reward check --task ../../etc/passwd", names="../../etc/passwd"),
    Bad("task-very-long", "reward check --task " + "x" * 5000, names="5,000 characters"),
    Bad(
        "task-very-long-in-config",
        "eval --policy expert -c {f}",
        "task: " + "y" * 5000 + "\n",
        names="5,000 characters",
    ),
    Bad("task-long-unicode", "reward check --task " + "ẅ" * 300, names="ẅẅẅ"),
    Bad("task-in-config-wrong-type", "eval --policy expert -c {f}", "task: [1, 2]\n", names="task"),
    Bad("eval-no-task", "eval --policy expert", names="--task"),
    Bad("reward-unknown", "reward check --task {task} --reward nope", names="nope"),
    Bad("play-unknown-task", "play --task nope", names="nope"),
    Bad("train-unknown-backend", "train --task {task} --backend nope", names="nope"),
    # dataset files ---------------------------------------------------------------------
    _data("data-missing", None, "nope.jsonl"),
    _data("data-is-dir", None, "adir.jsonl", names="adir.jsonl"),
    _data("data-empty-jsonl", b"", "in.jsonl"),
    _data("data-blank-lines", b"\n\n  \n", "in.jsonl"),
    _data("data-binary-jsonl", binary(), "in.jsonl"),
    _data("data-nul-jsonl", b'{"prompt": "x"}\x00\n', "in.jsonl"),
    _data("data-utf16-jsonl", (NUMBER_ROW + "\n").encode("utf-16"), "in.jsonl"),
    _data("data-not-json", b'{"prompt": "a"}\n{oops\n', "in.jsonl"),
    _data("data-row-list", b'["a"]\n', "in.jsonl"),
    _data("data-row-empty-object", b"{}\n", "in.jsonl"),
    _data("data-row-no-prompt-later", b'{"prompt": "a"}\n{"x": "b"}\n', "in.jsonl", verb="check"),
    _data("data-prompt-number", b'{"prompt": 5}\n', "in.jsonl", verb="check"),
    _data("data-prompt-null", b'{"prompt": null}\n', "in.jsonl", verb="check"),
    _data("data-prompt-nan", b'{"prompt": NaN}\n', "in.jsonl", verb="check"),
    _data("data-duplicate-key", b'{"prompt": "a", "prompt": "b"}\n', "in.jsonl"),
    _data("data-deep-jsonl", ('{"prompt": "a", "x": ' + deep() + "}\n").encode(), "in.jsonl"),
    _data("data-long-int-jsonl", f'{{"prompt": "a", "x": {LONG_INT}}}\n'.encode(), "in.jsonl"),
    _data("data-huge-row", huge_row, "in.jsonl", verb="check"),
    _data("data-json-empty", b"", "in.json"),
    _data("data-json-object", b'{"prompt": "a"}', "in.json"),
    _data("data-json-empty-array", b"[]", "in.json"),
    _data("data-json-array-of-str", b'["a"]', "in.json"),
    _data("data-json-deep", deep().encode(), "in.json"),
    _data("data-json-long-int", f'[{{"prompt": "a", "x": {LONG_INT}}}]'.encode(), "in.json"),
    _data(
        "data-json-duplicate-key",
        b'[{"prompt": "a"},\n {"prompt": "b", "prompt": "c"}]',
        "in.json",
        names="in.json: row 2 (line 2) repeats the key 'prompt'",
    ),
    _data("data-csv-empty", b"", "in.csv"),
    _data("data-csv-header-only", b"prompt\n", "in.csv"),
    _data("data-csv-blank-header", b",\na,b\n", "in.csv"),
    _data("data-csv-repeated-header", b"prompt,prompt\na,b\n", "in.csv"),
    _data("data-csv-ragged", b"prompt,x\na\n", "in.csv"),
    _data("data-csv-binary", binary(), "in.csv"),
    _data("data-parquet-garbage", binary(), "in.parquet"),
    _data("data-parquet-empty", b"", "in.parquet"),
    _data("data-parquet-no-rows", parquet({"prompt": []}), "in.parquet"),
    _data("data-parquet-int-prompt", parquet({"prompt": [1, 2]}), "in.parquet", verb="check"),
    _data("data-parquet-int-first-column", parquet({"n": [1, 2]}), "in.parquet", verb="check"),
    _data("data-wrong-suffix", b"prompt\n", "in.txt"),
    _data("data-no-suffix", b"prompt\n", "rows"),
    _data("check-rows-do-not-parse", b'{"prompt": "not a row"}\n', "in.jsonl", verb="check"),
    _data("check-no-prompt-column-csv", b"text\nnot a row\n", "in.csv", verb="check"),
    Bad(
        "dataset-show-format-bogus",
        "dataset show {f} --format xml",
        b"",
        name="in.jsonl",
        names="xml",
    ),
    Bad(
        "dataset-make-format-bogus",
        "dataset make --task {task} -o {dir}/o.jsonl --format xml",
        names="xml",
    ),
    Bad("dataset-make-exists", "dataset make --task {task} -o {f}", b"{}", name="o.jsonl"),
    Bad(
        "dataset-make-bad-split",
        "dataset make --task {task} -o {dir}/o.jsonl --split nope",
        names="nope",
    ),
    Bad("dataset-make-into-file", "dataset make --task {task} -o {f}/o.jsonl", b"x", name="plain"),
    # flags -----------------------------------------------------------------------------
    Bad("eval-n-zero", "eval --task {task} --policy expert --n 0", names="--n", usage=True),
    Bad("eval-n-text", "eval --task {task} --policy expert --n many", names="--n", usage=True),
    Bad(
        "eval-temperature-nan",
        "eval --task {task} --policy expert --temperature nan",
        names="--temperature",
        usage=True,
    ),
    Bad(
        "eval-temperature-inf",
        "eval --task {task} --policy expert --temperature inf",
        names="--temperature",
        usage=True,
    ),
    Bad(
        "eval-temperature-negative",
        "eval --task {task} --policy expert --temperature -1",
        names="--temperature",
        usage=True,
    ),
    Bad(
        "eval-threshold-nan",
        "eval --task {task} --policy expert --success-threshold nan",
        names="--success-threshold",
        usage=True,
    ),
    Bad(
        "eval-samples-zero",
        "eval --task {task} --policy expert --samples 0",
        names="--samples",
        usage=True,
    ),
    Bad(
        "eval-max-turns-zero", "eval --task {task} --policy expert --max-turns 0", names="max_turns"
    ),
    Bad("eval-no-policy-no-backend", "eval --task {task}", names="--policy"),
    Bad(
        "eval-policy-and-backend",
        "eval --task {task} --policy expert --backend local",
        names="--policy",
    ),
    Bad("eval-policy-bogus", "eval --task {task} --policy gpt4", names="gpt4"),
    Bad("eval-policy-openai-empty", "eval --task {task} --policy openai:", names="openai:"),
    Bad(
        "eval-policy-litellm-no-provider",
        "eval --task {task} --policy litellm:gpt",
        names="litellm:gpt",
    ),
    Bad(
        "eval-header-no-equals",
        "eval --task {task} --policy openai:m --header X-Token",
        names="X-Token",
    ),
    Bad(
        "eval-api-key-env-unset",
        "eval --task {task} --policy openai:m --api-key-env AGENTRFT_NO_SUCH_VAR",
        names="AGENTRFT_NO_SUCH_VAR",
    ),
    Bad(
        "eval-all-rows-bad",
        "eval --task {task} --policy expert --data {f}",
        b'{"prompt": "x"}\n{"prompt": "y"}\n',
        name="rows.jsonl",
        names="parse",
    ),
    Bad(
        "eval-policy-unreachable",
        "eval --task {task} --policy http://127.0.0.1:9/v1 --model m --n 1",
        names="127.0.0.1:9",
        slow=True,
    ),
    Bad(
        "eval-policy-password-unreachable",
        "eval --task {task} --policy http://u:" + SECRET + "@127.0.0.1:9/v1 --model m --n 1",
        names="127.0.0.1:9",
        slow=True,
    ),
    Bad(
        "eval-data-missing",
        "eval --task {task} --policy expert --data {dir}/nope.jsonl",
        names="nope.jsonl",
    ),
    Bad(
        "eval-config-lr-inf",
        "eval --task {task} --policy expert -c {f}",
        "learning_rate: .inf\n",
        names="learning_rate",
    ),
    Bad(
        "play-temperature-nan",
        "play --task {task} --temperature nan",
        names="--temperature",
        usage=True,
    ),
    Bad(
        "play-max-tokens-zero",
        "play --task {task} --max-tokens 0",
        names="--max-tokens",
        usage=True,
    ),
    Bad(
        "play-max-turns-negative",
        "play --task {task} --max-turns -1",
        names="--max-turns",
        usage=True,
    ),
    Bad("play-row-out-of-range", "play --task {task} --row 99999", names="--row"),
    Bad("play-row-negative", "play --task {task} --row -1", names="--row", usage=True),
    Bad("play-data-bad", "play --task {task} --data {f}", b"\xff\xfe\x00", name="in.jsonl"),
    Bad("replay-missing", "replay {dir}/nope.jsonl", names="nope.jsonl"),
    Bad("replay-binary", "replay {f}", binary(), name="t.jsonl"),
    Bad("replay-empty", "replay {f}", b"", name="t.jsonl"),
    Bad("replay-not-trajectories", "replay {f}", b'{"a": 1}\n', name="t.jsonl"),
    Bad("replay-deep", "replay {f}", deep().encode() + b"\n", name="t.jsonl"),
    Bad(
        "replay-torn-line-named",
        "replay {f}",
        TRAJECTORY_LINE + b'{"id": "t2", "task": "find_',
        name="t.jsonl",
        names="t.jsonl: line 2 is not a trajectory (JSONDecodeError",
    ),
    Bad(
        "replay-binary-line-named",
        "replay {f}",
        TRAJECTORY_LINE + TRAJECTORY_LINE + b"\xff\xfe\n",
        name="t.jsonl",
        names="t.jsonl: line 3 is not UTF-8 text",
    ),
    Bad("config-format-bogus", "config show --format xml", names="xml", usage=True),
    Bad("train-resume-missing", "train --task {task} --resume {dir}/nope --dry-run", names="nope"),
    Bad(
        "train-config-lr-nan",
        "train --task {task} --dry-run -c {f}",
        "learning_rate: .nan\n",
        names="learning_rate",
    ),
    Bad(
        "train-dry-run-absurd-batch",
        "train --task {task} --dry-run --set global_batch_size=10000000000000000000000",
        names="global_batch_size",
    ),
    Bad("unknown-command", "frobnicate", names="frobnicate", usage=True),
    # commands the sagemaker backend adds (none of these calls AWS)
    *(
        Bad(
            f"cost-prices-{kind}",
            "cost estimate --launch-profile --steps 1 --prices {f}",
            text,
            name="p.yaml",
            real=True,
        )
        for kind, text in [
            ("alias-bomb", billion_laughs()),
            ("deep", deep()),
            ("long-int", f"prefill: {LONG_INT}\n"),
            ("duplicate", "prefill: 1\nprefill: 2\n"),
            ("inf", "prefill: .inf\n"),
            ("binary", binary()),
            ("list", "- 1\n"),
        ]
    ),
    Bad(
        "cost-prices-missing",
        "cost estimate --launch-profile --prices {dir}/nope.yaml",
        names="nope.yaml",
        real=True,
    ),
    Bad(
        "cost-prefill-nan",
        "cost estimate --prefill nan --sampled 1 --steps 1",
        names="--prefill",
        usage=True,
        real=True,
    ),
    Bad(
        "cost-steps-zero", "cost estimate --launch-profile --steps 0", names="max_steps", real=True
    ),
    Bad(
        "cost-trajectories-binary",
        "cost estimate --steps 1 --trajectories {f}",
        binary(),
        name="t.jsonl",
        real=True,
    ),
    Bad(
        "cost-trajectories-bad-line",
        "cost estimate --steps 1 --trajectories {f}",
        TRAJECTORY_LINE + b"not json\n",
        name="t.jsonl",
        names="t.jsonl: line 2 is not a trajectory",
        real=True,
    ),
    Bad("runtime-serve-unknown-task", "runtime serve --task nope", names="nope", real=True),
    Bad(
        "runtime-serve-bad-port",
        "runtime serve --task {task} --port -1",
        names="--port",
        usage=True,
        real=True,
    ),
    Bad("deploy-unknown-task", "deploy --task nope --dry-run", names="nope", real=True),
    Bad(
        "deploy-bad-name",
        "deploy --task {task} --dry-run --name 'bad name!'",
        names="bad name!",
        real=True,
    ),
    Bad("unknown-option", "tasks --frob", names="--frob", usage=True),
]


# --- classification ------------------------------------------------------------------------

#: Output length past which an error is taken to echo its input back.
ECHO_LIMIT = 2000


def classify(case: Bad, code: int, stdout: str, stderr: str) -> str:
    """clear | silent | traceback | bug | echo | multi-line | unnamed | crashed."""
    out = stdout + stderr
    if "Traceback (most recent call last)" in out:
        return "traceback"
    if code == 0:
        return "silent"
    if code < 0 or code >= 128 or code == 124:
        return "crashed"
    if "This is a bug" in out or "this is a bug" in out:
        return "bug"
    if SECRET in out or len(out) > ECHO_LIMIT:
        return "echo"
    if case.usage:
        return "clear" if (case.names or "") in out else "unnamed"
    errors = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in errors if not _is_warning(line)]
    if len(errors) != 1 or not errors[0].startswith("error: "):
        return "multi-line"
    return "clear" if _expected_name(case) in errors[0] else "unnamed"


def _is_warning(line: str) -> bool:
    return line.startswith("warning:") or "has no 'prompt' column; using its first" in line


def _expected_name(case: Bad) -> str:
    return case.names if case.names is not None else case.name


def materialise(case: Bad, where: Path, task: str) -> list[str]:
    """The argv of `case`, with its file written under `where`."""
    path = where / case.name
    data = case.content()
    if data is not None:
        path.write_bytes(data)
    elif case.id == "data-is-dir":
        path.mkdir()
    text = case.argv.replace("{f}", str(path)).replace("{dir}", str(where))
    return [a.replace("{task}", task) for a in shlex.split(text)]


# --- in-process (CliRunner) ----------------------------------------------------------------

FAST = [c for c in CASES if not (c.slow or c.real)]


@pytest.mark.parametrize("case", FAST, ids=[c.id for c in FAST])
def test_bad_input_gives_one_clear_line(case: Bad, tmp_path: Path, builtin_plugins: Any) -> None:
    from typer.testing import CliRunner

    from agentrft.cli.app import create_app

    argv = materialise(case, tmp_path, "find_number")
    # The app as installed: the built-in backends' flags and config sections are there.
    result = CliRunner().invoke(create_app(), argv, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    verdict = classify(case, result.exit_code, result.stdout, result.stderr)
    assert verdict == "clear", (verdict, result.exit_code, result.output[:2000])


def test_the_table_covers_every_kind_of_input() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    for prefix in ("config-", "set-", "task-", "data-", "eval-", "play-", "replay-", "cost-"):
        assert sum(i.startswith(prefix) for i in ids) >= 5 or prefix in ("task-",), prefix
    assert len(CASES) >= 100


# --- the loader's bounds keep legitimate YAML working ------------------------------------


def test_aliases_within_bounds_and_merge_keys_still_load() -> None:
    from agentrft.config import load_yaml

    data = load_yaml("base: &b {group_size: 4}\nx: *b\ny:\n  <<: *b\n  group_size: 8\n")
    assert data == {"base": {"group_size": 4}, "x": {"group_size": 4}, "y": {"group_size": 8}}
    assert load_yaml("seed: 18446744073709551615\n") == {"seed": 2**64 - 1}


def test_the_alias_bomb_is_refused_before_it_expands() -> None:
    import time

    from agentrft.config import ConfigLimitError, load_yaml

    t0 = time.perf_counter()
    with pytest.raises(ConfigLimitError, match="alias bomb"):
        load_yaml(billion_laughs().decode())
    assert time.perf_counter() - t0 < 5  # was 32 s and 5.5 GB before the bound
    # Just past the bound, without an alias, says what it is.
    with pytest.raises(ConfigLimitError, match="holds more than 10,000 values"):
        load_yaml("[" + ",".join(["1"] * 10_001) + "]")


def test_config_errors_are_one_line_per_key(tmp_path: Path) -> None:
    from agentrft.config import ConfigError
    from agentrft.config_model import load_config

    path = tmp_path / "c.yaml"
    path.write_text("eval:\n  temperatures: [" + ", ".join(["9"] * 50) + "]\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 6 and lines[-1].endswith("... and 45 more errors")
    assert all("eval.temperatures" in line for line in lines[:5])


def test_every_float_hyperparameter_refuses_inf_and_nan() -> None:
    from agentrft.config import ConfigError
    from agentrft.config_model import config_model, validate_config

    def float_fields(model: type, prefix: str = "") -> list[str]:
        out = []
        for name, field in model.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                out += float_fields(ann, f"{prefix}{name}.")
            elif "float" in str(ann):
                out.append(prefix + name)
        return out

    names = float_fields(config_model())  # with the installed backends' sections
    assert {"learning_rate", "local.kl_beta", "limits.timeout_s", "eval.temperatures"} <= set(names)
    for name in names:
        for bad in (math.inf, -math.inf, math.nan):
            value: Any = [bad] if name == "eval.temperatures" else bad
            data: dict[str, Any] = {}
            node = data
            *parents, leaf = name.split(".")
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
            with pytest.raises(ConfigError, match=leaf):
                validate_config(data)


def test_a_table_without_a_prompt_column_uses_its_first_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agentrft.datasets import read_prompts

    csv_path = tmp_path / "rows.csv"
    csv_path.write_text("question,answer\nfirst,1\nsecond,2\n")
    pq_path = tmp_path / "rows.parquet"
    pq_path.write_bytes(parquet({"text": ["a", "b"], "prompt_id": ["1", "2"]})())
    with caplog.at_level(logging.WARNING, logger="agentrft.datasets"):
        assert read_prompts(csv_path) == ["first", "second"]
        assert read_prompts(pq_path) == ["a", "b"]
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert "rows.csv has no 'prompt' column; using its first column 'question'" in warned[0]
    assert "rows.parquet has no 'prompt' column; using its first column 'text'" in warned[1]
    caplog.clear()
    (tmp_path / "ok.csv").write_text("prompt\nx\n")
    read_prompts(tmp_path / "ok.csv")
    assert caplog.records == []


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (billion_laughs(), "alias bomb"),
        (deep().encode(), "nests deeper than 32"),
        (f"prefill: {LONG_INT}\n".encode(), "an integer of 5000 characters"),
        (b"prefill: 1\nprefill: 2\n", "duplicate key 'prefill'"),
        (b"prefill: .inf\n", "must be finite"),
        (binary(), "not UTF-8"),
    ],
)
def test_a_price_file_gets_the_config_loaders_bounds(
    tmp_path: Path, text: bytes, match: str
) -> None:
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError
    from agentrft.backends.sagemaker.jobs.cost import load_prices

    path = tmp_path / "prices.yaml"
    path.write_bytes(text)
    with pytest.raises(SageMakerError, match=match) as info:
        load_prices(path)
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


# --- eval that plays nothing exits non-zero -------------------------------------------------


def test_eval_against_a_policy_that_never_answers_exits_1(
    tmp_path: Path, tiny_plugins: Any
) -> None:
    from typer.testing import CliRunner

    from agentrft.cli.app import create_app
    from agentrft.testing import FakeOpenAIServer, http_error

    report = tmp_path / "report.json"
    with FakeOpenAIServer(lambda m, t: http_error(401, "bad key")) as server:
        url = server.base_url
        result = CliRunner().invoke(
            create_app(plugins=False),
            [
                "eval",
                "--task",
                "find_number",
                "--policy",
                url,
                "--model",
                "m",
                "--n",
                "2",
                "--report",
                str(report),
            ],
            env={"COLUMNS": "200", "NO_COLOR": "1"},
        )
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "none of the 2 episodes reached the policy (http_error)" in line
    assert "HTTP 401" in line and url in line
    assert json.loads(report.read_text())["reports"]  # the report still says what happened


def test_eval_with_some_good_rows_still_exits_0(tmp_path: Path, tiny_plugins: Any) -> None:
    from typer.testing import CliRunner

    from agentrft.cli.app import create_app

    rows = tmp_path / "rows.jsonl"
    rows.write_text(NUMBER_ROW + "\n" + json.dumps({"prompt": "not a row"}) + "\n")
    result = CliRunner().invoke(
        create_app(plugins=False),
        ["eval", "--task", "find_number", "--policy", "expert", "--data", str(rows)],
        env={"COLUMNS": "200", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    assert "1 row(s) did not parse" in result.stderr


# --- the runtime app: malformed bodies still get the lowest reward --------------------------


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Any:
    """(client, loopback job runtime) for the runtime app on `find_number`, fake credentials."""
    from starlette.testclient import TestClient

    from agentrft.backends.sagemaker.runtime import auth
    from agentrft.backends.sagemaker.runtime.app import build_app
    from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter
    from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime
    from agentrft.policies.scripted import ScriptedPolicy
    from agentrft.testing import FindNumberTask, find_number_expert

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "RFT_RUNTIME_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEBADINPUT1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key-for-tests")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auth.reset_shared_session()
    reporter = JobRuntimeReporter(
        client_config={"retries": {"mode": "standard", "max_attempts": 1}}
    )
    app = build_app(FindNumberTask(), reporter=reporter)
    with LoopbackJobRuntime(ScriptedPolicy(find_number_expert)) as jr, TestClient(app) as client:
        yield client, jr
    auth.reset_shared_session()


def _body(jr: Any, **extra: Any) -> dict[str, Any]:
    meta = {
        "jobArn": "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/bad",
        "rolloutId": "r1",
    }
    return {
        "prompt": json.loads(NUMBER_ROW)["prompt"],
        "metadata": {**meta, "endpoint": jr.endpoint},
        **extra,
    }


RUNTIME_BODIES: dict[str, Callable[[Any], bytes]] = {
    "100k-deep array": lambda jr: deep().encode(),
    "100k-deep object": lambda jr: deep(100_000, '{"a":', "}").encode(),
    "100k-deep inside a good payload": lambda jr: (
        json.dumps(_body(jr))[:-1].encode() + b', "x": ' + deep().encode() + b"}"
    ),
    "500-deep inside a good payload": lambda jr: (
        json.dumps(_body(jr))[:-1].encode() + b', "x": ' + deep(500).encode() + b"}"
    ),
    "5000-digit integer": lambda jr: (
        json.dumps(_body(jr))[:-1].encode() + f', "x": {LONG_INT}}}'.encode()
    ),
    "5000-digit rolloutId": lambda jr: json.dumps(_body(jr)).replace('"r1"', LONG_INT).encode(),
    "binary": lambda jr: binary(),
    "empty": lambda jr: b"",
    "a JSON string": lambda jr: b'"hello"',
}


@pytest.mark.parametrize("name", list(RUNTIME_BODIES))
def test_a_malformed_body_gets_200_and_the_lowest_reward(
    name: str, runtime: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client, jr = runtime
    with caplog.at_level(logging.INFO):
        resp = client.post("/invocations", content=RUNTIME_BODIES[name](jr))
    assert resp.status_code == 200, resp.text[:300]
    assert resp.headers["content-type"].startswith("application/json")
    assert resp.json() == {"reward": -1.0}
    assert jr.requests == []  # nothing played, nothing reported
    ours = [r.getMessage() for r in caplog.records if r.name == "agentrft.runtime"]
    assert len(ours) == 1 and len(ours[0]) < 600, ours


def test_a_good_body_still_plays(runtime: Any) -> None:
    client, jr = runtime
    assert client.post("/invocations", json=_body(jr)).json()["reward"] > 0
    assert [r.path for r in jr.requests][-2:] == ["/complete-rollout", "/update-reward"]


# --- the real console script, as a tally ---------------------------------------------------


def _run_real(case: Bad, where: Path, src: str | None, timeout_s: float) -> tuple[str, float]:
    import os
    import resource
    import subprocess
    import time

    argv = materialise(case, where, "wordle")
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    if src:
        env["PYTHONPATH"] = src
    env.pop("AGENTRFT_DEBUG", None)

    def limit_memory() -> None:  # the alias bomb reached 5.5 GB before the loader was bounded
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    code = "from agentrft.cli.app import main; main()"
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, *argv],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            env=env,
            cwd=where,
            preexec_fn=limit_memory,
        )
    except subprocess.TimeoutExpired:
        return "crashed", time.perf_counter() - t0
    verdict = classify(case, proc.returncode, proc.stdout, proc.stderr)
    if "MemoryError" in proc.stderr and verdict == "traceback":
        verdict = "traceback"
    return verdict, time.perf_counter() - t0


def _tally(src: str | None, only: str | None, timeout_s: float) -> int:
    import collections
    import tempfile

    counts: collections.Counter[str] = collections.Counter()
    for case in CASES:
        if only and only not in case.id:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            verdict, wall = _run_real(case, Path(tmp), src, timeout_s)
        counts[verdict] += 1
        mark = "  " if verdict == "clear" else "!!"
        print(f"{mark} {verdict:<10} {wall:6.2f}s  {case.id}", flush=True)
    total = sum(counts.values())
    print(f"\n{total} inputs: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))
    return 0 if counts["clear"] == total else 1


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", help="put this src/ first on PYTHONPATH")
    parser.add_argument("--only", help="run the cases whose id contains this")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    sys.exit(_tally(args.src, args.only, args.timeout))


def test_every_trajectory_reader_names_the_file_and_line(tmp_path: Path) -> None:
    from agentrft.backends.sagemaker.jobs.aws import SageMakerError
    from agentrft.backends.sagemaker.jobs.cost import profile_from_files
    from agentrft.trajectory import TrajectoryFileError, read_trajectories

    path = tmp_path / "t.jsonl"
    for bad, why in [
        (b"{oops\n", r"line 3 is not a trajectory \(JSONDecodeError: "),
        (b'{"id": "\xe2\x82"}\n', r"line 3 is not UTF-8 text \(invalid continuation byte"),
        (b'{"id": 5}\n', r"line 3 is not a trajectory \(ValidationError: "),
        (deep().encode() + b"\n", r"line 3 is not a trajectory \(RecursionError: "),
    ]:
        path.write_bytes(TRAJECTORY_LINE + b"\n" + bad)  # a blank line counts as a line
        with pytest.raises(TrajectoryFileError, match=rf"t\.jsonl: {why}.*repair that line"):
            list(read_trajectories(path))
        with pytest.raises(SageMakerError, match=rf"t\.jsonl: {why}") as info:
            profile_from_files([path])
        assert "\n" not in str(info.value) and len(str(info.value)) < 400
