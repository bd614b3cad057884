"""What a local run leaves behind, and how it is watched.

```
runs/<name>/
  config.yaml            the resolved configuration (resume reads it back)
  run.json               model path, MLflow run id, status
  checkpoints/step_000010/{adapter/, trainer_state.pt, state.json}
  adapters/              the adapter synced to the sampler after each step (latest kept)
  final_adapter/         the trained adapter
  trajectories.jsonl     every training episode (metadata: step, group, phase)
  eval/                  before/after reports (JSON) and their trajectories
  metrics.jsonl          one line of metrics per step (also sent to MLflow)
  health.json            the health conditions and the steps they held
  report.html, plots/    the run's page (`agentrft report`) and its plots as PNG
  mlflow.db              the default MLflow store (sqlite)
```

`trajectories.jsonl` and `metrics.jsonl` are only ever appended to, so a kill can leave at
most their last line half-written; resume cuts such a torn tail (with a warning) and
refuses a file damaged anywhere else. Every file written here goes through
`agentrft.redact` first: URL passwords, API keys and tokens never reach the disk.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrft.backend import BackendError
from agentrft.backends.local.settings import LocalRunConfig, as_local
from agentrft.config import Config, dump_config
from agentrft.config_model import load_config, validate_config
from agentrft.redact import restore_redacted, scrub
from agentrft.trajectory import Trajectory

log = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
#: The files a run appends to, one JSON object per line, and the step a record belongs to
#: (every other file of a run is replaced atomically).
APPEND_ONLY: dict[str, Callable[[dict[str, Any]], int]] = {
    "metrics.jsonl": lambda r: r.get("step", 0),
    "trajectories.jsonl": lambda r: (r.get("metadata") or {}).get("step", 0),
}


class RunDir:
    """Paths and small files of one run directory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, config: LocalRunConfig, task_name: str) -> RunDir:
        """A fresh run directory under `config.local.run_dir` (name: run_name or task-time)."""
        root = Path(config.local.run_dir)
        name = config.local.run_name or f"{task_name}-{time.strftime('%Y%m%d-%H%M%S')}"
        # Without secrets (URL passwords, keys): resume takes them from its own config.
        safe = type(config).model_validate(scrub(config.model_dump(mode="json")))
        text = dump_config(safe)
        n = 1
        while True:
            path = root / (name if n == 1 else f"{name}-{n}")
            path.mkdir(parents=True, exist_ok=True)
            if any(path.iterdir()):  # someone's files, or another run: never mix in
                n += 1
                continue
            try:
                # Creating config.yaml exclusively claims the directory: two runs started in
                # the same second (same name) cannot both take it.
                with (path / "config.yaml").open("x", encoding="utf-8") as fh:
                    fh.write(text)
                return cls(path)
            except FileExistsError:
                n += 1

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """An existing run directory (for resume); the error names what is missing."""
        path = Path(path)
        if not (path / "config.yaml").is_file():
            raise FileNotFoundError(
                f"{path} is not a run directory (no config.yaml); pass the directory that "
                "`agentrft train` printed"
            )
        return cls(path)

    def config(self) -> Config:
        return load_config(self.path / "config.yaml")

    def resumed_config(self, given: LocalRunConfig) -> LocalRunConfig:
        """The config this run continues with when resumed: the one it saved, with the
        secrets its config.yaml was written without (URL passwords, keys) taken from
        `given`, and `given`'s `max_steps` when it sets another (to train a finished run
        further)."""
        data, missing = restore_redacted(
            self.config().model_dump(mode="json"), given.model_dump(mode="json")
        )
        if missing:
            raise BackendError(
                f"{self.path / 'config.yaml'} was written without the secrets in "
                f"{', '.join(missing)}; pass the same values again to resume (the same --config "
                f"file, or --set {missing[0]}=...)"
            )
        config = as_local(validate_config(data))
        if "max_steps" in given.model_fields_set and given.max_steps != config.max_steps:
            config = config.model_copy(update={"max_steps": given.max_steps})
        return config

    # -- small JSON files -----------------------------------------------------------------

    def read_info(self) -> dict[str, Any]:
        p = self.path / "run.json"
        return json.loads(p.read_text()) if p.is_file() else {}

    def update_info(self, **values: Any) -> None:
        info = self.read_info()
        info.update(scrub(values))
        _atomic_write(self.path / "run.json", json.dumps(info, indent=2))

    def write_health(self, conditions: list[dict[str, Any]]) -> None:
        """health.json: the run's health conditions (name, first and last step, the step
        it cleared at or None, the warning's first text), for the report."""
        _atomic_write(self.path / "health.json", json.dumps(scrub(conditions), indent=2))

    def append_metrics(self, step: int, metrics: dict[str, float]) -> None:
        with (self.path / "metrics.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": step, **metrics}) + "\n")

    # -- checkpoints ----------------------------------------------------------------------

    def checkpoint_dir(self, step: int) -> Path:
        return self.path / CHECKPOINTS / f"step_{step:06d}"

    def latest_checkpoint(self) -> Path | None:
        root = self.path / CHECKPOINTS
        done = (
            [p for p in root.glob("step_*") if (p / "state.json").is_file()]
            if root.is_dir()
            else []
        )
        return max(done, key=lambda p: int(p.name.split("_")[1]), default=None)

    @contextmanager
    def writing_checkpoint(self, step: int) -> Iterator[Path]:
        """Yield a temp directory; it becomes `checkpoints/step_N` only if the block succeeds."""
        final = self.checkpoint_dir(step)
        tmp = final.with_name(final.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)

    def truncate_after(self, step: int) -> None:
        """Drop what steps after `step` wrote, so that resume replays them exactly.

        An append-only file's unterminated last line is a write a kill interrupted: it is
        cut, with a warning naming the file and the bytes dropped. A damaged line anywhere
        else is an error naming the file and line, and then no file is changed.
        """
        files = [(self.path / name, step_of) for name, step_of in APPEND_ONLY.items()]
        files = [(path, step_of) for path, step_of in files if path.is_file()]
        torn: list[int] = []
        try:
            for path, step_of in files:
                torn.append(_filter_jsonl(path, _partial(path), step_of, step))
        except BaseException:
            for path, _ in files:
                _partial(path).unlink(missing_ok=True)
            raise
        for (path, _), n in zip(files, torn, strict=True):
            if n:
                log.warning(
                    "%s: dropped a torn last line (%d bytes) left by an interrupted write",
                    path,
                    n,
                )
            _partial(path).replace(path)
        root = self.path / CHECKPOINTS
        if root.is_dir():
            for p in root.glob("step_*"):
                m = re.fullmatch(r"step_(\d+)(\.partial)?", p.name)
                if m and (m.group(2) or int(m.group(1)) > step):
                    shutil.rmtree(p, ignore_errors=True)


