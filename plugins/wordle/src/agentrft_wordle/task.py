"""`WordleTask`: rows, prompts, the environment, the reward and its tiers, datasets."""

from __future__ import annotations

import json
import random
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, ClassVar

from agentrft import (
    EpisodeLimits,
    FailureKind,
    Message,
    Policy,
    RewardResult,
    RewardSample,
    ScriptedPolicy,
    Task,
    TaskInputError,
    Tier,
    TieredReward,
    ToolCall,
    Trajectory,
    call,
    run_episode,
    run_sync,
)
from agentrft_wordle.environment import WordleEnvironment
from agentrft_wordle.expert import expert_opening, expert_policy
from agentrft_wordle.game import (
    MALFORMED,
    MAX_CALLS,
    MAX_GUESSES,
    SCORE_SCALE,
    VALID_GUESS,
    WordleGame,
)
from agentrft_wordle.words import answer_words

DEFAULT_PROMPT = "Guess the 5-letter word"
#: Split sizes (5 batches of 128 for training, one for validation); "test" is the rest.
SPLIT_SIZES = {"train": 640, "validation": 128}
#: The sample's split: the sorted, upper-cased answers shuffled by `random.Random(42)`.
SPLIT_SEED = 42
#: Row ids per split, as the sample writes them (`wordle_train_0000`, `wordle_val_0000`).
ID_PREFIX = {"train": "wordle_train", "validation": "wordle_val", "test": "wordle_test"}
#: Most guesses a curriculum level or a row's "seed_guesses" can play ahead of the policy.
MAX_SEED_GUESSES = MAX_GUESSES - 1
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
    """A parsed row. `answer` is hidden: it never reaches a prompt.

    `seed_guesses` is the head start asked for (a row's "seed_guesses" field, or a
    curriculum level); `seeded` are the expert's opening guesses played for the policy
    before its first turn: the first `min(seed_guesses, n - 1)` of the expert's game, where
    n is the guess on which the expert solves (so the game never starts solved).
    """

    answer: str
    prompt: str = DEFAULT_PROMPT
    id: str | None = None
    seed_guesses: int = 0
    seeded: tuple[str, ...] = ()


