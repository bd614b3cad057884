"""agentrft task plugin: BFCL's multi-turn function-calling suite (bfcl-eval)."""

from agentrft_bfcl.environment import BfclEnv
from agentrft_bfcl.expert import expert_policy
from agentrft_bfcl.reward import TIERS, bfcl_reward, decode_trajectory, turn_verdicts
from agentrft_bfcl.task import (
    BfclInstance,
    BfclLongContextTask,
    BfclMissFuncTask,
    BfclMissParamTask,
    BfclMultiTurnTask,
    split_of,
)

__all__ = [
    "TIERS",
    "BfclEnv",
    "BfclInstance",
    "BfclLongContextTask",
    "BfclMissFuncTask",
    "BfclMissParamTask",
    "BfclMultiTurnTask",
    "bfcl_reward",
    "decode_trajectory",
    "expert_policy",
    "split_of",
    "turn_verdicts",
]
