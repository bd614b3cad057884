"""The one agent loop. Every rollout everywhere (local training, evaluation, the AgentCore
runtime, `agentrft play`) goes through `run_episode`, so training and serving see identical
prompts, tool schemas, parsing, limits and rewards.

Nothing raises out of an episode: model faults, tool faults and reward bugs are recorded as
failure kinds and the episode still ends with a reward.

Sync tools run on worker threads (`agentrft.tool_threads`), async ones on the loop; both run
under the episode's wall-clock budget. `Task.parse`, `Environment.recover`, `on_text_reply`
and the reward run on the loop: they are meant to be quick, pure Python. A reward that
waits on a model (a judge, `agentrft.judges`) is `async def` and is awaited there, as are
an async `Environment.opening` / `on_text_reply` (a simulated user's turn, under the
episode's deadline).
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any, Literal, TypeVar

from agentrft import loop_watch
from agentrft.deadlines import awaited as _awaited
from agentrft.deadlines import within
from agentrft.environment_hooks import close_environment as _close_environment
from agentrft.environment_hooks import start_environment as _start_environment
from agentrft.messages import Message, ToolCall, tool_reply, user
from agentrft.policy import Completion, Policy, PolicyError, Sampling
from agentrft.reward import RewardResult, RewardValueError, checked_reward, reward_name
from agentrft.task import EpisodeLimits, Task, TaskInputError
from agentrft.tool_threads import ToolThreads, shared_tool_threads
from agentrft.trajectory import FailureKind, Trajectory, Turn

T = TypeVar("T")
#: A reward may be async (a judge reward awaits its model call on the loop).
RewardFn = Callable[[Any, Trajectory], "RewardResult | Awaitable[RewardResult]"]
EpisodeCallback = Callable[[Trajectory], Any]
#: The task of the episode whose policy session is being opened (`Task.task_of` of its row);
#: set only around `Policy.session()`, so it never leaks into another episode.
EPISODE_TASK: ContextVar[str | None] = ContextVar("agentrft_episode_task", default=None)


async def run_episode(
    task: Task[Any, Any],
    prompt: str,
    policy: Policy,
    *,
    sampling: Sampling | None = None,
    limits: EpisodeLimits | None = None,
    reward_fn: RewardFn | None = None,
    episode_id: str | None = None,
    metadata: dict[str, Any] | None = None,
    tool_threads: ToolThreads | None = None,
    curriculum_level: int = 0,
) -> Trajectory:
    """Play one episode of `task` on the row `prompt` with `policy`, to the end.

    `reward_fn(env, trajectory)` replaces the task's reward (a `--reward` plugin); either
    may be async (a judge reward). Sync
    tools run on `tool_threads` (default: the process-wide pool). A tool call still running
    at the deadline ends the episode with `wall_clock` and the lowest reward.
    `curriculum_level` > 0 plays the task's easier version of the row (`Task.curriculum`);
    the level is recorded in the trajectory's metadata.
    """
    sampling = sampling or Sampling()
    limits = limits or task.limits
    started = time.perf_counter()
    traj = Trajectory(
        id=episode_id or uuid.uuid4().hex[:16],
        task=task.name,
        prompt=prompt,
        sampling=sampling.model_dump(exclude_none=True),
        metadata=dict(metadata or {}),
    )
    if curriculum_level:
        traj.metadata["curriculum_level"] = curriculum_level
    try:
        instance = task.parse(prompt)
        if curriculum_level:
            instance = task.at_level(instance, curriculum_level)
    except Exception as exc:  # TaskInputError, or a parse bug in a plugin: never crash a job
        detail = str(exc) if isinstance(exc, TaskInputError) else f"{type(exc).__name__}: {exc}"
        traj.fail(FailureKind.BAD_INPUT, detail)
        traj.stop_reason = FailureKind.BAD_INPUT
        traj.reward = task.lowest_reward()
        traj.wall_s = time.perf_counter() - started
        return traj

    traj.instance_id = task.instance_id(instance)
    traj.task = task.task_of(instance)
    limits = task.limits_for(instance, limits)
    env = task.environment(instance)
    deadline = started + limits.timeout_s
    try:
        if not await _start_environment(env, deadline, limits, traj):
            traj.wall_s = time.perf_counter() - started
            traj.reward = task.lowest_reward()
            return traj
        await _play_and_score(
            task, env, instance, policy, sampling, limits, reward_fn, deadline, traj, tool_threads
        )
    finally:
        await _close_environment(env, traj)
    return traj


async def _play_and_score(
    task: Task[Any, Any],
    env: Any,
    instance: Any,
    policy: Policy,
    sampling: Sampling,
    limits: EpisodeLimits,
    reward_fn: RewardFn | None,
    deadline: float,
    traj: Trajectory,
    tool_threads: ToolThreads | None,
) -> None:
    """Play a started environment's episode to its end and score it (`traj.reward`)."""
    tools = env.tool_schemas()
    traj.tools = tools
    messages: list[Message] = task.initial_messages(instance)
    traj.messages = messages
    # The row's task is visible while the session opens: a policy that serves several
    # tasks (a mixture's experts, agentrft.mixture) picks the one for this episode.
    token = EPISODE_TASK.set(traj.task)
    try:
        session = policy.session()
    finally:
        EPISODE_TASK.reset(token)

    cut_off = await _play(
        env, session, messages, tools, sampling, limits, deadline, traj, tool_threads
    )

    for kind, detail in list(env.events):  # a copy: a given-up tool thread may still append
        traj.fail(kind, detail)
    traj.wall_s = time.perf_counter() - (deadline - limits.timeout_s)  # the play, not the reward
    if cut_off:
        # The environment stopped mid-call (and a sync tool may still be changing it on
        # its thread): there is no consistent state to score.
        traj.reward = task.lowest_reward()
        return
    await score_episode(
        task, reward_fn, env, traj, timeout_s=limits.timeout_s, threads=tool_threads
    )


