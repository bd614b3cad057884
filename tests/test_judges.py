"""Rubric judge rewards against the loopback fake server: parsing, caching, failures and
fallbacks, token and cost accounting, secrets, and what the policy never sees."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from agentrft import (
    EvalReport,
    RubricJudge,
    ScriptedJudge,
    ScriptedPolicy,
    Tier,
    TieredReward,
    check_reward_order,
    run_episode,
    run_sync,
)
from agentrft.judges import JudgeAnswerError, parse_verdict
from agentrft.testing import FakeOpenAIServer, http_error, judge_body, malformed_body, slow
from agentrft.testing.tasks import FindNumberTask

KEY = "sk-judge-secret-0123456789abcdef"


def answer(content: str, prompt_tokens: int = 120, completion_tokens: int = 30) -> dict:
    """A raw chat.completion body with exact usage (this file's default token counts)."""
    return judge_body(content, prompt_tokens, completion_tokens)


def judge_for(server: FakeOpenAIServer, **kwargs) -> RubricJudge:
    kwargs.setdefault("fallback", 0.25)
    return RubricJudge(
        "The final message is polite.",
        lambda env, traj: f"message: {env}",
        model="judge-model",
        base_url=server.base_url,
        api_key=KEY,
        max_retries=0,
        **kwargs,
    )


def test_score_parsed_and_returned_with_exact_cost():
    reply = answer('{"score": 0.8, "rationale": "polite enough"}', 1000, 200)
    with FakeOpenAIServer(lambda m, t: reply) as server:
        judge = judge_for(server, input_usd_per_1m=2.5, output_usd_per_1m=10.0)
        verdict = run_sync(judge("thanks!", None))
        body = server.chat_requests[0].body
    assert (verdict.score, verdict.rationale, verdict.failed) == (0.8, "polite enough", False)
    assert (verdict.prompt_tokens, verdict.completion_tokens) == (1000, 200)
    assert verdict.cost_usd == pytest.approx((1000 * 2.5 + 200 * 10.0) / 1e6)  # 0.0045
    comps = verdict.components()
    assert comps["judge_tokens"] == 1200.0
    assert comps["judge_cost_usd"] == pytest.approx(0.0045)
    assert comps["judge_failed"] == 0.0 and comps["judge_cached"] == 0.0
    # The judge sees the criteria and the author's view, at temperature 0.
    user_text = body["messages"][-1]["content"]
    assert "The final message is polite." in user_text and "message: thanks!" in user_text
    assert body["temperature"] == 0.0 and body["model"] == "judge-model"


def test_identical_call_is_a_cache_hit_without_a_request():
    with FakeOpenAIServer(lambda m, t: answer('{"score": 1}')) as server:
        judge = judge_for(server)
        first = run_sync(judge("same", None))
        second = run_sync(judge("same", None))
        assert len(server.chat_requests) == 1
        other = run_sync(judge("different", None))
        assert len(server.chat_requests) == 2
    assert not first.cached and second.cached and not other.cached
    assert second.score == first.score == 1.0
    assert second.prompt_tokens == 0 and second.cost_usd == 0.0
    assert second.components()["judge_cached"] == 1.0


def test_concurrent_identical_views_share_one_request():
    async def four():
        return await asyncio.gather(*(judge("same", None) for _ in range(4)))

    with FakeOpenAIServer(lambda m, t: answer('{"score": 0.5}', 100, 10)) as server:
        judge = judge_for(server)
        verdicts = run_sync(four())
        assert len(server.chat_requests) == 1
    assert [v.score for v in verdicts] == [0.5] * 4
    assert sum(v.prompt_tokens for v in verdicts) == 100  # counted once
    assert sum(v.cached for v in verdicts) == 3


def test_disk_cache_is_shared_by_judges_on_one_directory(tmp_path):
    with FakeOpenAIServer(lambda m, t: answer('{"score": 0.9, "rationale": "r"}')) as server:
        first = run_sync(judge_for(server, cache_dir=tmp_path)("same", None))
        again = run_sync(judge_for(server, cache_dir=tmp_path)("same", None))
        assert len(server.chat_requests) == 1
        # Another criteria text is another key: asked again.
        other = RubricJudge(
            "Other criteria.",
            lambda e, t: f"message: {e}",
            model="judge-model",
            base_url=server.base_url,
            cache_dir=tmp_path,
        )
        run_sync(other("same", None))
        assert len(server.chat_requests) == 2
    assert not first.cached and again.cached and (again.score, again.rationale) == (0.9, "r")
    assert len(list(tmp_path.glob("*.json"))) == 2


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (http_error(500, "upstream down"), "HTTP 500"),
        (http_error(401, f"invalid key {KEY}"), "HTTP 401"),  # a server echoing the key
        (malformed_body(), "not JSON"),
        (answer("I think it is quite good"), "did not answer"),
        (answer('{"score": 7}'), "outside [0, 1]"),
        (answer('{"score": "high"}'), "not a number"),
    ],
)
def test_failures_give_the_fallback_and_never_raise(reply, why, caplog):
    with FakeOpenAIServer(lambda m, t: reply) as server:
        judge = judge_for(server)
        with caplog.at_level(logging.DEBUG):
            verdict = run_sync(judge("x", None))
            again = run_sync(judge("x", None))
        assert len(server.chat_requests) == 2  # a failure is not cached
    assert verdict.failed and verdict.score == 0.25 and why in verdict.error
    assert verdict.components()["judge_failed"] == 1.0 and not again.cached
    assert KEY not in verdict.error and KEY not in caplog.text


