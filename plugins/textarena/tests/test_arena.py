"""The adapter around TextArena's env: its random stream, its observations, its end."""

from __future__ import annotations

import random
import threading

import pytest
from agentrft_textarena.arena import ArenaGame

from agentrft import evaluate, run_sync


def test_a_game_is_a_function_of_its_seed_and_leaves_the_global_stream_alone():
    random.seed(1234)
    expected_next = random.Random(1234).random()
    codes = [ArenaGame("Mastermind-v0", s).game_state["secret_code"] for s in (1, 2, 3)]
    assert random.random() == expected_next  # TextArena's random.seed(...) was undone
    assert codes == [ArenaGame("Mastermind-v0", s).game_state["secret_code"] for s in (1, 2, 3)]
    assert len({tuple(c) for c in codes}) == 3


def test_concurrent_games_draw_the_same_as_sequential_ones():
    seeds = list(range(100, 140))
    sequential = {s: ArenaGame("GuessTheNumber-v0", s).game_state["game_number"] for s in seeds}
    found: dict[int, int] = {}
    barrier = threading.Barrier(4)

    def worker(part):
        barrier.wait()
        for s in part:
            found[s] = ArenaGame("GuessTheNumber-v0", s).game_state["game_number"]
            random.random()  # another thread's draw between games

    threads = [threading.Thread(target=worker, args=(seeds[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == sequential


def test_observe_shows_new_game_messages_without_the_players_echo():
    game = ArenaGame("GuessTheNumber-v0", 5)
    assert game.observe().startswith("[GAME] You are Player 0. You are playing Guess The Number.")
    assert game.observe() == ""  # nothing new
    target = game.game_state["game_number"]
    guess = 1 if target != 1 else 2
    assert game.step(f"[{guess}]") is False
    assert game.observe() == "[GAME] The target number is higher."
    assert game.step("no brackets at all") is False  # the action wrapper brackets it
    assert game.observe().startswith("[GAME] You attempted an invalid move.")
    assert game.outcome().done is False
    assert game.step(f"[{target}]") is True
    out = game.outcome()
    assert (out.done, out.reward, out.invalid_move) == (True, 1.0, False)
    with pytest.raises(RuntimeError, match="the game is over"):
        game.step("[3]")


def test_games_make_reset_and_play_without_the_network(task, monkeypatch):
    """No game fetches data (nltk.download, word lists) when made, reset or stepped."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError("network use attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    rows = [r["prompt"] for r in task.make_dataset("test", 8, seed=0)]
    (report,), _ = run_sync(evaluate(task, rows, task.expert()))
    assert report.solve_rate == 1.0


def test_a_move_after_the_winning_move_in_the_same_turn_is_not_played():
    from agentrft_textarena.task import ArenaInstance, GuessTheNumberTask

    from agentrft import ToolCall, call, replay_policy, run_episode

    task = GuessTheNumberTask()
    instance = ArenaInstance(seed=9)
    target = task.secret(task.new_game(instance))
    both = [call("move", {"action": f"[{target}]"}), call("move", {"action": "[3]"})]
    traj = run_sync(run_episode(task, task.row(9)["prompt"], replay_policy([both])))
    assert traj.reward.outcome == "win"
    assert [m.content for m in traj.turns[0].tool_messages] == ["[GAME] The game is over."]
    # The environment refuses a move after the end by itself too (not only the loop).
    env = task.environment(instance)
    env.game.step(f"[{target}]")
    result = run_sync(env.call_tool(ToolCall(id="c1", name="move", arguments='{"action": "[3]"}')))
    assert result.failure == "move_after_game_over"
    assert env.game.actions == [f"[{target}]"]
