"""The algorithm: advantages, the GRPO policy loss and its variants, trajectories turned into
training sequences, the LoRA policy update (`trainer`), the algorithm registries a run is
checked against, and which games an SFT warm-up plays.

Owns: what one training step computes from scored rollouts. May import `models` and
`inference` (sequences are built from the chat's exact tokens); never the run.
"""
