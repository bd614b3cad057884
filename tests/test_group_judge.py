"""The group-relative judge (RULER-style) against the loopback fake server, and group
scoring in the one agent loop: one request per group, scores mapped back through the
seeded shuffle, cache hits, failures and fallbacks, tokens and cost, and what runs when
the group scorer fails."""

from __future__ import annotations

import copy
import json
import logging
from collections import Counter

import pytest

from agentrft import (
    Environment,
    EpisodeLimits,
    GroupJudge,
    RewardResult,
    ScriptedPolicy,
    Task,
    Tier,
    TieredReward,
    evaluate,
    run_grouped_episodes,
    run_sync,
)
from agentrft.judges import JudgeAnswerError, judge_metrics, parse_group_verdict
from agentrft.testing import (
    FakeOpenAIServer,
    group_judge,
    http_error,
    judge_body,
    malformed_body,
    shown_attempts,
    slow,
)

KEY = "sk-group-judge-secret-0123456789"


def judge_for(server: FakeOpenAIServer, **kwargs) -> GroupJudge:
    kwargs.setdefault("fallback", 0.5)
    return GroupJudge(
        "More letters 'a' is better.",
        lambda env, traj: str(env),
        model="judge-model",
        base_url=server.base_url,
        api_key=KEY,
        max_retries=0,
        **kwargs,
    )


def by_a(text: str) -> float:
    return text.count("a") / 4


def test_one_request_scores_every_member_with_exact_cost():
    group = [("aaaa", None), ("a", None), ("", None), ("aa", None)]
    with FakeOpenAIServer(group_judge(by_a, 800, 60)) as server:
        judge = judge_for(server, input_usd_per_1m=2.0, output_usd_per_1m=8.0)
        verdicts = run_sync(judge(group))
        assert len(server.chat_requests) == 1
        body = server.chat_requests[0].body
    # Scores come back to the member they belong to, whatever order the judge saw.
    assert [v.score for v in verdicts] == [1.0, 0.25, 0.0, 0.5]
    assert not any(v.failed or v.cached for v in verdicts)
    # The one request's usage is on the first member only: sums are exact.
    assert (verdicts[0].prompt_tokens, verdicts[0].completion_tokens) == (800, 60)
    assert verdicts[0].cost_usd == pytest.approx((800 * 2.0 + 60 * 8.0) / 1e6)
    assert all(v.prompt_tokens == 0 and v.cost_usd == 0.0 for v in verdicts[1:])
    assert body["temperature"] == 0.0 and body["messages"][0]["content"] == judge.prompt
    assert "More letters 'a' is better." in body["messages"][-1]["content"]
    assert "4 attempts to compare" in body["messages"][-1]["content"]


def test_the_order_shown_follows_content_and_seed_not_the_rollout_index():
    with FakeOpenAIServer(group_judge(by_a)) as server:
        judge = judge_for(server)
        views = ["aaa", "b", "aa", "a"]
        run_sync(judge([(v, None) for v in views]))
        run_sync(judge([(v, None) for v in reversed(views)]))  # same group, other order
        # The same group in another order is the same request, so a cache hit.
        assert len(server.chat_requests) == 1
        first = judge.order(views)
        assert [views[i] for i in first] == [
            list(reversed(views))[i] for i in judge.order(list(reversed(views)))
        ]
    # Over many groups the first rollout lands in every position, about evenly.
    where: Counter[int] = Counter()
    for g in range(400):
        group = [f"group {g} sample {k}" for k in range(4)]
        where[judge.order(group).index(0)] += 1
    assert set(where) == {0, 1, 2, 3} and min(where.values()) > 60, where
    # Another seed shows (some) groups in another order.
    other = copy.copy(judge)
    other.seed = 1
    groups = [[f"g{g} s{k}" for k in range(4)] for g in range(20)]
    assert any(judge.order(g) != other.order(g) for g in groups)


def test_the_judge_saw_the_views_in_the_shuffled_order():
    views = [f"view {k} " + "a" * k for k in range(5)]
    with FakeOpenAIServer(group_judge(by_a)) as server:
        judge = judge_for(server)
        run_sync(judge([(v, None) for v in views]))
        from agentrft.messages import Message

        sent = [Message(**m) for m in server.chat_requests[0].body["messages"]]
    assert shown_attempts(sent) == [views[i] for i in judge.order(views)]


