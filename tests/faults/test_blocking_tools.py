"""Sync tools that block or hang: they run on worker threads under the episode's deadline.

Concurrency is shown with barriers, not timings: a tool waits until every episode in flight
has entered it, which only happens if the calls really run at once (a tool that blocked the
event loop would leave the barrier one party short until it breaks). A hung tool waits on
`RELEASE`, set when each test ends so its thread can finish.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from agentrft import (
    Environment,
    EpisodeLimits,
    RewardResult,
    ScriptedPolicy,
    Task,
    Tier,
    TieredReward,
    Trajectory,
    call,
    run_episode,
    run_episodes,
    tool,
)
from agentrft.tool_threads import ToolThreads

RELEASE = threading.Event()
#: A "hung" tool (or a barrier) gives up after this long, so a regression fails the test
#: instead of hanging it: every deadline below is far shorter.
HANG_LIMIT_S = 10.0
#: Set by a tool the moment it starts to hang.
HANGING = threading.Event()
#: Barriers by name, for rows that ask their tool to meet the other episodes in it.
BARRIERS: dict[str, threading.Barrier] = {}
LOWEST = -1.0


@pytest.fixture(autouse=True)
def release_hung_tools() -> Iterator[None]:
    RELEASE.clear()
    HANGING.clear()
    BARRIERS.clear()
    yield
    RELEASE.set()  # every hung tool's thread returns and exits


class FetchEnv(Environment):
    """Two fetches end the episode. A row may make each fetch block, meet a barrier, hang."""

    def __init__(self, row: dict[str, Any]) -> None:
        super().__init__()
        self.row = row
        self.fetched: list[str] = []
        self.threads: set[str] = set()

    @tool
    def fetch(self, key: str) -> str:
        """Fetch one record from a slow service.

        Args:
            key: the record's key.
        """
        assert self.current_call is not None and self.current_call.name == "fetch"
        self.threads.add(threading.current_thread().name)
        if self.row.get("hang"):
            HANGING.set()
            RELEASE.wait(HANG_LIMIT_S)
            self.fetched.append("late")  # after the deadline: nobody may score this
        if barrier := self.row.get("barrier"):
            BARRIERS[barrier].wait(
                timeout=HANG_LIMIT_S
            )  # BrokenBarrierError if the others never come
        time.sleep(self.row.get("block_s", 0.0))
        self.fetched.append(key)
        self.done = len(self.fetched) >= 2
        return f"record {key}"


class FetchTask(Task[dict]):
    """Rows are JSON: `{"id": "f0", "block_s": 0.01, "barrier": "b", "hang": false}`."""

    name: ClassVar[str] = "fetch"
    tiers: ClassVar[TieredReward] = TieredReward(
        [
            Tier(name="fetched", base=1.0, solved=True),
            Tier(name="partial", base=0.0),
            Tier(name="nothing", base=LOWEST),
        ]
    )

    def __init__(self, timeout_s: float = 30.0) -> None:
        self.limits = EpisodeLimits(max_turns=8, max_tool_calls=8, timeout_s=timeout_s)

    def parse(self, prompt: str) -> dict:
        return dict(json.loads(prompt))

    def environment(self, instance: dict) -> FetchEnv:
        return FetchEnv(instance)

    def user_prompt(self, instance: dict) -> str:
        return "Fetch two records."

    def reward(self, env: Environment, trajectory: Trajectory) -> RewardResult:
        assert isinstance(env, FetchEnv)
        if env.done:
            return self.tiers.score("fetched")
        return self.tiers.score("partial" if env.fetched else "nothing")


def fetch_script(messages: list[Any], tools: list[Any]) -> Any:
    turn = sum(1 for m in messages if m.role == "assistant")
    return call("fetch", {"key": f"k{turn}"})


def row(i: int, **fields: Any) -> str:
    return json.dumps({"id": f"f{i}", **fields})


def play(task: FetchTask, prompts: list[str], **kw: Any) -> list[Trajectory]:
    return asyncio.run(run_episodes(task, prompts, ScriptedPolicy(fetch_script), **kw))


def wait_until(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Poll a condition another thread makes true (a thread's exit has no event to wait on)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def pool_threads(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix + "-")]


# --- through run_episodes ----------------------------------------------------------------


def test_blocking_sync_tools_of_concurrent_episodes_run_at_once() -> None:
    n = 16
    BARRIERS["all"] = threading.Barrier(n)
    trajs = play(FetchTask(), [row(i, barrier="all") for i in range(n)], concurrency=n)
    assert [t.stop_reason for t in trajs] == ["done"] * n, trajs[0].failures
    assert all(t.reward is not None and t.reward.total == 1.0 for t in trajs)
    assert all(t.failures == [] for t in trajs)


def test_concurrency_bounds_the_sync_calls_in_flight() -> None:
    """8 episodes, 4 at a time: the tool calls meet in groups of exactly 4."""
    BARRIERS["four"] = threading.Barrier(4)
    in_flight, most = 0, 0
    lock = threading.Lock()

    class CountingEnv(FetchEnv):
        @tool
        def fetch(self, key: str) -> str:
            """Fetch one record.

            Args:
                key: the record's key.
            """
            nonlocal in_flight, most
            with lock:
                in_flight += 1
                most = max(most, in_flight)
            try:
                return FetchEnv.fetch.fn(self, key)
            finally:
                with lock:
                    in_flight -= 1

    class CountingTask(FetchTask):
        def environment(self, instance: dict) -> FetchEnv:
            return CountingEnv(instance)

    trajs = play(CountingTask(), [row(i, barrier="four") for i in range(8)], concurrency=4)
    assert [t.stop_reason for t in trajs] == ["done"] * 8, trajs[0].failures
    assert most == 4


def test_sync_tools_leave_the_event_loop_free() -> None:
    """While a sync tool blocks, a coroutine on the same loop keeps running."""
    ticks: list[int] = []

    async def main() -> list[Trajectory]:
        async def ticker() -> None:
            while True:
                ticks.append(1)
                await asyncio.sleep(0.005)

        tick_task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)  # let it tick once before the episode starts
        before = len(ticks)
        trajs = await run_episodes(FetchTask(), [row(0, block_s=0.3)], ScriptedPolicy(fetch_script))
        tick_task.cancel()
        ticks[:] = ticks[before:]
        return trajs

    (traj,) = asyncio.run(main())
    assert traj.stop_reason == "done"
    assert traj.tool_s >= 0.6  # two calls of 0.3 s each
    assert len(ticks) >= 10  # 0.6 s of blocking, and the loop ticked all along


def test_a_hung_sync_tool_ends_its_episode_with_wall_clock_and_the_lowest_reward(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = ToolThreads(8, name="hung-test")
    task = FetchTask(timeout_s=0.5)
    with caplog.at_level(logging.WARNING, logger="agentrft.tools"):
        trajs = play(
            task,
            [row(0, hang=True), *(row(i, block_s=0.01) for i in range(1, 8))],
            concurrency=8,
            tool_threads=pool,
        )
    hung, others = trajs[0], trajs[1:]
    assert hung.stop_reason == "wall_clock"
    assert hung.failure_kinds == ["wall_clock"]
    assert "in tool 'fetch'" in hung.failures[0].detail
    assert hung.reward is not None and hung.reward.total == LOWEST == task.lowest_reward().total
    assert hung.wall_s < 0.5 + 5  # ended at its deadline, not when the tool returns
    assert [t.stop_reason for t in others] == ["done"] * 7
    assert all(t.reward is not None and t.reward.total == 1.0 for t in others)
    # The run returned while the tool is still blocked on its thread, which is given up.
    assert not RELEASE.is_set() and HANGING.is_set()
    assert pool.lost == 1
    assert any(
        "still running" in r.getMessage() and "'fetch'" in r.getMessage() for r in caplog.records
    )
    pool.shutdown()


def test_a_given_up_thread_is_replaced_and_exits_when_its_call_returns() -> None:
    """A pool of one thread: after it hangs, the next episodes still get a thread."""
    pool = ToolThreads(1, name="replace-test")
    task = FetchTask(timeout_s=0.3)
    (hung,) = play(task, [row(0, hang=True)], tool_threads=pool)
    assert hung.stop_reason == "wall_clock" and pool.lost == 1

    later = play(task, [row(i, block_s=0.01) for i in range(1, 4)], tool_threads=pool)
    assert [t.stop_reason for t in later] == ["done"] * 3
    assert len(pool_threads("replace-test")) == 2  # the hung thread and its replacement

    RELEASE.set()  # the hung call returns; its thread must not stay on as a second worker
    assert wait_until(lambda: pool.lost == 0)
    assert wait_until(lambda: len(pool_threads("replace-test")) == 1)
    assert [t.stop_reason for t in play(task, [row(9)], tool_threads=pool)] == ["done"]
    pool.shutdown()
    assert wait_until(lambda: not pool_threads("replace-test"))


def test_a_queued_call_does_not_wait_for_a_hung_thread() -> None:
    """Pool of one: a healthy episode's call queues behind a hung one, and runs on the
    replacement thread as soon as the hung call is given up at its (shorter) deadline."""
    pool = ToolThreads(1, name="queue-test")
    task = FetchTask()

    async def main() -> tuple[Trajectory, Trajectory]:
        policy = ScriptedPolicy(fetch_script)
        short = EpisodeLimits(timeout_s=0.5)
        hung = asyncio.ensure_future(
            run_episode(task, row(0, hang=True), policy, limits=short, tool_threads=pool)
        )
        while not HANGING.is_set():  # the only thread is now taken
            await asyncio.sleep(0.005)
        healthy = await run_episode(
            task, row(1), policy, limits=EpisodeLimits(timeout_s=10), tool_threads=pool
        )
        return await hung, healthy

    hung, healthy = asyncio.run(main())
    assert hung.stop_reason == "wall_clock" and pool.lost == 1
    assert healthy.stop_reason == "done", healthy.failures
    assert healthy.reward is not None and healthy.reward.total == 1.0
    pool.shutdown()


def test_the_run_episodes_pool_is_let_go_when_the_run_ends() -> None:
    before = {t.ident for t in threading.enumerate()}
    trajs = play(FetchTask(), [row(i) for i in range(4)], concurrency=4)
    assert [t.stop_reason for t in trajs] == ["done"] * 4
    assert wait_until(
        lambda: (
            not [
                t
                for t in threading.enumerate()
                if t.ident not in before and t.name.startswith("agentrft-tool-")
            ]
        )
    )


def test_pool_arguments_and_a_shut_pool_fail_clearly() -> None:
    with pytest.raises(ValueError, match="at least 1, got 0"):
        ToolThreads(0)
    pool = ToolThreads(2, name="shut-test")
    pool.shutdown()
    (traj,) = play(FetchTask(), [row(0)], tool_threads=pool)
    assert traj.failure_kinds[0] == "tool_exception"  # a reply to the model, not a crash
    assert "shut down" in traj.failures[0].detail


# --- through the AgentCore runtime app -------------------------------------------------------

JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/blocking-tools"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Static fake credentials, no profile, no metadata service; a fresh process session."""
    pytest.importorskip("bedrock_agentcore")
    from agentrft.backends.sagemaker.runtime import auth

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "RFT_RUNTIME_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-key-for-tests")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/agentrft-test")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    auth.reset_shared_session()
    yield
    auth.reset_shared_session()