class WordleTask(Task[WordleInstance, WordleEnvironment]):
    """Wordle: guess a hidden 5-letter word in six guesses with the `guess_word` tool."""

    name: ClassVar[str] = "wordle"
    description: ClassVar[str] = "Guess a hidden 5-letter word in 6 tries (the service's sample)"
    # The game allows 12 tool calls and answers a 13th with a game-over reply that ends the
    # episode (the sample's reply past its cap); the loop's limit lets that one call through.
    limits: ClassVar[EpisodeLimits] = EpisodeLimits(
        max_turns=16, max_tool_calls=MAX_CALLS + 1, timeout_s=600.0
    )
    tiers: ClassVar[TieredReward | None] = WORDLE_TIERS
    #: Level k starts the game with the expert's first min(k, n - 1) guesses played.
    curriculum_levels: ClassVar[int] = MAX_SEED_GUESSES
    #: Play a guess written as text (`guess: CRANE`) with a penalty, as the sample does;
    #: `WordleStrictTask` turns this off.
    text_recovery: ClassVar[bool] = True

    # -- rows ------------------------------------------------------------------------------
    def parse(self, prompt: str) -> WordleInstance:
        """Parse the inner JSON of a row: `{"prompt": ..., "answer": "riser", "id": ...}`.

        The "prompt" text is the user message exactly as given (missing or blank: the
        default "Guess the 5-letter word"). An optional "seed_guesses": k (0..5) starts
        the game with the expert's first k guesses played (see `WordleInstance`).
        """
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
        text = data.get("prompt")
        if text is None or (isinstance(text, str) and not text.strip()):
            text = DEFAULT_PROMPT  # the sample's fallback for an empty prompt
        if not isinstance(text, str):
            raise TaskInputError(f'wordle row "prompt" must be a string, got {text!r}')
        # A custom prompt must not name its answer; the default text is the same for every
        # row (its word "guess" is no clue even when the answer is GUESS).
        if text.strip() != DEFAULT_PROMPT and shows_word(text, answer):
            raise TaskInputError(
                "wordle row prompt text contains its own answer; the policy would see it. "
                'Remove the answer from the "prompt" field.'
            )
        seeds = data.get("seed_guesses", 0)
        if (
            isinstance(seeds, bool)
            or not isinstance(seeds, int)
            or not 0 <= seeds <= MAX_SEED_GUESSES
        ):
            raise TaskInputError(
                f'wordle row "seed_guesses" must be an integer 0..{MAX_SEED_GUESSES} (guesses '
                f"the expert plays before the policy's first turn), got {seeds!r}"
            )
        row_id = data.get("id")
        instance = WordleInstance(
            answer=answer, prompt=text, id=None if row_id is None else str(row_id)
        )
        return with_seed_guesses(instance, seeds) if seeds else instance

    @staticmethod
    def row(
        answer: str, row_id: str | None = None, prompt: str = DEFAULT_PROMPT, seed_guesses: int = 0
    ) -> dict[str, str]:
        """A dataset row in the double-encoded format the service reads (`seed_guesses` > 0
        adds the row field that starts the game with that many expert guesses)."""
        inner: dict[str, Any] = {"prompt": prompt, "answer": answer}
        if row_id is not None:
            inner["id"] = row_id
        if seed_guesses:
            inner["seed_guesses"] = seed_guesses
        return {"prompt": json.dumps(inner)}

    def make_dataset(
        self, split: str, n: int | None = None, seed: int = 0, *, seed_guesses: int = 0
    ) -> list[dict[str, Any]]:
        """The sample's rows for `split`: "train" (640 words, `wordle_train_0000`...),
        "validation" (128, `wordle_val_0000`...) or "test" (the other 1,155 answers).

        The splits, their order and their ids are the sample's (see `split_words`), so
        `wordle_val_0007` names the same word here as there; `n` takes the first n rows.
        `seed` changes nothing (a trainer shuffles its prompts itself). `seed_guesses` > 0
        writes that field into every row (a head start that also works on SageMaker).
        """
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
        if not 0 <= seed_guesses <= MAX_SEED_GUESSES:
            raise TaskInputError(f"seed_guesses must be 0..{MAX_SEED_GUESSES}, got {seed_guesses}")
        return [
            self.row(w, f"{ID_PREFIX[split]}_{i:04d}", seed_guesses=seed_guesses)
            for i, w in enumerate(words[:n])
        ]

    def instance_id(self, instance: WordleInstance) -> str | None:
        return instance.id

    def hidden_values(self, instance: WordleInstance) -> list[str]:
        return [instance.answer, instance.answer.upper()]

    # -- episode ---------------------------------------------------------------------------
    def system_prompt(self, instance: WordleInstance) -> str:
        return SYSTEM_PROMPT

    def user_prompt(self, instance: WordleInstance) -> str:
        return instance.prompt  # the row's text as given, like the sample

    def initial_messages(self, instance: WordleInstance) -> list[Message]:
        """System and user messages, then each seeded guess as the policy's own turn would
        be: an assistant `guess_word` call and the game's exact reply to it."""
        messages = super().initial_messages(instance)
        _, replies = _seeded_game(instance)
        for i, (word, reply) in enumerate(zip(instance.seeded, replies, strict=True), start=1):
            seeded_call = ToolCall(
                id=f"seed_{i}", name="guess_word", arguments=json.dumps({"guess": word})
            )
            messages.append(Message(role="assistant", tool_calls=[seeded_call]))
            messages.append(
                Message(role="tool", content=reply, tool_call_id=seeded_call.id, name="guess_word")
            )
        return messages

    def environment(self, instance: WordleInstance) -> WordleEnvironment:
        game, _ = _seeded_game(instance)
        return WordleEnvironment(game, text_recovery=self.text_recovery)

    def curriculum(self, instance: WordleInstance, level: int) -> WordleInstance:
        """Level k (1..5) starts the game with the expert's first min(k, n - 1) guesses
        played, n being the guess on which the expert solves this answer; a row's own
        "seed_guesses" is kept when it asks for more. Deterministic: the expert is."""
        wanted = max(level, instance.seed_guesses)
        return instance if wanted == instance.seed_guesses else with_seed_guesses(instance, wanted)

    def reward(self, env: WordleEnvironment, trajectory: Trajectory) -> RewardResult:
        """Outcome tier plus bounded shaping (wordle.md):

        - no guess ever played: -1.5;
        - lost: -0.5 + 0.15 * clip(shaping);
        - solved on guess n: 1.05 + 0.5 * (6 - n) / 5 + 0.04 * clip(shaping);

        with shaping = game score / 150. Tool calls that never reached the game (bad JSON,
        wrong arguments, unknown tool) count as malformed input. In a seeded game (a
        curriculum level, a row's "seed_guesses") n counts the seeded guesses, the shaping
        comes from the policy's own guesses only, and a policy that never played a guess
        itself gets no_play.
        """
        game: WordleGame = env.game
        breakdown = game.score_breakdown()  # the policy's own guesses only
        call_faults = sum(1 for f in trajectory.failures if f.kind in CALL_FAULTS)
        if call_faults:
            breakdown["malformed"] = breakdown.get("malformed", 0.0) + MALFORMED * call_faults
        game_score = sum(breakdown.values())
        if game.player_guesses == 0:  # seeded guesses alone are no play
            tier = "no_play"
        elif game.solved:
            tier = f"solved_{game.guesses_used}"  # the guess number, seeded guesses included
        else:
            tier = "lost"
        components = {"game_score": round(game_score, 4), "guesses_used": float(game.guesses_used)}
        seeded = game.guesses_used - game.player_guesses
        if seeded:
            components["seeded_guesses"] = float(seeded)
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
                    self,
                    self.row(answer, f"probe_{i}")["prompt"],
                    self.expert() if replies is None else replay_own_turns(replies),
                    curriculum_level=level,
                )
                for i, (_, answer, replies, level) in enumerate(games)
            ]

        trajectories = run_sync(play_all())
        out = []
        for (label, *_), traj in zip(games, trajectories, strict=True):
            assert traj.reward is not None
            out.append(
                RewardSample(rank[traj.reward.outcome], traj.reward.outcome, label, traj.reward)
            )
        return out


