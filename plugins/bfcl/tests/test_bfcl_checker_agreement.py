"""Our environment and reward against BFCL's own code, on the same behaviour.

- A sample of trajectories (the expert, truncated, wrong arguments, one wrong turn, a turn
  skipped, malformed JSON, unknown tools, calls split over steps, extra calls) is scored by
  our reward and, independently, by BFCL's `multi_turn_checker` on what the policy sent
  (decoded with BFCL's `convert_to_function_call`, undecodable steps skipped as BFCL's
  eval runner does). The verdicts must be equal for every turn prefix.
- The environment's tool replies equal BFCL's `execute_multi_turn_func_call` on the same
  calls, and its tool schemas are BFCL's `convert_to_tool` output.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from agentrft_bfcl import BfclMultiTurnTask, suite
from agentrft_bfcl.expert import DONE, expert_policy, expert_step, ground_truth_call
from agentrft_bfcl.task import truncated_expert, wrong_argument_policy
from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
from bfcl_eval.constants.enums import ModelStyle
from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
from bfcl_eval.model_handler.utils import convert_to_function_call, convert_to_tool
from bfcl_testing import Recorder, row, task_for

from agentrft import ScriptedPolicy, ToolCall, call, run_episode

ENTRIES = [
    "multi_turn_base_0",
    "multi_turn_base_2",
    "multi_turn_base_7",
    "multi_turn_base_31",
    "multi_turn_base_77",
    "multi_turn_base_104",
    "multi_turn_base_150",
    "multi_turn_base_188",
    # long_context: 29 asks what base_29 asks with another ground truth; 105 a turn of its
    # own; 163 travel booking with the long records
    "multi_turn_long_context_11",
    "multi_turn_long_context_29",
    "multi_turn_long_context_105",
    "multi_turn_long_context_163",
    # miss_param: the turn without ground truth at 3, 0 (first), 1, and at 1, 4 and 5
    "multi_turn_miss_param_0",
    "multi_turn_miss_param_2",
    "multi_turn_miss_param_7",
    "multi_turn_miss_param_180",
    # miss_func: sort held out to turn 3; tail, wc and cat to 3 (the ground truth calls tail
    # in turn 1); the first turn has no ground truth; travel and ticket APIs
    "multi_turn_miss_func_0",
    "multi_turn_miss_func_49",
    "multi_turn_miss_func_142",
    "multi_turn_miss_func_190",
]


def _user_turn(messages: list[Any]) -> int:
    return sum(1 for m in messages if m.role == "user") - 1


def _wrong_on_turn(turn: int, category: str) -> ScriptedPolicy:
    wrong = wrong_argument_policy(category)
    return ScriptedPolicy(
        lambda m, t: wrong.fn(m, t) if _user_turn(m) == turn else expert_step(m, t, category),
        name=f"wrong_turn_{turn}",
    )


def _skip_turn(turn: int, category: str) -> ScriptedPolicy:
    return ScriptedPolicy(
        lambda m, t: DONE if _user_turn(m) == turn else expert_step(m, t, category),
        name=f"skip_turn_{turn}",
    )


def _malformed_first(category: str) -> ScriptedPolicy:
    """Each turn starts with a step whose JSON does not parse, then plays the expert."""

    def step(m: list[Any], t: list[dict]) -> Any:
        if m[-1].role == "user":
            return [ToolCall(id="", name="ls", arguments='{"a": tru')]
        if m[-1].role == "tool" and "not valid JSON" in (m[-1].content or ""):
            return expert_step(m[:-2], t, category)
        return expert_step(m, t, category)

    return ScriptedPolicy(step, name="malformed_first")


def _early_on_empty_turns(entry: suite.Entry) -> ScriptedPolicy:
    """On a turn whose ground truth is empty (a parameter or a function is missing),
    guesses: plays the next turn's ground truth there (in miss_func that calls the function
    not offered yet, which BFCL's executor runs), then the expert. BFCL leaves that turn
    unchecked; the next turn is checked on the state the guess left."""
    empty = {k for k, g in enumerate(entry.ground_truth) if not g}

    def step(m: list[Any], t: list[dict]) -> Any:
        turn = _user_turn(m)
        if turn in empty and turn + 1 < len(entry.ground_truth) and m[-1].role == "user":
            return [ground_truth_call(entry, s) for s in entry.ground_truth[turn + 1]]
        return expert_step(m, t, entry.category)

    return ScriptedPolicy(step, name="early_on_empty_turns")


def _unknown_and_extra(category: str) -> ScriptedPolicy:
    """An unknown tool and an extra harmless call before each turn's expert calls."""

    def step(m: list[Any], t: list[dict]) -> Any:
        out = expert_step(m, t, category)
        if isinstance(out, str):
            return out
        names = {(x.get("function") or x)["name"] for x in t}
        extra = [call("no_such_tool", {"x": 1})]
        if "pwd" in names:
            extra.append(call("pwd", {}))
        return extra + out

    return ScriptedPolicy(step, name="unknown_and_extra")