async def score_episode(
    task: Task[Any, Any],
    reward_fn: RewardFn | None,
    env: Any,
    traj: Trajectory,
    *,
    timeout_s: float | None = None,
    threads: ToolThreads | None = None,
) -> None:
    """Set `traj.reward` from `reward_fn` (or the task's reward). A reward that raises, or
    returns anything but a `RewardResult` of finite numbers, gives the lowest tier and a
    `reward_error` failure naming the reward, the row and the value: one bad episode never
    stops a run, and the failure shows in every report.

    With `timeout_s`, the reward gets that long of its own (the episode's `timeout_s`, after
    the episode): a sync reward runs on a worker thread of `threads` (as sync tools do, so a
    blocking one holds no event loop), an async one under a timeout; past it, the lowest tier
    and a `reward_error` saying so (the thread is given up, as a hung tool's is).
    """
    fn = reward_fn or task.reward
    row = traj.instance_id or "?"
    try:
        if timeout_s is None or getattr(fn, INLINE_REWARD, False):
            result = fn(env, traj)
            if inspect.isawaitable(result):
                result = await result
        else:
            is_async = inspect.iscoroutinefunction(getattr(fn, "fn", fn))
            pool = threads if threads is not None else shared_tool_threads()
            with loop_watch.watch_loop().running(f"reward {reward_name(fn)}", traj.id) as running:
                call = fn(env, traj) if is_async else pool.run(fn, env, traj)
                result = await within(_awaited(call), timeout_s)
            if running.blocked_s >= loop_watch.BLOCK_LIMIT_S:
                raise RewardValueError(
                    f"reward {reward_name(fn)} on row {row} blocked the event loop for at "
                    f"least {running.blocked_s:.1f}s: an async def reward must await its I/O "
                    "(or be a plain def: it then runs on a worker thread)"
                )
        traj.reward = checked_reward(result, fn, row)
    except TimeoutError:
        traj.fail(
            FailureKind.REWARD_ERROR,
            f"reward {reward_name(fn)} on row {row} ran past limits.timeout_s ({timeout_s:g} s) "
            "and was given up",
        )
        traj.reward = task.lowest_reward()
    except Exception as exc:  # a reward bug gives the lowest tier, visibly
        detail = str(exc) if isinstance(exc, RewardValueError) else f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, RewardValueError):
            detail = f"reward {reward_name(fn)} on row {row} raised {detail}"
        traj.fail(FailureKind.REWARD_ERROR, detail)
        traj.reward = task.lowest_reward()


#: Set on a reward that only records what it is given and returns at once (group scoring's
#: placeholder): it runs inline, not on a worker thread, so it adds no scheduling point.
INLINE_REWARD = "__agentrft_inline_reward__"


