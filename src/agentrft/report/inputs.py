"""What a report reads: a local run directory, or the folder `eval --output-dir` wrote.

A run directory holds `run.json`, `metrics.jsonl` (one line per GRPO step), `health.json`
(the health conditions), `trajectories.jsonl` (every training episode) and `eval/` (each
evaluation's reports `LABEL.json` and episodes `LABEL_trajectories.jsonl`). An evaluation
folder holds `eval.json` and `eval_trajectories.jsonl` only. Whatever is missing is left
out of the page; a folder with none of these is an error naming the folder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentrft.trajectory import Trajectory, TrajectoryFileError, read_trajectories

__all__ = ["EVAL_LABELS", "ReportError", "ReportInputs", "Split", "read_inputs"]

#: The evaluations a training run writes, in the order they happen, and how the page names
#: them (an evaluation folder's `eval` and any other label follow).
EVAL_LABELS = {"before": "before", "after_sft": "after warm-up", "after": "after", "eval": "eval"}


class ReportError(ValueError):
    """The folder is not one a report can be made of (the message names it and why)."""


@dataclass
class Split:
    """One set of episodes: the training rollouts, or one evaluation's."""

    #: `train`, or an evaluation's label as the page names it (`before`, `after`, ...).
    name: str
    trajectories: list[Trajectory]


@dataclass
class ReportInputs:
    """Everything the page is made of, read from one folder."""

    path: Path
    #: run.json (task, model, status, steps); empty for an evaluation folder.
    info: dict[str, Any] = field(default_factory=dict)
    #: metrics.jsonl: one dict per GRPO step, in step order.
    steps: list[dict[str, Any]] = field(default_factory=list)
    #: (the page's label, the EvalReports as JSON) per evaluation, in run order.
    evals: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    splits: list[Split] = field(default_factory=list)
    #: health.json: each condition's name, first and last step, clearing step, first text.
    health: list[dict[str, Any]] = field(default_factory=list)
    #: What the page is of, after the task (default: the folder's name).
    name: str = ""

    @property
    def title(self) -> str:
        task = self.info.get("task") or next(
            (t.task for s in self.splits for t in s.trajectories), "episodes"
        )
        return f"{task} · {self.name or self.path.name}"


def read_inputs(path: str | Path) -> ReportInputs:
    """Read the run directory or evaluation folder at `path`."""
    root = Path(path)
    if not root.is_dir():
        raise ReportError(f"{root}: no such directory (give a run directory or eval --output-dir)")
    inputs = ReportInputs(path=root)
    if (root / "run.json").is_file():
        inputs.info = _json(root / "run.json")
    if (root / "metrics.jsonl").is_file():
        inputs.steps = _jsonl(root / "metrics.jsonl")
    if (root / "health.json").is_file():
        inputs.health = list(_json(root / "health.json"))
    if (root / "trajectories.jsonl").is_file():
        inputs.splits.append(Split("train", _episodes(root / "trajectories.jsonl")))
    eval_dir = root / "eval" if (root / "eval").is_dir() else root
    for label in _eval_labels(eval_dir):
        name = EVAL_LABELS.get(label, label)
        inputs.evals.append((name, list(_json(eval_dir / f"{label}.json"))))
        episodes = eval_dir / f"{label}_trajectories.jsonl"
        if episodes.is_file():
            inputs.splits.append(Split(name, _episodes(episodes)))
    if not (inputs.steps or inputs.evals or inputs.splits):
        raise ReportError(
            f"{root} holds no run or evaluation files (metrics.jsonl, trajectories.jsonl, "
            "eval/*.json); give a run directory of `agentrft train --backend local` or the "
            "folder of `agentrft eval --output-dir`"
        )
    return inputs


def _eval_labels(folder: Path) -> list[str]:
    """The evaluation labels in `folder` (LABEL.json beside LABEL_trajectories.jsonl, or a
    run's known labels), in run order."""
    found = []
    for p in sorted(folder.glob("*.json")):
        label = p.stem
        if label in EVAL_LABELS or (folder / f"{label}_trajectories.jsonl").is_file():
            found.append(label)
    order = list(EVAL_LABELS)
    return sorted(found, key=lambda s: (order.index(s) if s in order else len(order), s))


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: not readable JSON ({exc})") from None


def _jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            if n == len(lines):
                break  # a torn last line (a killed run): the steps before it stand
            raise ReportError(f"{path}:{n}: not a JSON line") from None
    return out


def _episodes(path: Path) -> list[Trajectory]:
    try:
        return list(read_trajectories(path))
    except TrajectoryFileError as exc:
        raise ReportError(str(exc)) from None