def _one_call_per_step(category: str) -> ScriptedPolicy:
    """The expert's calls one per step (BFCL's decoded list then has several steps)."""

    def step(m: list[Any], t: list[dict]) -> Any:
        turn_start = max(i for i, x in enumerate(m) if x.role == "user")
        sent = sum(len(x.tool_calls or []) for x in m[turn_start:] if x.role == "assistant")
        plan = expert_step(m[: turn_start + 1], t, category)
        if isinstance(plan, str) or sent >= len(plan):
            return DONE
        return [plan[sent]]

    return ScriptedPolicy(step, name="one_call_per_step")


def _policies(entry: suite.Entry) -> list[ScriptedPolicy]:
    category, n_turns = entry.category, len(entry.ground_truth)
    out = [
        expert_policy(category),
        wrong_argument_policy(category),
        _malformed_first(category),
        _unknown_and_extra(category),
        _one_call_per_step(category),
    ]
    out += [truncated_expert(k, category) for k in range(1, n_turns)]
    out += [_wrong_on_turn(1, category), _skip_turn(n_turns - 1, category)]
    if not all(entry.ground_truth):
        out.append(_early_on_empty_turns(entry))
    return out


def _bfcl_prefix_verdicts(
    entry: suite.Entry, steps: dict[int, list[list[tuple[str, str]]]]
) -> list[bool]:
    """BFCL's own pipeline on what the policy sent: decode each step, skip failures and
    empty ones (eval_runner), then multi_turn_checker on every prefix of the turns."""
    decoded: list[list[list[str]]] = []
    for t in range(len(entry.ground_truth)):
        turn = []
        for s in steps.get(t, []):
            try:
                d = convert_to_function_call([{name: args} for name, args in s])
            except Exception:
                continue
            if d:
                turn.append(d)
        decoded.append(turn)
    verdicts = []
    for k in range(1, len(entry.ground_truth) + 1):
        result = multi_turn_checker(
            decoded[:k],
            [list(g) for g in entry.ground_truth[:k]],
            entry.raw,
            entry.category,
            f"oracle_{uuid.uuid4().hex}",
        )
        verdicts.append(bool(result["valid"]))
    return verdicts


async def test_our_reward_and_bfcls_checker_agree_turn_by_turn() -> None:
    outcomes: dict[str, int] = {}
    per_category: dict[str, int] = {}
    compared = 0
    for entry_id in ENTRIES:
        entry = suite.entry(entry_id)
        task = task_for(entry_id)
        n = len(entry.ground_truth)
        for policy in _policies(entry):
            rec = Recorder(policy)
            traj = await run_episode(task, row(entry_id), rec)
            assert traj.reward is not None
            passed = int(traj.reward.components["turns_passed"])
            theirs = _bfcl_prefix_verdicts(entry, rec.steps)
            ours = [k < passed for k in range(n)]
            assert ours == theirs, (entry_id, policy.name, ours, theirs)
            assert traj.reward.solved == all(theirs)
            outcomes[traj.reward.outcome] = outcomes.get(traj.reward.outcome, 0) + 1
            per_category[entry.category] = per_category.get(entry.category, 0) + 1
            compared += 1
    assert compared >= 180, compared
    assert min(per_category.values()) >= 30 and len(per_category) == 4, per_category
    # the sample is not only experts: every graded tier shows up
    assert set(outcomes) >= {"all_turns_pass", "some_turns_pass", "no_turn_passes"}, outcomes
    assert outcomes["some_turns_pass"] >= 20


def _schema(tool: dict[str, Any]) -> dict[str, Any]:
    """A BFCL tool as agentrft's schema carries it (BFCL also sends each doc's `response`)."""
    fn = tool["function"]
    return {
        "type": tool["type"],
        "function": {k: fn[k] for k in ("name", "description", "parameters")},
    }


def test_every_method_bfcl_runs_is_documented() -> None:
    """The environment runs documented functions only; BFCL's executor runs any public
    method of the entry's classes. They are the same names in every entry (miss_func's
    held-out ones counted), so nothing BFCL would run is refused here."""
    for category in suite.CATEGORIES:
        for e in suite.entries(category).values():
            methods = set(suite.public_methods(suite.load_instances(e)))
            assert methods == suite.callable_names(e.id), e.id