class WordleStrictTask(WordleTask):
    """Wordle without text recovery, for local training: only a `guess_word` tool call
    plays a guess. A reply that writes its guess as text (`guess: CRANE`, a broken call's
    `"guess": "guess"`) is prose, and prose ends the game (`no_tool_call`): a game with no
    guess played is `no_play`, otherwise `lost`. Everything else (rows, prompts, reward,
    expert, curriculum) is `wordle`'s, so the two compare row for row; `wordle` itself
    keeps the sample's recovery rule."""

    name: ClassVar[str] = "wordle_strict"
    description: ClassVar[str] = "Wordle where only real tool calls play (no text recovery)"
    text_recovery: ClassVar[bool] = False


def split_words() -> dict[str, tuple[str, ...]]:
    """The words of each split, in row order: the sample's rule (sort the answers,
    upper-case them, `random.Random(42).shuffle`, the first 640 train, the next 128
    validation); test is the rest, in the same order."""
    return dict(_splits())


@lru_cache(maxsize=1)
def _splits() -> tuple[tuple[str, tuple[str, ...]], ...]:
    words = sorted(w.upper() for w in answer_words())
    random.Random(SPLIT_SEED).shuffle(words)
    words = [w.lower() for w in words]
    n_train, n_val = SPLIT_SIZES["train"], SPLIT_SIZES["validation"]
    return (
        ("train", tuple(words[:n_train])),
        ("validation", tuple(words[n_train : n_train + n_val])),
        ("test", tuple(words[n_train + n_val :])),
    )