def _partial(path: Path) -> Path:
    return path.with_name(path.name + ".partial")


def _atomic_write(path: Path, text: str) -> None:
    tmp = _partial(path)
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _filter_jsonl(
    path: Path, out: Path, step_of: Callable[[dict[str, Any]], int], last: int
) -> int:
    """Copy the records of `path` up to step `last` to `out`; returns the bytes of a torn
    (unterminated) last line, which is left out.

    Bytes, not text: a torn line may end inside a multi-byte character.
    """
    torn = 0
    with path.open("rb") as src, out.open("wb") as dst:
        for lineno, line in enumerate(src, start=1):
            if not line.endswith(b"\n"):  # only the last line can lack one
                torn = len(line)
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError(f"a JSON {type(record).__name__}, not an object")
            except ValueError as exc:
                raise BackendError(
                    f"{path}: line {lineno} is not a JSON record ({exc}); only a file's last "
                    "line can be torn by an interrupted run, so this one was damaged some "
                    "other way. Repair or delete that line, then resume again"
                ) from None
            if step_of(record) <= last:
                dst.write(line)
    return torn


#: MLflow's own opt-out (mlflow/telemetry/utils.py `is_telemetry_disabled`, read once when
#: mlflow is imported; `DO_NOT_TRACK=true` works too).
TELEMETRY_ENV = "MLFLOW_DISABLE_TELEMETRY"


def import_mlflow() -> Any:
    """`import mlflow` with its usage telemetry off unless the user set MLFLOW_DISABLE_TELEMETRY.

    Otherwise importing mlflow starts a thread that fetches config.mlflow-telemetry.io and
    reports usage events. The variable must be set before the import; if mlflow was already
    imported (a plugin, a notebook), its telemetry client is re-evaluated so it goes away.
    """
    import sys

    imported = "mlflow" in sys.modules
    os.environ.setdefault(TELEMETRY_ENV, "true")
    import mlflow

    if imported:
        from mlflow.telemetry import get_telemetry_client, set_telemetry_client

        if get_telemetry_client() is not None:
            set_telemetry_client()  # None when telemetry is now disabled
    return mlflow


@dataclass(frozen=True)
class TrackingSettings:
    """The tracking part of a run's config: MLflow or nothing, which store, which experiment."""

    enabled: bool
    #: None: a sqlite store in the run directory.
    tracking_uri: str | None
    experiment: str
    #: Evaluation episodes as MLflow traces (all of them), training episodes (N per step).
    trace_evals: bool = True
    trace_per_step: int = 2

    @classmethod
    def of(cls, config: LocalRunConfig) -> TrackingSettings:
        local = config.local
        return cls(
            enabled=local.tracking == "mlflow",
            tracking_uri=local.mlflow_tracking_uri,
            experiment=local.mlflow_experiment,
            trace_evals=local.trace_eval_episodes,
            trace_per_step=local.trace_train_episodes,
        )