def test_timeout_gives_a_tier_fallback():
    with FakeOpenAIServer(lambda m, t: slow(5.0, answer('{"score": 1}'))) as server:
        judge = judge_for(server, fallback="unjudged", timeout_s=0.2)
        verdict = run_sync(judge("x", None))
    assert verdict.failed and verdict.fallback_tier == "unjudged" and "0.2s" in verdict.error
    assert verdict.tier("filed") == "unjudged"


def test_litellm_model_string_reaches_the_same_server():
    with FakeOpenAIServer(lambda m, t: answer('{"score": 0.6}', 40, 5)) as server:
        judge = RubricJudge(
            "c",
            lambda env, traj: "v",
            model="litellm:openai/judge-model",
            base_url=server.base_url,
            api_key=KEY,
            max_retries=0,
            input_usd_per_1m=1.0,
        )
        verdict = run_sync(judge(None, None))
        assert len(server.chat_requests) == 1
        assert server.chat_requests[0].body["model"] == "judge-model"
    assert (verdict.score, verdict.prompt_tokens, verdict.completion_tokens) == (0.6, 40, 5)
    assert verdict.cost_usd == pytest.approx(40 / 1e6)


def test_retries_come_from_the_retry_policy():
    replies = iter([http_error(503), answer('{"score": 0.5}')])
    with FakeOpenAIServer(lambda m, t: next(replies)) as server:
        judge = RubricJudge(
            "c",
            lambda env, traj: "v",
            model="m",
            base_url=server.base_url,
            max_retries=1,
            backoff_base_s=0.001,
        )
        verdict = run_sync(judge(None, None))
        assert len(server.chat_requests) == 2
    assert verdict.score == 0.5 and not verdict.failed


def test_a_broken_view_is_a_failure_not_a_crash():
    judge = RubricJudge("c", lambda env, traj: env["missing"], client=ScriptedPolicy([]))
    verdict = run_sync(judge({}, None))
    assert verdict.failed and "KeyError" in verdict.error


def test_parse_verdict_accepts_fenced_and_embedded_json():
    assert parse_verdict('```json\n{"score": 0.4, "rationale": "ok"}\n```') == (0.4, "ok")
    assert parse_verdict('Here: {"score": 1, "rationale": "fine"} done') == (1.0, "fine")
    with pytest.raises(JudgeAnswerError):
        parse_verdict('{"rating": 1}')


def test_bad_judge_settings_are_refused():
    with pytest.raises(ValueError, match="fallback score must be in"):
        RubricJudge("c", str, model="m", fallback=2.0)
    with pytest.raises(ValueError, match="either model="):
        RubricJudge("c", str)
    with pytest.raises(ValueError, match="needs criteria"):
        RubricJudge(" ", str, model="m")


TIERS = TieredReward(
    [
        Tier(name="solved", base=1.0, shaping_weight=0.2, solved=True),
        Tier(name="lost", base=-1.0),
    ]
)


def test_judge_shaping_inside_a_tier_in_an_episode_and_the_report():
    """An async judge reward runs in the one loop; the judge's prompt reaches the judge only;
    the eval report totals its tokens and cost."""
    judge_reply = answer('{"score": 0.75, "rationale": "good"}', 50, 10)
    with FakeOpenAIServer(lambda m, t: judge_reply) as server:
        judge = RubricJudge(
            "Guesses efficiently.",
            lambda env, traj: f"{len(traj.turns)} turns",
            model="judge-model",
            base_url=server.base_url,
            input_usd_per_1m=1.0,
            output_usd_per_1m=2.0,
        )

        async def reward(env, traj):
            verdict = await judge(env, traj)
            return TIERS.score("solved", verdict.shaping, components=verdict.components())

        task = FindNumberTask()
        traj = run_sync(
            run_episode(
                task, task.make_dataset("train", 1, 0)[0]["prompt"], task.expert(), reward_fn=reward
            )
        )
        judge_messages = server.chat_requests[0].body["messages"]
    assert traj.reward is not None and traj.reward.total == pytest.approx(1.0 + 0.2 * 0.5)
    policy_text = json.dumps([m.to_openai() for m in traj.messages])
    assert judge.prompt not in policy_text and "Guesses efficiently." not in policy_text
    assert judge_messages[0]["content"] == judge.prompt
    report = EvalReport.from_trajectories([traj, traj], task="t", policy="p", temperature=1.0)
    assert report.judge is not None
    assert (report.judge.episodes, report.judge.prompt_tokens) == (2, 100)
    assert report.judge.completion_tokens == 20
    assert report.judge.cost_usd == pytest.approx(2 * (50 * 1.0 + 10 * 2.0) / 1e6)
    assert any(name == "judge" for name, _ in report._summary_rows())


def test_scripted_judge_shaping_cannot_cross_a_tier():
    samples = []
    from agentrft.reward import RewardSample

    for s in (0.0, 1.0):
        verdict = run_sync(ScriptedJudge(s)(None, None))
        samples.append(
            RewardSample(0, "solved", f"judge {s}", TIERS.score("solved", verdict.shaping))
        )
    samples += TIERS.samples()
    assert check_reward_order(samples).ok
