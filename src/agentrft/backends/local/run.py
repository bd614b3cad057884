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
  mlflow.db              the default MLflow store (sqlite)
```
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentrft.config import Config, dump_config, load_config

CHECKPOINTS = "checkpoints"


class RunDir:
    """Paths and small files of one run directory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls, config: Config, task_name: str) -> RunDir:
        """A fresh run directory under `config.local.run_dir` (name: run_name or task-time)."""
        root = Path(config.local.run_dir)
        name = config.local.run_name or f"{task_name}-{time.strftime('%Y%m%d-%H%M%S')}"
        path = root / name
        if path.exists() and any(path.iterdir()):
            n = 2
            while (root / f"{name}-{n}").exists():
                n += 1
            path = root / f"{name}-{n}"
        path.mkdir(parents=True, exist_ok=True)
        run = cls(path)
        (path / "config.yaml").write_text(dump_config(config), encoding="utf-8")
        return run

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

    # -- small JSON files -----------------------------------------------------------------

    def read_info(self) -> dict[str, Any]:
        p = self.path / "run.json"
        return json.loads(p.read_text()) if p.is_file() else {}

    def update_info(self, **values: Any) -> None:
        info = self.read_info()
        info.update(values)
        _atomic_write(self.path / "run.json", json.dumps(info, indent=2))

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
        """Drop what steps after `step` wrote (resume replays them exactly)."""
        _filter_jsonl(self.path / "metrics.jsonl", lambda r: r.get("step", 0) <= step)
        _filter_jsonl(
            self.path / "trajectories.jsonl",
            lambda r: (r.get("metadata") or {}).get("step", 0) <= step,
        )
        root = self.path / CHECKPOINTS
        if root.is_dir():
            for p in root.glob("step_*"):
                m = re.fullmatch(r"step_(\d+)(\.partial)?", p.name)
                if m and (m.group(2) or int(m.group(1)) > step):
                    shutil.rmtree(p, ignore_errors=True)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _filter_jsonl(path: Path, keep: Any) -> None:
    if not path.is_file():
        return
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    kept = [ln for ln in lines if keep(json.loads(ln))]
    _atomic_write(path, "".join(ln + "\n" for ln in kept))


class Tracker:
    """MLflow logging (a sqlite store in the run directory unless a URI is configured).

    mlflow is imported only here, when a run starts; `enabled=False` makes every call a no-op.
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
    ) -> None:
        self.enabled = enabled
        self.run_id: str | None = None
        self._mlflow: Any = None
        if not enabled:
            return
        import logging

        import mlflow

        # Alembic's and mlflow's store-migration chatter would bury the live view.
        logging.getLogger("alembic").setLevel(logging.WARNING)
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
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
        self.uri = uri
        self._mlflow = mlflow

    def log_params(self, params: dict[str, Any]) -> None:
        if self._mlflow is not None:
            flat = {k: str(v)[:500] for k, v in params.items()}
            self._mlflow.log_params(flat)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        if self._mlflow is not None:
            self._mlflow.log_metrics(
                {k.replace("@", "_at_"): float(v) for k, v in metrics.items()}, step=step
            )

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
    import mlflow

    from agentrft.backends.local.tiny_model import cache_root

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


def flatten_config(config: Config) -> dict[str, Any]:
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