def test_cache_hits_in_memory_and_on_disk(tmp_path):
    group = [("aa", None), ("a", None)]
    with FakeOpenAIServer(group_judge(by_a, 300, 30)) as server:
        first = run_sync(judge_for(server, cache_dir=tmp_path)(group))
        judge = judge_for(server, cache_dir=tmp_path)  # a fresh judge: only the disk
        again = run_sync(judge(group))
        memory = run_sync(judge(group))
        assert len(server.chat_requests) == 1
        run_sync(judge([("aa", None), ("aaa", None)]))  # another group: asked
        assert len(server.chat_requests) == 2
    assert [v.score for v in again] == [v.score for v in first] == [0.5, 0.25]
    assert all(v.cached for v in again + memory)
    metrics = judge_metrics(_trajs(again))
    assert metrics["judge/cache_hits"] == 2.0 and metrics["judge/tokens"] == 0.0
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (http_error(500, "upstream down"), "HTTP 500"),
        (http_error(401, f"bad key {KEY}"), "HTTP 401"),
        (malformed_body(), "not JSON"),
        (judge_body("they are all fine"), "did not answer"),
        (judge_body('{"scores": [{"id": 1, "score": 0.5}]}'), "no score for attempt(s) [2]"),
        (judge_body('{"scores": [{"id": 1, "score": 2}, {"id": 2, "score": 0}]}'), "outside"),
        (judge_body('{"scores": [{"id": 1, "score": 1}, {"id": 1, "score": 0}]}'), "twice"),
    ],
)
def test_failures_give_every_member_the_fallback(reply, why, caplog):
    group = [("a", None), ("aa", None)]
    with FakeOpenAIServer(lambda m, t: reply) as server:
        judge = judge_for(server)
        with caplog.at_level(logging.DEBUG):
            verdicts = run_sync(judge(group))
            run_sync(judge(group))
        assert len(server.chat_requests) == 2  # a failure is not cached
    assert all(v.failed and v.score == 0.5 and why in v.error for v in verdicts)
    assert KEY not in caplog.text and all(KEY not in v.error for v in verdicts)
    assert judge_metrics(_trajs(verdicts))["judge/failures"] == 2.0


def test_a_malformed_answer_still_counts_its_tokens():
    with FakeOpenAIServer(lambda m, t: judge_body("no json here", 500, 40)) as server:
        verdicts = run_sync(judge_for(server, input_usd_per_1m=1.0)([("a", None), ("b", None)]))
    assert verdicts[0].failed and verdicts[0].prompt_tokens == 500
    assert verdicts[0].cost_usd == pytest.approx(500 / 1e6)


def test_timeout_gives_a_tier_fallback_and_a_broken_view_fails_too():
    with FakeOpenAIServer(lambda m, t: slow(5.0, judge_body("{}"))) as server:
        judge = judge_for(server, fallback="unjudged", timeout_s=0.2)
        verdicts = run_sync(judge([("a", None), ("b", None)]))
    assert all(v.tier("answered") == "unjudged" for v in verdicts)
    broken = GroupJudge("c", lambda env, traj: env["x"], client=ScriptedPolicy(lambda m, t: ""))
    assert all(v.failed and "KeyError" in v.error for v in run_sync(broken([({}, None)] * 2)))


def test_litellm_model_string_reaches_the_same_server():
    with FakeOpenAIServer(group_judge(by_a, 40, 5)) as server:
        judge = GroupJudge(
            "c",
            lambda env, traj: env,
            model="litellm:openai/judge-model",
            base_url=server.base_url,
            api_key=KEY,
            max_retries=0,
        )
        verdicts = run_sync(judge([("aa", None), ("a", None)]))
        assert server.chat_requests[0].body["model"] == "judge-model"
    assert [v.score for v in verdicts] == [0.5, 0.25] and verdicts[0].prompt_tokens == 40


def test_parse_group_verdict_accepts_fenced_string_ids():
    text = 'Sure:\n```json\n{"scores": [{"id": "2", "score": 0.1}, {"id": 1, "score": 1}]}\n```'
    assert parse_group_verdict(text, 2) == [(1.0, ""), (0.1, "")]
    with pytest.raises(JudgeAnswerError, match="unknown"):
        parse_group_verdict('{"scores": [{"id": 3, "score": 1}]}', 2)


# -- group scoring in the one agent loop ------------------------------------------------

TIERS = TieredReward(
    [
        Tier(name="answered", base=1.0, shaping_weight=0.5, solved=True),
        Tier(name="silent", base=-1.0),
    ]
)


class _TextEnv(Environment):
    reply = ""

    def on_text_reply(self, text: str) -> str | None:
        self.reply, self.done = text, True
        return None


class Reply(Task[str]):
    """One text reply; alone it scores 0 shaping, in a group the judge ranks the replies."""

    name = "reply"
    limits = EpisodeLimits(max_turns=1)

    def __init__(self, judge: GroupJudge | None = None, behaviour: str = "judge") -> None:
        self.judge = judge
        self.behaviour = behaviour
        self.groups: list[int] = []

    def parse(self, prompt: str) -> str:
        return prompt

    def environment(self, instance: str) -> _TextEnv:
        return _TextEnv()

    def user_prompt(self, instance: str) -> str:
        return instance

    def reward(self, env: _TextEnv, trajectory) -> RewardResult:
        return TIERS.score("answered", 0.0, components={"alone": 1.0})

    async def score_group(self, group):
        self.groups.append(len(group))
        if self.behaviour == "raise":
            raise RuntimeError(f"bug with {KEY}")
        if self.behaviour == "short":
            return [TIERS.score("answered")]
        assert self.judge is not None
        verdicts = await self.judge([(m.env.reply, m.trajectory) for m in group])
        return [TIERS.score("answered", v.shaping, components=v.components()) for v in verdicts]


