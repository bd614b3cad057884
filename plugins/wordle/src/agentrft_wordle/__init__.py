"""agentrft-wordle: the Wordle reference task for agentrft.

Public API: `score_guess` (feedback marks), `WordleGame` (one game), `WordleEnvironment`
(the `guess_word` tool), `WordleTask` (rows, prompts, reward, datasets, expert, curriculum),
`WordleStrictTask` (the same without text recovery).
"""

from agentrft_wordle.entropy import entropy_table, guess_entropy, pattern_table
from agentrft_wordle.environment import WordleEnvironment, recover_guess
from agentrft_wordle.expert import WordleSolver, expert_opening, expert_policy
from agentrft_wordle.feedback import decode, encode, score_guess
from agentrft_wordle.game import Knowledge, MalformedGuess, WordleGame
from agentrft_wordle.task import WORDLE_TIERS, WordleInstance, WordleStrictTask, WordleTask
from agentrft_wordle.words import allowed_words, answer_words

__all__ = [
    "WORDLE_TIERS",
    "Knowledge",
    "MalformedGuess",
    "WordleEnvironment",
    "WordleGame",
    "WordleInstance",
    "WordleSolver",
    "WordleStrictTask",
    "WordleTask",
    "allowed_words",
    "answer_words",
    "decode",
    "encode",
    "entropy_table",
    "expert_opening",
    "expert_policy",
    "guess_entropy",
    "pattern_table",
    "recover_guess",
    "score_guess",
]
