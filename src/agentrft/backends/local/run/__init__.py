"""A local run end to end: the config turned into an engine (model, device, sampler), the
rows it plays, the GRPO and SFT loops, evaluations, health checks, the live view, the
policy `agentrft play` talks to, and what a run leaves on disk (checkpoints, metrics).

Owns: the order things happen in and what is written where. May import `models`,
`inference` and `algo`; only the backend (`LocalBackend`) imports it.
"""
