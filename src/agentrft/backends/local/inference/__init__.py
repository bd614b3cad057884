"""Sampling from the policy model: the token-level sampler interface and its two engines
(transformers on CPU, a vLLM server), the token-exact multi-turn chat over them, reading
tool calls out of replies, and LoRA adapters handed to vLLM.

Owns: turning a conversation into the policy's next reply, token for token. May import
`models`; never the algorithm or the run.
"""
