"""`WordleTask`: rows, prompts, the environment, the reward and its tiers, datasets."""

from __future__ import annotations

import asyncio
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from agentrft import (
    EpisodeLimits,
    FailureKind,
    Policy,
    RewardResult,
    RewardSample,
    Task,
    TaskInputError,
    Tier,
    TieredReward,
    Trajectory,
    call,
    replay_policy,
    run_episode,
    seeded_sample,
)
from agentrft_wordle.environment import WordleEnvironment
from agentrft_wordle.expert import expert_policy
from agentrft_wordle.game import MALFORMED, MAX_GUESSES, SCORE_SCALE, VALID_GUESS, WordleGame
from agentrft_wordle.words import answer_words

DEFAULT_PROMPT = "Guess the 5-letter word"
#: Split sizes (5 batches of 128 for training, one for validation); "test" is the rest.
SPLIT_SIZES = {"train": 640, "validation": 128}
#: Fixed, so the splits stay disjoint and identical whatever seed orders the rows.
SPLIT_SEED = 20201207
# Tool-call faults that never reach the game but are malformed input all the same.
CALL_FAULTS = (
    FailureKind.MALFORMED_TOOL_JSON,
    FailureKind.INVALID_ARGUMENTS,
    FailureKind.UNKNOWN_TOOL,
)


def solve_tier(n: int) -> Tier:
    """Solving on guess n: 1.05 + 0.5 (6 - n) / 5, +-0.04 shaping (adjacent tiers 0.1 apart)."""
    return Tier(
        name=f"solved_{n}",
        base=round(1.05 + 0.5 * (MAX_GUESSES - n) / 5, 10),
        shaping_weight=0.04,
        solved=True,
        description=f"solved on guess {n}",
    )


WORDLE_TIERS = TieredReward(
    [
        *(solve_tier(n) for n in range(1, MAX_GUESSES + 1)),
        Tier(name="lost", base=-0.5, shaping_weight=0.15, description="six guesses, no solve"),
        Tier(name="no_play", base=-1.5, description="no guess was ever played"),
    ]
)

# The example is a real reply (TEARS against MEDAL); a plural, so never itself an answer.
EXAMPLE_REPLY = """\
Guess 1/6: TEARS -> T=gray, E=green, A=yellow, R=gray, S=gray
Current Knowledge:
- Correct Position (Green): _ E _ _ _
- In Word, Wrong Position (Yellow): 'A' (at least 1)
- Not in Word (Gray): R, S, T
- Words Already Guessed: TEARS
- Guesses Remaining: 5"""

SYSTEM_PROMPT = (
    """\
You are playing Wordle. Find the hidden 5-letter English word in at most 6 guesses.

How to play:
- Call the guess_word tool with one 5-letter word per call, for example {"guess": "tears"}. \
Make one guess per call and read its feedback before the next guess.
- The feedback marks every letter: green = right letter in the right place; yellow = the \
letter is in the word but in another place; gray = the letter is not in the word (or not \
as many times as you used it).
- Each reply also sums up what you know so far ("Current Knowledge") and how many guesses \
remain. A reply looks like this:
"""
    + "\n".join("  " + line for line in EXAMPLE_REPLY.splitlines())
    + """

Scoring:
- Solving scores well, and solving in fewer guesses scores better.
- Use what you know: keep green letters in place, include yellow letters, never reuse gray \
letters, and do not repeat a word.
- Input that is not exactly 5 letters a-z is rejected without using a guess, but it is \
penalised. A repeated word, or a word that is not in the word list, uses up a guess and is \
penalised.
- You have at most 12 tool calls in all."""
)


@dataclass(frozen=True)
class WordleInstance:
    """A parsed row. `answer` is hidden: it never reaches a prompt."""

    answer: str
    prompt: str = DEFAULT_PROMPT
    id: str | None = None


