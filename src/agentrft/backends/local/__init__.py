"""The local backend: GRPO on this machine. Importing this package must stay cheap (no
torch / SDK imports).

Its parts, each a subpackage that imports only the ones below it (tests/test_import_graph.py
holds the order):

- `run/`: a run end to end: engine, rows, the GRPO and SFT loops, evaluations, health,
  the live view, the run directory;
- `algo/`: what one training step computes: advantages, the loss, sequences, the LoRA
  update, the algorithm registries;
- `inference/`: sampling the policy's replies token for token (transformers, vLLM);
- `models/`: finding and loading models (Hugging Face, GGUF, the tiny test model).

`backend.py` (`LocalBackend`), `plugin.py` (its entry point) and `settings.py` (the `local`
config section) sit on top.
"""