@pytest.mark.parametrize("entry_id", ENTRIES)
async def test_tool_replies_and_schemas_are_bfcls(entry_id: str) -> None:
    entry = suite.entry(entry_id)
    task = task_for(entry_id)
    # as BFCL's inference decides it from the id (base_handler.inference_multi_turn_FC)
    category = entry_id.rsplit("_", 1)[0]
    long_context = "long_context" in category or "composite" in category
    # BFCL's FC loop: the entry's function docs; at a miss_func holdout turn the held-out
    # docs are appended and the tools recompiled, and the empty turn asks its default prompt
    bfcl_entry = copy.deepcopy(entry.raw)
    holdout = bfcl_entry.get("missed_function", {})
    want_tools: list[list[dict[str, Any]]] = []
    want_prompts: list[str] = []
    for k, question in enumerate(bfcl_entry["question"]):
        if str(k) in holdout:
            bfcl_entry["function"].extend(holdout[str(k)])
            assert question == []
            question = [{"role": "user", "content": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}]
        tools = convert_to_tool(
            bfcl_entry["function"], GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS
        )
        want_tools.append([_schema(t) for t in tools])
        want_prompts.append("\n\n".join(m["content"] for m in question))
    env = task.environment(task.parse(row(entry_id)))
    assert env.tool_schemas() == want_tools[0]

    for policy in (task.expert(), wrong_argument_policy(task.category)):
        rec = Recorder(policy)
        traj = await run_episode(task, row(entry_id), rec)
        for messages, tools in rec.seen:
            asked = [m.content for m in messages if m.role == "user"]
            assert asked == want_prompts[: len(asked)]
            assert tools == want_tools[len(asked) - 1], (entry_id, len(asked) - 1)
        ours = [m.content for m in traj.messages if m.role == "tool"]
        theirs: list[str] = []
        name = f"oracle_{uuid.uuid4().hex}"  # one set of BFCL instances for the whole episode
        for t in sorted(rec.steps):
            for s in rec.steps[t]:
                results, _ = execute_multi_turn_func_call(
                    convert_to_function_call([{c: a} for c, a in s]),
                    entry.raw["initial_config"],
                    list(entry.involved_classes),
                    name,
                    entry_id,
                    long_context=long_context,
                    is_evaL_run=False,
                )
                theirs.extend(results)
        assert ours == theirs and ours, (entry_id, policy.name)
        assert json.dumps(ours)  # plain strings, as BFCL sends them


async def test_calls_the_checker_would_eval_as_code_run_nothing(
    task: BfclMultiTurnTask, tmp_path: Path
) -> None:
    """BFCL's checker evals call strings built from the model's names and keys. A call to
    a builtin (`open(file=..., mode='w')` truncates a file) or a key carrying code must not
    run: they reach the checker as an undefined name, and the verdict is BFCL's anyway."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    marker = tmp_path / "marker"
    injected = f"a=__import__('pathlib').Path({str(marker)!r}).touch(),b"
    hostile = [
        call("open", {"file": str(victim), "mode": "w"}),
        call("__import__", {"name": "os"}),
        call("ls", {injected: 1}),
    ]

    def step(m: list[Any], t: list[dict]) -> Any:
        out = expert_step(m, t)
        return hostile + out if not isinstance(out, str) else out

    rec = Recorder(ScriptedPolicy(step, name="hostile"))
    traj = await run_episode(task, row("multi_turn_base_0"), rec)
    assert victim.read_text() == "keep me" and not marker.exists()
    assert traj.reward is not None and traj.reward.solved  # the expert's calls still count
    expert_calls = sum(len(t) for t in suite.entry("multi_turn_base_0").ground_truth)
    assert traj.reward.components["calls"] == expert_calls  # the refused ones do not count

    silent = Recorder(
        ScriptedPolicy(lambda m, t: hostile if m[-1].role == "user" else DONE, name="only_hostile")
    )
    traj = await run_episode(task, row("multi_turn_base_0"), silent)
    assert victim.read_text() == "keep me" and not marker.exists()
    assert traj.reward is not None and traj.reward.outcome == "no_valid_call"


async def test_scoring_leaves_no_instances_in_bfcls_module_globals(task: BfclMultiTurnTask) -> None:
    """BFCL's executor keeps its instances in multi_turn_utils' globals; a training run
    scores thousands of episodes, so each check removes its own."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    before = set(vars(multi_turn_utils))
    for policy in (task.expert(), wrong_argument_policy(), truncated_expert(2)):
        traj = await run_episode(task, row("multi_turn_base_0"), policy)
        assert traj.reward is not None and traj.reward.components["turns"] == 4
    assert set(vars(multi_turn_utils)) - before == set()