class Served:
    """The runtime app for `task` under uvicorn on 127.0.0.1, with a loopback job runtime."""

    def __init__(self, task: Task[Any]) -> None:
        import uvicorn

        from agentrft.backends.sagemaker.runtime.app import build_app, openai_policy_factory
        from agentrft.backends.sagemaker.runtime.job_runtime import JobRuntimeReporter
        from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime

        self.jr = LoopbackJobRuntime(ScriptedPolicy(fetch_script))
        factory = functools.partial(openai_policy_factory, max_retries=1, backoff_base_s=0.01)
        reporter = JobRuntimeReporter(
            client_config={"retries": {"mode": "standard", "max_attempts": 1}}
        )
        self.app = build_app(task, policy_factory=factory, reporter=reporter)
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, log_level="error", lifespan="off"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Served:
        self.jr.start()
        self.thread.start()
        assert wait_until(lambda: self.server.started), "uvicorn did not start"
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        RELEASE.set()
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.jr.stop()

    def body(self, prompt: str, rollout: str) -> dict[str, Any]:
        meta = {"jobArn": JOB_ARN, "rolloutId": rollout, "endpoint": self.jr.endpoint}
        return {"prompt": prompt, "metadata": meta, "diagnose": True}

    def invoke(self, prompt: str, rollout: str) -> dict[str, Any]:
        import httpx

        resp = httpx.post(self.url + "/invocations", json=self.body(prompt, rollout), timeout=30)
        assert resp.status_code == 200
        return dict(resp.json())

    def ping(self) -> str:
        import httpx

        return str(httpx.get(self.url + "/ping", timeout=5).json()["status"])


