"""The report page: inputs → one self-contained HTML file (Jinja2 template, inline SVG).

`write_report(folder)` writes `folder/report.html` and the plots as `folder/plots/*.png`;
it reads nothing but `folder` and imports the installed tasks only to know their hidden
values (shown after each episode).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from importlib import resources
from pathlib import Path
from typing import Any

from agentrft.report.episodes import episode_rows
from agentrft.report.inputs import ReportError, ReportInputs, read_inputs
from agentrft.report.plots import draw_plots

__all__ = ["check_available", "eval_table", "render_page", "write_page", "write_report"]


def write_report(folder: str | Path, out: str | Path | None = None) -> Path:
    """Write the report of the run directory or evaluation folder `folder` (to `out`, else
    `folder/report.html`, its plots as PNG in `plots/` beside it); returns the page's path."""
    inputs = read_inputs(folder)
    return write_page(inputs, Path(out) if out is not None else inputs.path / "report.html")


def write_page(inputs: ReportInputs, target: Path) -> Path:
    """Render `inputs` to `target` (the plots' PNGs into `plots/` beside it)."""
    page = render_page(inputs, png_dir=target.parent / "plots")
    # Written whole, then renamed: a page half written (a full disk) is never left behind.
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(target)
    return target


def render_page(inputs: ReportInputs, png_dir: Path | None = None) -> str:
    """The page as a string (the plots' PNGs into `png_dir` when given)."""
    check_available()
    import jinja2

    from agentrft.plugins import get_plugins

    plugins = get_plugins()
    episodes = episode_rows(inputs.splits, plugins.task)
    for e in episodes:
        # Pairs the same row across splits without showing the row (it may hold the answer).
        e["key"] = e.pop("instance") or hashlib.sha1(e["after"]["row"].encode()).hexdigest()[:12]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(
        resources.files("agentrft.report").joinpath("page.html.j2").read_text(encoding="utf-8")
    )
    return template.render(
        title=inputs.title,
        info=inputs.info,
        made=time.strftime("%Y-%m-%d %H:%M:%S"),
        plots=draw_plots(inputs.steps, png_dir) if inputs.steps else [],
        tables=eval_table(inputs.evals),
        health=inputs.health,
        steps=len(inputs.steps),
        splits=[(s.name, len(s.trajectories)) for s in inputs.splits],
        episodes_json=_script_json(episodes),
    )


def check_available() -> None:
    """Raise `ReportError` naming the fix when the page's libraries are not installed."""
    import importlib.util

    for module in ("jinja2", "matplotlib"):
        if importlib.util.find_spec(module) is None:
            raise ReportError(
                f"the report needs {module}, which is not installed: pip install "
                "'agentrft[report]' (the local extra and scripts/setup.sh include it)"
            )


def eval_table(evals: list[tuple[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Per task: the columns (evaluation label, temperature) and the rows (episodes, solve
    rate ± its standard error, pass@k, reward ± its standard error, turns, failures), read
    from the EvalReports the evaluations saved."""
    by_task: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for label, reports in evals:
        for r in reports:
            by_task.setdefault(r.get("task", ""), []).append((label, r))
    tables = []
    for task, cols in by_task.items():
        ks = sorted({int(k) for _, r in cols for k in (r.get("pass_at_k") or {})})
        rows: list[tuple[str, list[str]]] = [
            ("episodes", [str(r.get("episodes", "")) for _, r in cols]),
            ("solve rate", [_rate_se(r) for _, r in cols]),
            *((f"pass@{k}", [_pct((r.get("pass_at_k") or {}).get(str(k))) for _, r in cols])
              for k in ks),
            ("reward", [f"{r['mean_reward']:.3f} ± {r.get('reward_se', 0.0):.3f}" for _, r in cols]),
            ("turns", [f"{r.get('mean_turns', 0.0):.2f}" for _, r in cols]),
            ("failures", [_failures(r) for _, r in cols]),
        ]  # fmt: skip
        tables.append(
            {
                "task": task,
                "columns": [(label, f"T={r.get('temperature', 1.0):g}") for label, r in cols],
                "rows": rows,
            }
        )
    return tables


def _rate_se(r: dict[str, Any]) -> str:
    p, n = float(r.get("solve_rate", 0.0)), int(r.get("episodes", 0) or 0)
    se = math.sqrt(p * (1 - p) / n) if n else 0.0
    return f"{p:.1%} ± {se:.1%}"


def _pct(v: Any) -> str:
    return "-" if v is None else f"{float(v):.1%}"


def _failures(r: dict[str, Any]) -> str:
    kinds = r.get("failure_kinds") or {}
    return ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])) or "-"


def _script_json(data: Any) -> str:
    """JSON safe inside `<script type="application/json">` (no `</script>` can close it).

    The page reads it with JSON.parse(textContent); `<`, `>` and `&` are written as JSON
    escapes, so the text needs no HTML escaping and cannot end the element early.
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
