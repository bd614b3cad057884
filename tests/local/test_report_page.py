"""The run's page (`agentrft report`) of a real CPU run, rendered by headless Chromium.

A Wordle run of the tiny model (3 GRPO steps after a 2-step warm-up, before/after
evaluations) writes report.html at its end; Chromium runs the page's script and dumps the
DOM, which the tests read: the plots have one point per step, the table is eval/*.json's,
a failure-kind filter shows exactly those episodes, and an episode's hidden answer shows
only after its last turn. Chromium is Debian's `chromium` (.ci/run installs it); without it
the browser tests skip and say so.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from agentrft.cli.app import create_app
from agentrft.trajectory import read_trajectories

from .conftest import TORCH_THREADS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: CI installs chromium (scripts/chromium.sh) and sets this: a missing browser is a failure.
REQUIRED = os.environ.get("AGENTRFT_REQUIRE_CHROMIUM") == "1"
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not REQUIRED,
    reason="Debian's chromium is not installed (bash scripts/chromium.sh)",
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = tmp_path_factory.mktemp("report") / "runs"
    settings = {
        "local.tiny_model": "156k",
        "local.cpu_threads": TORCH_THREADS,
        "local.run_dir": str(runs),
        "local.sft_warmup_steps": 2,
        "val_every": 2,
        "eval.n": 8,
    }
    args = ["train", "--task", "wordle", "--backend", "local", "--max-steps", "3"]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    result = CliRunner().invoke(create_app(), args, env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    (path,) = runs.iterdir()
    assert f"report: {path / 'report.html'}" in result.output  # written at the end, and said
    return path


def render(page: Path, fragment: str = "") -> BeautifulSoup:
    """The page's DOM after its script ran, as Chromium leaves it."""
    assert CHROMIUM is not None, "AGENTRFT_REQUIRE_CHROMIUM=1 but chromium is not installed"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
         f"{page.resolve().as_uri()}{fragment}"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return BeautifulSoup(done.stdout, "html.parser")