def test_runtime_plays_blocking_sync_tools_of_concurrent_rollouts_at_once(aws: None) -> None:
    import httpx

    n = 8
    BARRIERS["all"] = threading.Barrier(n)

    async def fire(served: Served) -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=served.url, timeout=60) as client:
            return await asyncio.gather(
                *(
                    client.post("/invocations", json=served.body(row(i, barrier="all"), f"c{i}"))
                    for i in range(n)
                )
            )

    with Served(FetchTask()) as served:
        answers = [r.json() for r in asyncio.run(fire(served))]
    assert [a["reward"] for a in answers] == [1.0] * n, answers[0]["diagnostics"]
    assert all(a["diagnostics"]["stop_reason"] == "done" for a in answers)


def test_runtime_hung_tool_ends_its_rollout_while_others_keep_answering(aws: None) -> None:
    # Long enough a budget that the healthy rollouts below finish well inside it.
    with Served(FetchTask(timeout_s=3.0)) as served:
        hung: dict[str, Any] = {}
        caller = threading.Thread(
            target=lambda: hung.update(served.invoke(row(0, hang=True), "hung"))
        )
        caller.start()
        assert HANGING.wait(10), "the hung rollout never reached its tool"

        healthy = [served.invoke(row(i), f"ok{i}") for i in range(1, 4)]
        still_waiting = caller.is_alive()
        busy = served.ping()  # the hung rollout is still in flight
        caller.join(30)
        idle = served.ping()
        lost = served.app.runner.tool_threads.lost
        reported = {r.body["TrajectoryId"]: r.body["Rewards"] for r in served.jr.rewards}

    assert [a["reward"] for a in healthy] == [1.0] * 3
    assert still_waiting, "the healthy rollouts answered while the hung one was still running"
    assert hung["reward"] == LOWEST
    diag = hung["diagnostics"]
    assert diag["stop_reason"] == "wall_clock"
    assert [f.split(":")[0] for f in diag["failures"]] == ["wall_clock"]
    assert reported["hung"] == [LOWEST]
    assert (busy, idle) == ("HealthyBusy", "Healthy")  # not busy for ever: it can be recycled
    assert lost == 1  # its thread is given up (and replaced); only that thread is lost