def replies(*texts: str) -> ScriptedPolicy:
    it = iter(texts)
    return ScriptedPolicy(lambda m, t: next(it))


def test_the_loop_scores_each_prompt_group_once_and_callbacks_see_the_rewards():
    seen = []
    with FakeOpenAIServer(group_judge(by_a, 100, 10)) as server:
        task = Reply(judge_for(server, input_usd_per_1m=1.0))
        trajs = run_sync(
            run_grouped_episodes(
                task,
                ["p1"] * 3 + ["p2"] * 3,
                replies("aaaa", "a", "", "aa", "aa", "aaaa"),
                group_size=3,
                concurrency=1,  # replies in prompt order
                on_episode=lambda t: seen.append(t.reward.total),
            )
        )
        assert len(server.chat_requests) == 2  # one per prompt group
    assert task.groups == [3, 3]
    totals = [t.reward.total for t in trajs]
    assert totals == pytest.approx([1.5, 0.75, 0.5, 1.0, 1.0, 1.5])  # 1 + 0.5 * (2s - 1)
    assert sorted(seen) == sorted(totals)
    metrics = judge_metrics(trajs)
    assert (metrics["judge/episodes"], metrics["judge/tokens"]) == (6.0, 220.0)
    assert metrics["judge/cost_usd"] == pytest.approx(200 / 1e6)


@pytest.mark.parametrize("behaviour", ["raise", "short"])
def test_a_failing_group_scorer_falls_back_to_each_episode_alone(behaviour, caplog):
    task = Reply(behaviour=behaviour)
    with caplog.at_level(logging.WARNING):
        trajs = run_sync(run_grouped_episodes(task, ["p"] * 2, replies("a", "b"), group_size=2))
    assert [t.reward.components.get("alone") for t in trajs] == [1.0, 1.0]
    assert "scoring each episode alone" in caplog.text and KEY not in caplog.text


def test_group_size_one_or_no_scorer_is_the_ordinary_loop():
    task = Reply(behaviour="raise")
    trajs = run_sync(run_grouped_episodes(task, ["p"], replies("a"), group_size=1))
    assert task.groups == [] and trajs[0].reward.components["alone"] == 1.0
    # Only a task or reward with score_group scores groups; a reward replacing the task's
    # own decides alone.
    from agentrft.group_scoring import group_scorer
    from agentrft.testing import FindNumberTask

    assert group_scorer(FindNumberTask()) is None and group_scorer(task) is task
    assert group_scorer(task, reward_fn=lambda env, traj: None) is None
    with pytest.raises(ValueError, match="groups of 2"):
        run_sync(run_grouped_episodes(task, ["p"] * 3, replies("a", "b", "c"), group_size=2))


def test_evaluate_with_samples_scores_each_row_as_a_group_and_reports_the_judge():
    with FakeOpenAIServer(group_judge(by_a, 100, 10)) as server:
        task = Reply(judge_for(server, input_usd_per_1m=1.0))
        reports, trajs = run_sync(
            evaluate(
                task,
                ["p1", "p2"],
                replies(*["a", "aa"] * 2),
                samples_per_row=2,
                concurrency=1,
            )
        )
        assert len(server.chat_requests) == 2
    judge = reports[0].judge
    assert judge is not None and (judge.episodes, judge.prompt_tokens) == (4, 200)
    assert judge.cost_usd == pytest.approx(200 / 1e6)
    assert [t.metadata["sample"] for t in trajs] == [0, 1, 0, 1]


def _trajs(verdicts):
    """Stand-in trajectories whose rewards carry `verdicts`' components."""
    from agentrft import Trajectory

    return [
        Trajectory(
            id=str(i),
            task="t",
            prompt="p",
            reward=TIERS.score("answered", v.shaping, components=v.components()),
        )
        for i, v in enumerate(verdicts)
    ]


def test_judge_metrics_are_empty_without_a_judge():
    from agentrft import Trajectory

    assert judge_metrics([Trajectory(id="x", task="t", prompt="p")]) == {}
    assert json.dumps(judge_metrics([])) == "{}"


def test_an_episode_played_alone_never_reaches_score_group():
    """What the SageMaker runtime, `play` and one-sample evals do: `run_episode` scores with
    the ordinary reward; score_group is not called."""
    from agentrft import run_episode

    task = Reply(behaviour="raise")
    traj = run_sync(run_episode(task, "p", replies("aa")))
    assert task.groups == [] and traj.reward.components["alone"] == 1.0
