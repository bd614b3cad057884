"""The run's step metrics as plots (matplotlib): inline SVG for the page, PNG for the folder.

Each plot is a few series over the GRPO steps; each series is drawn with one marker per
step it has a value at, and carries its metric's name as its SVG id (`series-NAME`), so a
reader (or a test) can find a curve and count its points in the page.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PLOTS", "Plot", "draw_plots"]


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    #: (metric key, legend label); a key the run never logged is left out.
    series: tuple[tuple[str, str], ...]
    ylabel: str = ""
    #: Series keys starting with this prefix are added too (failure kinds over time).
    prefix: str | None = None


PLOTS = (
    PlotSpec(
        "reward",
        "Reward per step",
        (("reward_mean", "training rollouts"), ("val_reward_mean", "validation rows")),
        "mean reward",
    ),
    PlotSpec(
        "solve_rate",
        "Solve rate per step",
        (("solve_rate", "training rollouts"), ("val_solve_rate", "validation rows")),
        "solved",
    ),
    PlotSpec(
        "tokens",
        "Tokens per step",
        (
            ("completion_tokens", "completion"),
            ("prompt_tokens", "prompt"),
            ("trained_tokens", "trained"),
        ),
        "tokens",
    ),
    PlotSpec("update", "Policy update", (("loss", "loss"), ("grad_norm", "grad norm"))),
    PlotSpec(
        "health",
        "Health",
        (
            ("clip_high_frac", "clipped high"),
            ("clip_low_frac", "clipped low"),
            ("sampler_logprob_abs_diff", "sampler/trainer gap"),
            ("zero_variance_groups", "zero-variance groups"),
        ),
    ),
    PlotSpec("failures", "Failure kinds per step (share of episodes)", (), "share", "failure_"),
)


@dataclass(frozen=True)
class Plot:
    name: str
    title: str
    svg: str
    #: metric key -> how many steps the series has a value at (its markers in the SVG).
    points: dict[str, int]


def draw_plots(steps: list[dict[str, Any]], png_dir: Path | None = None) -> list[Plot]:
    """One plot per `PLOTS` entry the run logged anything for; PNGs into `png_dir` too."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    plots = []
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": "agentrft", "font.size": 9}
    ):
        for spec in PLOTS:
            series = _series(spec, steps)
            if not series:
                continue
            fig = Figure(figsize=(6.4, 2.8), dpi=100, layout="constrained")
            ax = fig.add_subplot()
            points = {}
            for key, label in series:
                # A step logs a failure kind only when it happened: elsewhere its share is 0.
                zero = spec.prefix is not None and key.startswith(spec.prefix)
                values = [(s["step"], _number(s.get(key, 0.0 if zero else None))) for s in steps]
                xs = [x for x, y in values if y is not None]
                ys = [y for _, y in values if y is not None]
                ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.2, label=label,
                        gid=f"series-{key}")  # fmt: skip
                points[key] = len(xs)
            ax.set_title(spec.title)
            ax.set_xlabel("step")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole
            if spec.ylabel:
                ax.set_ylabel(spec.ylabel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
            buf = io.StringIO()
            fig.savefig(buf, format="svg", metadata={"Date": None})
            if png_dir is not None:
                png_dir.mkdir(parents=True, exist_ok=True)
                fig.savefig(png_dir / f"{spec.name}.png", format="png", metadata={"Software": None})
            plots.append(Plot(spec.name, spec.title, _inline(buf.getvalue()), points))
    return plots


def _series(spec: PlotSpec, steps: list[dict[str, Any]]) -> list[tuple[str, str]]:
    logged = {k for s in steps for k, v in s.items() if _number(v) is not None}
    out = [(k, label) for k, label in spec.series if k in logged]
    if spec.prefix:
        out += [
            (k, k.removeprefix(spec.prefix)) for k in sorted(logged) if k.startswith(spec.prefix)
        ]
    return out


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def _inline(svg: str) -> str:
    """The SVG element alone (no XML declaration or doctype: it goes inside the page)."""
    return svg[svg.index("<svg") :]