def with_seed_guesses(instance: WordleInstance, k: int) -> WordleInstance:
    """`instance` with a head start of the expert's first min(k, n - 1) guesses."""
    return replace(instance, seed_guesses=k, seeded=expert_opening(instance.answer, k))


def _seeded_game(instance: WordleInstance) -> tuple[WordleGame, list[str]]:
    """A fresh game of `instance` with its seeded guesses played, and their replies."""
    game = WordleGame(instance.answer)
    return game, game.seed(instance.seeded)


def replay_own_turns(replies: list[Any]) -> ScriptedPolicy:
    """Plays `replies` in order, one per turn of its own, then repeats the last. Unlike
    `replay_policy` (which counts the assistant messages in the conversation) it is not
    thrown off by seeded turns. One policy per episode."""
    played = 0

    def play(messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        nonlocal played
        reply = replies[min(played, len(replies) - 1)]
        played += 1
        if isinstance(reply, ToolCall):
            return reply.model_copy()
        return [c.model_copy() for c in reply] if isinstance(reply, list) else reply

    return ScriptedPolicy(play, name="replay")


def _guess(word: str) -> Any:
    return call("guess_word", {"guess": word})


def _probe_games() -> Iterator[tuple[str, str, list[Any] | None, int]]:
    """(label, answer, replies or None for the expert, curriculum level) for the reward
    probes. The "?IGHT" family gives clean play of any length: each word keeps every green
    and uses no gray letter."""
    answer = "sight"
    family = ["fight", "light", "might", "night", "right", "tight"]
    for n in range(1, MAX_GUESSES + 1):
        clean = [_guess(w) for w in family[: n - 1]] + [_guess(answer)]
        yield f"solved on guess {n}, clean play", answer, clean, 0
        # Worst shaping a solve on guess n can have: malformed input fills the tool calls
        # the guesses leave free, the misses repeat a word and break every known letter.
        misses = [_guess("zzzzz")] * (n - 1)
        junk = [_guess("no")] * (MAX_CALLS - n)
        yield f"solved on guess {n}, worst play", answer, [*junk, *misses, _guess(answer)], 0
        # Written as text instead of tool calls: each guess costs the recovery penalty.
        texts = [f'guess_word("{w}")' for w in family[: n - 1]] + [f"guess: {answer}"]
        yield f"solved on guess {n}, plain-text guesses", answer, texts, 0
    yield "lost, clean play", answer, [_guess(w) for w in family], 0
    # A strong opener, then words that keep every clue and each rule out more answers.
    rich = ["slate", "bound", "found", "hound", "mound", "pound"]
    yield "lost, informative play", "wound", [_guess(w) for w in rich], 0
    yield "lost, worst play", answer, [_guess("no")] * 6 + [_guess("zzzzz")] * 6, 0
    yield "lost, one guess then silence", answer, [_guess("fight"), "I give up."], 0
    yield "no play, malformed only", answer, [_guess("no")] * MAX_CALLS, 0
    yield "no play, text only", answer, ["I do not know."], 0
    yield "no play, bad tool JSON", answer, [call("guess_word", "{not json")] * MAX_CALLS, 0
    # Seeded games (curriculum levels): the tier counts the seeded guesses, the shaping only
    # the policy's own, and seeded guesses alone are no play.
    for level in range(1, MAX_SEED_GUESSES + 1):
        yield f"expert at curriculum level {level}", "wound", None, level
    worst = [_guess("no")] * (MAX_CALLS - 1) + [_guess("zzzzz")] * 4
    yield "lost at curriculum level 2, worst play", "wound", worst, 2
    yield "no play at curriculum level 2, silence", "wound", ["I give up."], 2


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


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")