async def _play(
    env: Any,
    session: Policy,
    messages: list[Message],
    tools: list[dict[str, Any]],
    sampling: Sampling,
    limits: EpisodeLimits,
    deadline: float,
    traj: Trajectory,
    tool_threads: ToolThreads | None,
) -> bool:
    """Play the turns; True when the deadline cut a tool call off."""
    try:
        messages.extend(await _user_turn(env.opening(), deadline))
    except (asyncio.TimeoutError, TimeoutError):
        traj.fail(FailureKind.WALL_CLOCK, f"episode exceeded {limits.timeout_s:g}s in opening")
        traj.stop_reason = FailureKind.WALL_CLOCK
        return False
    except Exception as exc:  # a user simulator's fault ends the episode, not the job
        traj.fail(FailureKind.USER_TURN_ERROR, f"opening: {type(exc).__name__}: {exc}")
        traj.stop_reason = FailureKind.USER_TURN_ERROR
        return False
    for turn_index in range(limits.max_turns):
        if env.done:
            traj.stop_reason = "done"
            return False
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            traj.fail(FailureKind.WALL_CLOCK, f"episode exceeded {limits.timeout_s:g}s")
            traj.stop_reason = FailureKind.WALL_CLOCK
            return False
        offered: list[dict[str, Any]] | None = None
        if getattr(env, "tools_changed", False):  # e.g. a function offered from this turn on
            env.tools_changed = False
            tools = offered = env.tool_schemas()
        t0 = time.perf_counter()
        try:
            completion: Completion = await within(
                session.complete(messages, tools, sampling), remaining
            )
        except PolicyError as exc:
            traj.fail(exc.kind, str(exc), turn_index)
            traj.stop_reason = exc.kind
            return False
        except (asyncio.TimeoutError, TimeoutError):
            traj.fail(FailureKind.WALL_CLOCK, f"episode exceeded {limits.timeout_s:g}s", turn_index)
            traj.stop_reason = FailureKind.WALL_CLOCK
            return False
        except Exception as exc:  # any client bug ends the episode, never the job
            traj.fail(FailureKind.POLICY_ERROR, f"{type(exc).__name__}: {exc}", turn_index)
            traj.stop_reason = FailureKind.POLICY_ERROR
            return False
        finally:
            traj.policy_s += time.perf_counter() - t0

        msg = completion.message
        messages.append(msg)
        turn = Turn(
            index=turn_index,
            assistant=msg,
            latency_s=time.perf_counter() - t0,
            tools=offered,
            **completion.reply_tokens(),
        )
        traj.turns.append(turn)
        if completion.finish_reason == "length":
            traj.fail(FailureKind.TRUNCATED, "the reply hit max_tokens", turn_index)
        elif completion.unterminated_call:
            traj.fail(
                FailureKind.UNTERMINATED_TOOL_CALL,
                "the reply opened a tool call and never closed it; it was read as text",
                turn_index,
            )

        calls = list(msg.tool_calls or [])
        recovered = False
        if not calls:
            text = (msg.content or "").strip()
            if not text:
                traj.fail(FailureKind.EMPTY_REPLY, "the model returned nothing", turn_index)
                traj.stop_reason = FailureKind.EMPTY_REPLY
                return False
            calls = _safe_recover(env, text, traj, turn_index)
            recovered = bool(calls)
            if not calls:
                try:
                    nudge = await _user_turn(env.on_text_reply(text), deadline)
                except (asyncio.TimeoutError, TimeoutError):
                    traj.fail(
                        FailureKind.WALL_CLOCK,
                        f"episode exceeded {limits.timeout_s:g}s in on_text_reply",
                        turn_index,
                    )
                    traj.stop_reason = FailureKind.WALL_CLOCK
                    return False
                except Exception as exc:  # a user simulator's fault ends the episode, not the job
                    traj.fail(
                        FailureKind.USER_TURN_ERROR, f"{type(exc).__name__}: {exc}", turn_index
                    )
                    traj.stop_reason = FailureKind.USER_TURN_ERROR
                    return False
                if nudge is None and env.done:  # the text was the answer (a text task)
                    traj.stop_reason = "done"
                    return False
                if nudge is None:
                    traj.fail(FailureKind.NO_TOOL_CALL, text[:200], turn_index)
                    traj.stop_reason = FailureKind.NO_TOOL_CALL
                    return False
                nudge_msg = user(nudge)
                messages.append(nudge_msg)
                turn.tool_messages.append(nudge_msg)
                continue

        t1 = time.perf_counter()
        stop = await _run_calls(
            env, calls, recovered, limits, deadline, traj, turn, messages, turn_index, tool_threads
        )
        traj.tool_s += time.perf_counter() - t1
        if stop:
            return stop == "cut_off"
    if env.done:
        traj.stop_reason = "done"
    else:
        traj.fail(FailureKind.MAX_TURNS, f"no end after {limits.max_turns} turns")
        traj.stop_reason = FailureKind.MAX_TURNS
    return False


async def _user_turn(result: T | Awaitable[T], deadline: float) -> T:
    """The value of an environment hook that may be async (`opening`, `on_text_reply`),
    awaited under the episode's deadline."""
    if inspect.isawaitable(result):
        return await within(result, deadline - time.perf_counter())
    return result


#: Why `_run_calls` stops an episode: an ordinary stop, or the deadline interrupted a call.
_Stop = Literal["stop", "cut_off"]