class Tracker:
    """MLflow logging (a sqlite store in the run directory unless a URI is configured).

    mlflow is imported only here, when a run starts; `enabled=False` makes every call a no-op.
    A resumed run (`run_id` given) logs a metric only at steps after the last one the store
    already holds for it: the steps replayed after the checkpoint were logged once already.
    """

    def __init__(
        self,
        run: RunDir,
        *,
        enabled: bool,
        tracking_uri: str | None,
        experiment: str,
        run_name: str,
        run_id: str | None = None,
        trace_evals: bool = False,
        trace_per_step: int = 0,
    ) -> None:
        self.enabled = enabled
        self.trace_evals, self.trace_per_step = trace_evals, trace_per_step
        self.run_id: str | None = None
        self._mlflow: Any = None
        self._logged: dict[str, int] = {}
        if not enabled:
            return
        mlflow = import_mlflow()

        # Alembic's and mlflow's store-migration chatter would bury the live view.
        logging.getLogger("alembic").setLevel(logging.WARNING)
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        logging.getLogger("mlflow.tracing.export.async_export_queue").setLevel(logging.WARNING)
        if tracking_uri is None:
            db = (run.path / "mlflow.db").resolve()
            if not db.exists():
                _seed_sqlite_store(db)
            uri = f"sqlite:///{db}"
        else:
            uri = tracking_uri
        mlflow.set_tracking_uri(uri)
        if mlflow.get_experiment_by_name(experiment) is None:
            # Artifacts next to the run, not in ./mlruns of whatever directory we run in.
            location = (
                (run.path / "mlartifacts").resolve().as_uri() if tracking_uri is None else None
            )
            mlflow.create_experiment(experiment, artifact_location=location)
        mlflow.set_experiment(experiment)
        active = mlflow.start_run(run_id=run_id, run_name=None if run_id else run_name)
        self.run_id = active.info.run_id
        self.experiment_id = active.info.experiment_id
        self.uri = uri
        self._mlflow = mlflow
        if run_id:
            self._logged = self._last_logged_steps(run_id)

    def _last_logged_steps(self, run_id: str) -> dict[str, int]:
        """The highest step the store holds for each of the run's metrics."""
        client = self._mlflow.MlflowClient()
        keys = client.get_run(run_id).data.metrics
        return {k: max(m.step for m in client.get_metric_history(run_id, k)) for k in keys}

    def log_params(self, params: dict[str, Any]) -> None:
        if self._mlflow is not None:
            flat = {k: str(v)[:500] for k, v in scrub(params).items()}
            self._mlflow.log_params(flat)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if self._mlflow is None:
            return
        new = {
            key: float(v)
            for k, v in metrics.items()
            if step > self._logged.get(key := k.replace("@", "_at_"), -math.inf)
        }
        if new:
            self._mlflow.log_metrics(new, step=step)

    def log_eval_traces(self, trajectories: Sequence[Trajectory], split: str) -> int:
        """An evaluation's episodes as MLflow traces (`traces.py`), when `trace_evals`."""
        if self._mlflow is None or not self.trace_evals:
            return 0
        return self._traces(trajectories, split=split, step=None)

    def log_step_traces(self, trajectories: Sequence[Trajectory], step: int) -> int:
        """A step's first `trace_per_step` episodes as traces (not again for a step a resumed
        run replays: its traces were logged the first time)."""
        if self._mlflow is None or step <= self._logged.get("reward_mean", -math.inf):
            return 0
        return self._traces(trajectories[: self.trace_per_step], split="train", step=step)

    def _traces(self, trajectories: Sequence[Trajectory], *, split: str, step: int | None) -> int:
        from agentrft.backends.local.run.traces import log_episode_traces

        if not trajectories:
            return 0
        ids = log_episode_traces(self._mlflow, self.experiment_id, trajectories,
                                 split=split, step=step, run_id=self.run_id)  # fmt: skip
        return len(ids)

    def log_artifact(self, path: str | Path) -> None:
        if self._mlflow is not None:
            # Artifact stores may be remote and down; the metrics matter more.
            with contextlib.suppress(Exception):
                self._mlflow.log_artifact(str(path))

    def close(self, status: str = "FINISHED") -> None:
        if self._mlflow is not None:
            self._mlflow.end_run(status=status)
            self._mlflow = None


def _seed_sqlite_store(db: Path) -> None:
    """Copy a freshly migrated, empty MLflow sqlite store into place.

    Creating one runs ~50 schema migrations, each fsync'd: ~14 s on a slow disk against
    ~1 s in memory. The empty store is built once per mlflow version (on tmpfs when there
    is one) and cached.
    """
    mlflow = import_mlflow()

    from agentrft.backends.local.models.tiny_model import cache_root

    template = cache_root() / "mlflow" / f"empty-{mlflow.__version__}.db"
    if not template.is_file():
        template.parent.mkdir(parents=True, exist_ok=True)
        shm = Path("/dev/shm")
        with tempfile.TemporaryDirectory(dir=shm if shm.is_dir() else None) as tmp:
            from mlflow.tracking import MlflowClient

            MlflowClient(f"sqlite:///{tmp}/mlflow.db").search_experiments()
            part = template.with_name(template.name + f".{os.getpid()}.partial")
            shutil.copyfile(Path(tmp) / "mlflow.db", part)
            part.replace(template)
    shutil.copyfile(template, db)


def flatten_config(config: LocalRunConfig) -> dict[str, Any]:
    """`local.lora_target_modules`-style keys for MLflow params."""
    out: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            out[prefix] = value

    walk("", config.model_dump(mode="json"))
    return out