def count(path: Path) -> int:
    return len(list(read_trajectories(path)))


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_the_run_writes_its_page_and_plots(run_dir: Path) -> None:
    page = run_dir / "report.html"
    assert page.is_file() and page.stat().st_size < 5_000_000
    for name in ("reward", "solve_rate", "tokens", "update", "health", "failures"):
        assert (run_dir / "plots" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    health = json.loads((run_dir / "health.json").read_text())
    assert all({"name", "start", "last", "cleared", "first"} <= set(c) for c in health)


@needs_chromium
def test_plots_have_one_point_per_step_and_the_table_is_the_evals(run_dir: Path) -> None:
    dom = render(run_dir / "report.html")
    steps = metrics(run_dir)
    assert len(steps) == 3
    for plot, key in [("reward", "reward_mean"), ("solve_rate", "solve_rate"),
                      ("tokens", "completion_tokens"), ("update", "loss"),
                      ("health", "clip_high_frac")]:  # fmt: skip
        figure = dom.find(id=f"plot-{plot}")
        series = figure.find(id=f"series-{key}")
        assert series is not None, f"{plot}: no {key} curve"
        assert len(series.find_all("use")) == len(steps)  # one marker per step
        assert json.loads(figure["data-points"])[key] == len(steps)
    # A failure kind is logged only on steps that had it; its curve is 0 on the others.
    failures = json.loads(dom.find(id="plot-failures")["data-points"])
    assert failures and set(failures.values()) == {len(steps)}
    validated = [s for s in steps if "val_reward_mean" in s]  # every 2 steps: step 2
    assert len(dom.find(id="series-val_reward_mean").find_all("use")) == len(validated) == 1

    table = dom.find("table", class_="eval")
    labels = [th["data-label"] for th in table.find_all("th", attrs={"data-label": True})]
    assert labels == ["before", "after warm-up", "after"]
    for column, label in enumerate(["before", "after_sft", "after"]):
        (saved,) = json.loads((run_dir / "eval" / f"{label}.json").read_text())
        cells = {tr["data-row"]: tr.find_all("td")[column].get_text()
                 for tr in table.find_all("tr", attrs={"data-row": True})}  # fmt: skip
        p, n = saved["solve_rate"], saved["episodes"]
        assert cells["episodes"] == str(n)
        assert cells["solve rate"] == f"{p:.1%} ± {math.sqrt(p * (1 - p) / n):.1%}"
        assert cells["reward"] == f"{saved['mean_reward']:.3f} ± {saved['reward_se']:.3f}"


@needs_chromium
def test_a_failure_kind_filter_shows_exactly_those_episodes(run_dir: Path) -> None:
    after = list(read_trajectories(run_dir / "eval" / "after_trajectories.jsonl"))
    kinds = Counter(k for t in after for k in {f.kind for f in t.failures})
    # The rarest kind some but not all episodes have: a filter that must pick.
    kind = min((k for k, n in kinds.items() if n < len(after)), key=kinds.__getitem__,
               default=next(iter(kinds)))  # fmt: skip
    expected = {n for n, t in enumerate(after) if kind in {f.kind for f in t.failures}}
    dom = render(run_dir / "report.html", f"#split=after&failure={kind}")
    rows = dom.find(id="episode-list").find_all("tr")
    assert int(dom.find(id="match-count").get_text()) == len(rows) == len(expected)
    shown = {int(r.find_all("td")[0].get_text()) for r in rows}  # numbered across the page
    # The page numbers episodes across its splits: train, before, after warm-up, after.
    first = sum(count(run_dir / f) for f in ("trajectories.jsonl", "eval/before_trajectories.jsonl",
                                             "eval/after_sft_trajectories.jsonl"))  # fmt: skip
    assert {i - first for i in shown} == expected
    assert all(kind in r["data-failures"].split() for r in rows)


@needs_chromium
def test_an_episodes_answer_shows_only_after_its_last_turn(run_dir: Path) -> None:
    before = list(read_trajectories(run_dir / "eval" / "before_trajectories.jsonl"))
    train = count(run_dir / "trajectories.jsonl")
    for n in (0, 5):
        answer = json.loads(before[n].prompt)["answer"]
        dom = render(run_dir / "report.html", f"#episode={train + n}")
        episode = dom.find(id="episode-detail").find(class_="episode")
        messages = episode.find(class_="turns").find_all(class_="msg")
        assert messages, "the episode's turns are shown"
        # Every turn but the last (the game may name the answer as it ends).
        for m in messages[:-1]:
            assert answer not in m.get_text().lower()
        after = episode.find(class_="after-episode")
        assert answer in after.get_text().lower()
        assert episode.find_all(recursive=False)[-1] is after  # last, below the turns


def test_the_episodes_are_mlflow_traces_that_never_hold_the_answer(run_dir: Path) -> None:
    """The run's MLflow store holds a trace per evaluation episode and 2 per step; no span
    input holds an episode's answer or its row (the policy never saw them either)."""
    from mlflow.tracking import MlflowClient

    info = json.loads((run_dir / "run.json").read_text())
    client = MlflowClient(info["mlflow_tracking_uri"])
    experiment = client.get_run(info["mlflow_run_id"]).info.experiment_id
    traces = client.search_traces(locations=[experiment])
    splits = Counter(t.info.tags["agentrft.split"] for t in traces)
    evals = {name: count(run_dir / "eval" / f"{label}_trajectories.jsonl")
             for name, label in [("before", "before"), ("after SFT", "after_sft"), ("after", "after")]}  # fmt: skip
    assert splits == {**evals, "train": 2 * len(metrics(run_dir))}
    rows = {t.id: t for t in read_trajectories(run_dir / "eval" / "before_trajectories.jsonl")}
    checked = 0
    for trace in traces:
        if trace.info.tags["agentrft.split"] != "before":
            continue
        episode = rows[trace.info.tags["agentrft.episode"]]
        inputs = json.dumps([s.inputs for s in trace.data.spans]).lower()
        assert episode.prompt.lower() not in inputs  # the row, which holds the answer
        answer = json.loads(episode.prompt)["answer"]
        # An answer such as "least" is in the rules' text ("at least 1"), which the policy
        # reads too: only an answer the episode's messages never hold must be absent.
        if answer not in " ".join(m.content or "" for m in episode.messages).lower():
            assert answer not in inputs
            checked += 1
    assert checked >= len(rows) // 2


def test_report_of_a_folder_with_nothing_to_show_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(create_app(), ["report", str(tmp_path)])
    assert result.exit_code == 1
    assert "holds no run or evaluation files" in result.output
    assert not (tmp_path / "report.html").exists()


def test_eval_report_html_writes_the_evaluations_page(tmp_path: Path) -> None:
    page = tmp_path / "wordle-expert.html"
    args = ["eval", "--task", "wordle", "--policy", "expert", "--n", "4"]
    result = CliRunner().invoke(create_app(), [*args, "--report-html", str(page)])
    assert result.exit_code == 0, result.output
    assert f"report page: {page}" in result.output
    dom = BeautifulSoup(page.read_text(), "html.parser")
    table = dom.find("table", class_="eval")
    assert [th["data-label"] for th in table.find_all("th", attrs={"data-label": True})] == ["eval"]
    episodes = json.loads(dom.find(id="episodes").get_text())
    assert len(episodes) == 4 and {e["split"] for e in episodes} == {"eval"}
    assert all(e["solved"] for e in episodes)  # the expert solves Wordle

    missing = tmp_path / "nowhere" / "page.html"
    refused = CliRunner().invoke(create_app(), [*args, "--report-html", str(missing)])
    assert refused.exit_code == 1 and "does not exist" in refused.output
    assert "solve rate" not in refused.output  # refused before a game was played


def test_without_the_report_extra_the_page_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "matplotlib" else real(name, *a),
    )
    page = tmp_path / "page.html"
    args = [
        "eval",
        "--task",
        "wordle",
        "--policy",
        "expert",
        "--n",
        "2",
        "--report-html",
        str(page),
    ]
    result = CliRunner().invoke(create_app(), args)
    assert result.exit_code == 1
    assert "needs matplotlib" in result.output and "agentrft[report]" in result.output
    assert "solve rate" not in result.output and not page.exists()