class WordleTask(Task[WordleInstance]):
    """Wordle: guess a hidden 5-letter word in six guesses with the `guess_word` tool."""

    name: ClassVar[str] = "wordle"
    description: ClassVar[str] = "Guess a hidden 5-letter word in 6 tries (the service's sample)"
    # The tool-call limit is the binding one (a turn may carry several calls).
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(
        max_turns=16, max_tool_calls=12, timeout_s=600.0
    )
    tiers: ClassVar[TieredReward | None] = WORDLE_TIERS

    # -- rows ------------------------------------------------------------------------------
    def parse(self, prompt: str) -> WordleInstance:
        """Parse the inner JSON of a row: `{"prompt": ..., "answer": "riser", "id": ...}`."""
        try:
            data = json.loads(prompt)
        except (TypeError, json.JSONDecodeError) as exc:
            raise TaskInputError(
                f"wordle row prompt is not JSON ({exc}); expected a JSON string such as "
                '{"prompt": "Guess the 5-letter word", "answer": "riser", "id": "wordle_0"} '
                "(make rows with `WordleTask().make_dataset(...)`)"
            ) from None
        if not isinstance(data, dict) or "answer" not in data:
            raise TaskInputError(
                'wordle row prompt must be a JSON object with an "answer" field, got '
                f"{_preview(prompt)}"
            )
        answer = data["answer"]
        if not isinstance(answer, str) or not VALID_GUESS.fullmatch(answer.strip().lower()):
            raise TaskInputError(f"wordle row answer must be five letters a-z, got {answer!r}")
        answer = answer.strip().lower()
        text = data.get("prompt", DEFAULT_PROMPT)
        if not isinstance(text, str) or not text.strip():
            raise TaskInputError(f'wordle row "prompt" must be a non-empty string, got {text!r}')
        # A custom prompt must not name its answer; the default text is the same for every
        # row (its word "guess" is no clue even when the answer is GUESS).
        if text.strip() != DEFAULT_PROMPT and shows_word(text, answer):
            raise TaskInputError(
                "wordle row prompt text contains its own answer; the policy would see it. "
                'Remove the answer from the "prompt" field.'
            )
        row_id = data.get("id")
        return WordleInstance(
            answer=answer, prompt=text.strip(), id=None if row_id is None else str(row_id)
        )

    @staticmethod
    def row(answer: str, row_id: str | None = None, prompt: str = DEFAULT_PROMPT) -> dict[str, str]:
        """A dataset row in the double-encoded format the service reads."""
        inner: dict[str, Any] = {"prompt": prompt, "answer": answer}
        if row_id is not None:
            inner["id"] = row_id
        return {"prompt": json.dumps(inner)}

    def make_dataset(self, split: str, n: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
        """Rows for `split`: "train" (640 words), "validation" (128) or "test" (the rest of
        the answer list). The three are disjoint and fixed; `seed` orders (and with `n`
        below the split's size, subsamples) the rows."""
        pools = split_words()
        if split not in pools:
            raise TaskInputError(f"unknown wordle split {split!r}; use one of {', '.join(pools)}")
        words = pools[split]
        n = len(words) if n is None else n
        if n < 1 or n > len(words):
            raise TaskInputError(
                f"wordle split {split!r} has {len(words)} words; asked for {n}. "
                f"Use n between 1 and {len(words)}."
            )
        chosen = seeded_sample(list(words), n, seed)
        return [self.row(w, f"wordle_{split}_{i:04d}") for i, w in enumerate(chosen)]

    def instance_id(self, instance: WordleInstance) -> str | None:
        return instance.id

    def hidden_values(self, instance: WordleInstance) -> list[str]:
        return [instance.answer, instance.answer.upper()]

    # -- episode ---------------------------------------------------------------------------
    def system_prompt(self, instance: WordleInstance) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: WordleInstance) -> str:
        return (
            f"{instance.prompt.rstrip('.')}. You have {MAX_GUESSES} guesses. "
            "Make your first guess with the guess_word tool."
        )

    def environment(self, instance: WordleInstance) -> WordleEnvironment:
        return WordleEnvironment(WordleGame(instance.answer))

    def reward(self, env: Any, trajectory: Trajectory) -> RewardResult:
        """Outcome tier plus bounded shaping (wordle.md):

        - no guess ever played: -1.5;
        - lost: -0.5 + 0.15 * clip(shaping);
        - solved on guess n: 1.05 + 0.5 * (6 - n) / 5 + 0.04 * clip(shaping);

        with shaping = game score / 150. Tool calls that never reached the game (bad JSON,
        wrong arguments, unknown tool) count as malformed input.
        """
        game: WordleGame = env.game
        breakdown = game.score_breakdown()
        call_faults = sum(1 for f in trajectory.failures if f.kind in CALL_FAULTS)
        if call_faults:
            breakdown["malformed"] = breakdown.get("malformed", 0.0) + MALFORMED * call_faults
        game_score = sum(breakdown.values())
        if game.solved:
            tier = f"solved_{game.guesses_used}"
        elif game.guesses_used == 0:
            tier = "no_play"
        else:
            tier = "lost"
        components = {"game_score": round(game_score, 4), "guesses_used": float(game.guesses_used)}
        components.update({f"score.{k}": round(v, 4) for k, v in breakdown.items()})
        assert self.tiers is not None
        return self.tiers.score(tier, game_score / SCORE_SCALE, components=components)

    def expert(self) -> Policy:
        """The scripted expert (candidate filtering + entropy); see `expert.py`."""
        return expert_policy()

    # -- reward check ----------------------------------------------------------------------
    def reward_samples(self) -> Iterable[RewardSample]:
        """The declared tiers at extreme shaping, and rewards of real scripted games."""
        yield from super().reward_samples()
        yield from self.played_reward_samples()

    def played_reward_samples(self) -> list[RewardSample]:
        """Rewards of real games played through `run_episode` by scripted policies: every
        solve tier with clean and with maximally bad play, losses with good and bad
        play, and games where no guess was ever played."""
        assert self.tiers is not None
        rank = {name: i for i, name in enumerate(self.tiers.names)}
        games = list(_probe_games())

        async def play_all() -> list[Trajectory]:
            return [
                await run_episode(
                    self, self.row(answer, f"probe_{i}")["prompt"], replay_policy(replies)
                )
                for i, (_, answer, replies) in enumerate(games)
            ]

        trajectories = _run_sync(play_all())
        out = []
        for (label, _, _), traj in zip(games, trajectories, strict=True):
            assert traj.reward is not None
            out.append(
                RewardSample(rank[traj.reward.outcome], traj.reward.outcome, label, traj.reward)
            )
        return out