async def _run_calls(
    env: Any,
    calls: Sequence[ToolCall],
    recovered: bool,
    limits: EpisodeLimits,
    deadline: float,
    traj: Trajectory,
    turn: Turn,
    messages: list[Message],
    turn_index: int,
    tool_threads: ToolThreads | None,
) -> _Stop | None:
    """Execute the calls of one reply in order; why the episode must stop, else None."""
    for call in calls:
        if traj.tool_calls >= limits.max_tool_calls:
            traj.fail(FailureKind.MAX_TOOL_CALLS, f"more than {limits.max_tool_calls} tool calls")
            traj.stop_reason = FailureKind.MAX_TOOL_CALLS
            return "stop"
        traj.tool_calls += 1
        if recovered:
            traj.fail(FailureKind.PLAIN_TEXT_CALL, f"{call.name}({call.arguments})", turn_index)
        try:
            # The wall-clock budget covers tools too: a tool that hangs (async, or sync on
            # its thread) must not hold the episode (and the job) forever.
            with loop_watch.watch_loop().running(f"tool {call.name!r}", traj.id) as running:
                result = await within(
                    env.call_tool(call, threads=tool_threads), deadline - time.perf_counter()
                )
        except (asyncio.TimeoutError, TimeoutError):
            traj.fail(
                FailureKind.WALL_CLOCK,
                f"episode exceeded {limits.timeout_s:g}s in tool {call.name!r}",
                turn_index,
            )
            traj.stop_reason = FailureKind.WALL_CLOCK
            return "cut_off"
        if running.blocked_s >= loop_watch.BLOCK_LIMIT_S:
            # No deadline could fire while it held the loop: end the episode here.
            traj.fail(
                FailureKind.BLOCKED_LOOP,
                f"async tool {call.name!r} blocked the event loop for at least "
                f"{running.blocked_s:.1f}s (every episode on it waited): await its I/O, or "
                "make it a plain def so it runs on a worker thread",
                turn_index,
            )
            traj.stop_reason = FailureKind.BLOCKED_LOOP
            return "cut_off"
        if result.failure:
            traj.fail(result.failure, result.content[:200], turn_index)
        # A recovered call has no tool_call id to answer, so its result goes back as a user turn.
        reply = user(result.content) if recovered else tool_reply(call, result.content)
        messages.append(reply)
        turn.tool_messages.append(reply)
        if env.done:
            traj.stop_reason = "done"
            return "stop"
    return None


def _safe_recover(env: Any, text: str, traj: Trajectory, turn_index: int) -> list[ToolCall]:
    try:
        calls = env.recover(text) or []
    except Exception as exc:
        traj.fail(FailureKind.POLICY_ERROR, f"recover() raised {type(exc).__name__}: {exc}")
        return []
    for i, c in enumerate(calls):
        if not c.id:
            c.id = f"recovered_{turn_index}_{i}"
        c.recovered = True
    return calls


async def run_episodes(
    task: Task[Any, Any],
    prompts: Iterable[str],
    policy: Policy,
    *,
    sampling: Sampling | None = None,
    limits: EpisodeLimits | None = None,
    reward_fn: RewardFn | None = None,
    concurrency: int = 32,
    on_episode: EpisodeCallback | None = None,
    metadata: Callable[[int], dict[str, Any]] | None = None,
    tool_threads: ToolThreads | None = None,
    curriculum_level: int = 0,
) -> list[Trajectory]:
    """Play many episodes with at most `concurrency` in flight; results keep input order.
    Every episode plays at `curriculum_level` (see `run_episode`).

    Sync tools run on `tool_threads`; by default on a pool of `concurrency` threads made for
    this call (one per episode in flight, so a sync call never queues behind another).
    """
    prompts = list(prompts)
    concurrency = max(1, concurrency)
    sem = asyncio.Semaphore(concurrency)
    own_threads = tool_threads is None
    threads = ToolThreads(concurrency) if tool_threads is None else tool_threads
    results: list[Trajectory | None] = [None] * len(prompts)

    async def one(i: int, prompt: str) -> None:
        async with sem:
            traj = await run_episode(
                task,
                prompt,
                policy,
                sampling=sampling,
                limits=limits,
                reward_fn=reward_fn,
                metadata=metadata(i) if metadata else None,
                tool_threads=threads,
                curriculum_level=curriculum_level,
            )
        results[i] = traj
        if on_episode is not None:
            out = on_episode(traj)
            if isinstance(out, Awaitable):
                await out

    try:
        await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))
    finally:
        if own_threads:
            threads.shutdown()  # idle threads exit; a given-up one when its call returns
    return [r for r in results if r is not None]
