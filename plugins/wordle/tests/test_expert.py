from agentrft_wordle import WordleSolver, WordleTask, score_guess
from agentrft_wordle.expert import parse_feedback

from agentrft import run_episodes


async def test_expert_on_the_validation_words(task: WordleTask) -> None:
    """Acceptance: >= 99% solved and <= 3.7 guesses per solve on the 128 validation words."""
    rows = task.make_dataset("validation", 128, 42)
    trajectories = await run_episodes(task, [r["prompt"] for r in rows], task.expert())
    solved = [t for t in trajectories if t.solved]
    guesses = [t.reward.components["guesses_used"] for t in solved]
    assert len(solved) / len(trajectories) >= 0.99
    assert sum(guesses) / len(guesses) <= 3.7
    # Expert games are clean SFT material: real tool calls only, never a malformed or
    # repeated guess, a word outside the list, or a text reply.
    kinds = {k for t in trajectories for k in t.failure_kinds}
    assert kinds <= {"contradiction"}
    assert all(m.tool_calls for t in trajectories for m in t.messages if m.role == "assistant")


def test_expert_reads_feedback_from_the_replies(task: WordleTask) -> None:
    messages = task.initial_messages(task.parse(task.row("abide")["prompt"]))
    assert parse_feedback(messages) == []
    from agentrft_wordle import WordleGame

    from agentrft import Message

    game = WordleGame("abide")
    for word in ("crane", "speed"):
        messages.append(Message(role="tool", content=game.guess(word), tool_call_id="x"))
    assert parse_feedback(messages) == [("crane", "XXYXG"), ("speed", "XXYXY")]


def test_solver_handles_an_answer_outside_the_list() -> None:
    solver = WordleSolver()
    history: list[tuple[str, str]] = []
    for _ in range(6):
        word = solver.next_guess(history)
        history.append((word, score_guess(word, "zonks")))
        if word == "zonks":
            break
    # Once no listed answer fits it falls back to allowed words that fit every clue so far.
    assert len(solver.candidates(history)) == 0
    for i in range(2, len(history)):
        word = history[i][0]
        assert all(score_guess(g, word) == fb for g, fb in history[:i]), word
    assert len({w for w, _ in history}) == len(history)  # never repeats itself