def split_words() -> dict[str, tuple[str, ...]]:
    """The fixed, disjoint word sets of each split."""
    return dict(_splits())


@lru_cache(maxsize=1)
def _splits() -> tuple[tuple[str, tuple[str, ...]], ...]:
    words = list(answer_words())
    shuffled = seeded_sample(words, len(words), SPLIT_SEED)
    n_val, n_train = SPLIT_SIZES["validation"], SPLIT_SIZES["train"]
    return (
        ("train", tuple(shuffled[n_val : n_val + n_train])),
        ("validation", tuple(shuffled[:n_val])),
        ("test", tuple(shuffled[n_val + n_train :])),
    )


def _guess(word: str) -> Any:
    return call("guess_word", {"guess": word})


def _probe_games() -> Iterator[tuple[str, str, list[Any]]]:
    """(label, answer, replies) for the reward probes. The "?IGHT" family gives clean play
    of any length: each word keeps every green and uses no gray letter."""
    answer = "sight"
    family = ["fight", "light", "might", "night", "right", "tight"]
    for n in range(1, MAX_GUESSES + 1):
        clean = [_guess(w) for w in family[: n - 1]] + [_guess(answer)]
        yield f"solved on guess {n}, clean play", answer, clean
        # Worst shaping a solve on guess n can have: malformed input fills the tool calls
        # the guesses leave free, the misses repeat a word and break every known letter.
        misses = [_guess("zzzzz")] * (n - 1)
        junk = [_guess("no")] * (12 - n)
        yield f"solved on guess {n}, worst play", answer, [*junk, *misses, _guess(answer)]
        # Written as text instead of tool calls: each guess costs the recovery penalty.
        texts = [f'guess_word("{w}")' for w in family[: n - 1]] + [f"guess: {answer}"]
        yield f"solved on guess {n}, plain-text guesses", answer, texts
    yield "lost, clean play", answer, [_guess(w) for w in family]
    # A strong opener, then words that keep every clue and each rule out more answers.
    rich = ["slate", "bound", "found", "hound", "mound", "pound"]
    yield "lost, informative play", "wound", [_guess(w) for w in rich]
    yield "lost, worst play", answer, [_guess("no")] * 6 + [_guess("zzzzz")] * 6
    yield "lost, one guess then silence", answer, [_guess("fight"), "I give up."]
    yield "no play, malformed only", answer, [_guess("no")] * 12
    yield "no play, text only", answer, ["I do not know."]
    yield "no play, bad tool JSON", answer, [call("guess_word", "{not json")] * 12


def shows_word(text: str, word: str) -> bool:
    """Whether a reader of `text` sees `word` (lowercase a-z) in it.

    The text is folded first: compatibility forms (full-width ＢＥＡＣＨ, ligatures),
    accents and case. Then anything but a letter separates words, so `beach_01`,
    `BEACH2024` and `#beach!` show "beach"; a word broken by such characters (`bea_ch`,
    `b-e-a-c-h`) and letters spelled out one by one (`B E A C H`) show it too.
    """
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)
    ).casefold()
    for chunk in folded.split():
        pieces = re.findall(r"[a-z]+", chunk)
        if word in pieces or "".join(pieces) == word:
            return True
    spelled = ""  # a run of single letters, across spaces
    for piece in re.findall(r"[a-z]+", folded):
        spelled = spelled + piece if len(piece) == 1 else ""
        if word in spelled:
            return True
    return False


def _run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
