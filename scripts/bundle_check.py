"""Build a task plugin's AgentCore bundle and play episodes through the built code.

Run by scripts/bundle_check.sh in the plugin's venv. Steps, each timed and printed:
1. `agentrft deploy --build-only` for Linux ARM64 (the real bundle: size, files, largest);
2. the same bundle for this machine (`--platform manylinux2014_x86_64`), unpacked from
   its zip;
3. its main.py started by the base CPython 3.11 with `-S` (no site-packages: only the
   bundle on PYTHONPATH, only static fake AWS credentials, bound to 127.0.0.1);
4. per task, `--rows` rows played through the runtime's HTTP contract: POST /invocations
   with a job payload whose endpoint is a loopback job runtime answering with the task's
   expert, and the first row again with a policy that only refuses; each reward that comes
   back must equal the same row played with the same policy in this venv;
5. the native libraries the server process mapped all come from the bundle or the base
   interpreter.

Downloads wheels (pip's cache makes a second run fast); needs no AWS account.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

JOB_ARN = "arn:aws:sagemaker:us-east-1:111122223333:job/AgentRFT/bundle-check"
LOCAL_PLATFORM = "manylinux2014_x86_64"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("distribution", help="the plugin's distribution, e.g. agentrft-bfcl")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--tasks", help="comma-separated (default: every task it provides)")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--rows", type=int, default=1, help="rows played per task")
    parser.add_argument("--skip-arm64", action="store_true", help="only the local-run check")
    parser.add_argument(
        "--reward",
        help="a named reward plugin: deploy --reward NAME bundles it, and the bundle must "
        "serve every episode with it (the venv's episodes are scored with it too)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set for the bundle's server and the venv's episodes alike; {fake_llm} in a value "
        "is the base URL of a loopback OpenAI-compatible server answering --fake-llm-reply "
        "(e.g. a task's simulated user: AGENTRFT_TAU2_USER_MODEL=openai/fake ...)",
    )
    parser.add_argument(
        "--fake-llm-reply",
        nargs=2,
        metavar=("FIRST", "THEN"),
        default=["Hi, I need help with my reservation.", "Thank you, that is all. ###STOP###"],
        help="what the fake LLM answers while the conversation it is sent has no assistant "
        "message yet, and after (a simulated user: an opening line, then a closing one)",
    )
    args = parser.parse_args()

    from agentrft.plugins import get_plugins

    plugins = get_plugins()
    sources = plugins.task_sources()
    tasks = (
        args.tasks.split(",")
        if args.tasks
        else [t for t, d in sources.items() if _norm(d) == _norm(args.distribution)]
    )
    if not tasks:
        sys.exit(f"bundle_check: {args.distribution} provides no task here (tasks: {sources})")
    spec = ",".join(tasks)
    print(
        f"[bundle_check] {args.distribution}: tasks {spec}, reward {args.reward or 'the tasks own'}"
    )
    args.workdir.mkdir(parents=True, exist_ok=True)

    figures: dict[str, Any] = {"distribution": args.distribution, "tasks": tasks}
    if not args.skip_arm64:
        figures["aarch64"] = build(spec, args.workdir / "aarch64", None, args.reward)
    local = build(spec, args.workdir / "x86_64", LOCAL_PLATFORM, args.reward)
    figures["x86_64"] = local
    unpacked = args.workdir / "x86_64" / "unpacked"
    shutil.rmtree(unpacked, ignore_errors=True)
    with zipfile.ZipFile(local["zip"]) as zf:
        zf.extractall(unpacked)
    for path in unpacked.rglob("*.so*"):  # zip entries keep 0o755 only for executables
        path.chmod(0o755)
    with _FakeLlm(args.fake_llm_reply, args.env) as extra_env:
        figures["episodes"], figures["foreign_libraries"], figures["startup_s"] = play(
            spec, tasks, unpacked, args.split, args.rows, extra_env, args.reward
        )
        figures["fake_llm_requests"] = extra_env.requests()
    for arch in ("aarch64", "x86_64"):
        if arch in figures:
            f = figures[arch]
            print(
                f"[bundle_check] {arch} largest (MB unpacked): {f['largest_mb']}; "
                f"{len(f['dist_infos'])} distributions"
            )
    if "aarch64" in figures:
        # pip evaluates transitive requirements' markers for this machine, not the target
        # (pypa/pip#10050), so the two resolutions can differ where a wheel is missing.
        arm, here = (_versions(figures[a]["dist_infos"]) for a in ("aarch64", "x86_64"))
        differ = {
            k: (arm.get(k), here.get(k)) for k in sorted({*arm, *here}) if arm.get(k) != here.get(k)
        }
        figures["aarch64_vs_x86_64"] = differ
        print(f"[bundle_check] versions that differ (aarch64, x86_64): {differ or 'none'}")
    (args.workdir / "figures.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(f"[bundle_check] figures in {args.workdir / 'figures.json'}")
    ok = all(
        (e["reward"], e["stop_in_bundle"]) == (e["in_venv"], e["stop_in_venv"])
        for e in figures["episodes"]
    )
    ok = ok and len({e["reward"] for e in figures["episodes"]}) > 1
    if args.reward:  # some episode the named reward scores apart from the task's own
        told = [e for e in figures["episodes"] if e["own_in_venv"] != e["in_venv"]]
        print(f"[bundle_check] episodes --reward {args.reward} scores apart from the task's own "
              f"reward: {len(told)} of {len(figures['episodes'])}")  # fmt: skip
        ok = ok and bool(told)
    ok = ok and not figures["foreign_libraries"]
    print(f"[bundle_check] {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


def _own_total(task: Any, prompt: str, make_policy: Any) -> float | None:
    """The same episode scored by the task's own reward (in this venv)."""
    from agentrft import run_episode, run_sync

    played = run_sync(run_episode(task, prompt, make_policy()))
    return played.reward.total if played.reward else None


def build(spec: str, workdir: Path, platform: str | None, reward: str | None) -> dict[str, Any]:
    """`agentrft deploy --build-only`; the zip's size, files and largest top-level entries."""
    shutil.rmtree(workdir, ignore_errors=True)
    cmd = [_agentrft(), "deploy", "--task", spec, "--build-only", "--workdir", str(workdir)]
    if platform:
        cmd += ["--platform", platform]
    if reward:
        cmd += ["--reward", reward]
    t0 = time.monotonic()
    out = subprocess.run(cmd, capture_output=True, text=True)
    took = time.monotonic() - t0
    if out.returncode != 0:
        print(out.stdout + out.stderr)
        sys.exit(f"bundle_check: the {platform or 'aarch64'} build failed (above)")
    (zip_path,) = workdir.glob("*.zip")
    stage = workdir / "bundle"
    sizes: dict[str, int] = {}
    for path in stage.rglob("*"):
        if path.is_file():
            top = path.relative_to(stage).parts[0]
            sizes[top] = sizes.get(top, 0) + path.stat().st_size
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:8]
    figures = {
        "zip": str(zip_path),
        "zip_mb": round(zip_path.stat().st_size / 1e6, 1),
        "unpacked_mb": round(sum(sizes.values()) / 1e6, 1),
        "files": sum(1 for p in stage.rglob("*") if p.is_file()),
        "build_s": round(took, 1),
        "largest_mb": {k: round(v / 1e6, 1) for k, v in largest},
        "dist_infos": sorted(p.name for p in stage.glob("*.dist-info")),
    }
    print(
        f"[bundle_check] {platform or 'manylinux2014_aarch64'}: {figures['zip_mb']} MB zip, "
        f"{figures['unpacked_mb']} MB unpacked, {figures['files']} files, {took:.0f} s"
    )
    return figures


def play(
    spec: str,
    tasks: list[str],
    bundle: Path,
    split: str,
    rows: int,
    extra_env: dict[str, str],
    reward: str | None = None,
) -> tuple[list[dict[str, Any]], list[str], float]:
    """Start the bundle's main.py in isolation and play `rows` rows of each task through it
    (with `reward`, main.py's own AGENTRFT_REWARD: the server must find it in the bundle)."""
    from agentrft import run_episode, run_sync
    from agentrft.backends.sagemaker.testing.loopback import LoopbackJobRuntime
    from agentrft.mixture import wrap_prompt
    from agentrft.plugins import get_plugins

    port = _free_port()
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(bundle.parent),
        "PYTHONPATH": str(bundle),
        "AGENTRFT_TASK": spec,
        "AGENTRFT_PORT": str(port),
        "AGENTRFT_BIND_ALL": "0",  # 127.0.0.1 only (main() binds 0.0.0.0 in AgentCore)
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLEEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "fake-secret-key-for-bundle-check",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_EC2_METADATA_DISABLED": "true",
        **extra_env,
    }
    probe = subprocess.run(
        [str(base), "-S", "-c", "import sys; print(sys.path)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"[bundle_check] server sys.path: {probe.stdout.strip()}")
    log = (bundle.parent / "server.log").open("w")
    t0 = time.monotonic()
    server = subprocess.Popen(
        [str(base), "-S", "main.py"], cwd=bundle, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        startup = round(_wait_ping(port, server, bundle.parent / "server.log") - t0, 1)
        print(f"[bundle_check] {base} -S main.py answered /ping after {startup} s")
        episodes = []
        plugins = get_plugins()
        for name in tasks:
            task = plugins.task(name)
            if task.expert() is None:
                sys.exit(f"bundle_check: task {name} has no expert to play with")
            played = [
                (row["prompt"], "expert", task.expert) for row in task.make_dataset(split, rows, 0)
            ]
            # and one episode that must land in a low tier: the reward is not always 1
            played.append((played[0][0], "refuser", _refuser))
            for i, (prompt, who, make_policy) in enumerate(played):
                with LoopbackJobRuntime(make_policy()) as jr:
                    body = {
                        "prompt": wrap_prompt(name, prompt) if "," in spec else prompt,
                        "metadata": {
                            "jobArn": JOB_ARN,
                            "rolloutId": f"{name}-{i}",
                            "endpoint": jr.endpoint,
                        },
                    }
                    t1 = time.monotonic()
                    answer = _post(port, body)
                    took = round(time.monotonic() - t1, 1)
                    chats = len(jr.chat)
                    reports = [r.path for r in jr.requests if r.path != "/v1/chat/completions"]
                scorer = plugins.reward(reward, name) if reward else None
                here = run_sync(
                    run_episode(plugins.task(name), prompt, make_policy(), reward_fn=scorer)
                )
                episode = {
                    "task": name,
                    "rollout_id": f"{name}-{i}",
                    "policy": who,
                    "row": prompt[:80],
                    "reward": answer.get("reward"),
                    "in_venv": here.reward.total if here.reward else None,
                    "tier_in_venv": here.reward.outcome if here.reward else None,
                    # With --reward: what the task's own reward gives the same episode, so
                    # the check can tell the named reward was the one the bundle used.
                    "own_in_venv": _own_total(plugins.task(name), prompt, make_policy)
                    if reward
                    else None,
                    "stop_in_venv": here.stop_reason,
                    "policy_calls": chats,
                    "reports": reports,
                    "seconds": took,
                }
                print(f"[bundle_check] episode {json.dumps(episode)[:300]}")
                episodes.append(episode)
        foreign = _foreign_libraries(server.pid, bundle, base)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    # The runtime answers a reward even when it fails: its log says how each rollout ended.
    text = (bundle.parent / "server.log").read_text()
    stops = dict(re.findall(r"rollout=(\S+) \|.*?\| stop=(\S+)", text))
    for e in episodes:
        e["stop_in_bundle"] = stops.get(e.pop("rollout_id"))
    if "Traceback" in text:
        foreign.append(f"a Traceback in {bundle.parent / 'server.log'}")
    return episodes, foreign, startup


class _FakeLlm(dict):  # type: ignore[type-arg]
    """The `--env` settings, with a loopback OpenAI-compatible server behind `{fake_llm}`;
    also set in this process, so the venv's episodes see the same."""

    def __init__(self, replies: list[str], pairs: list[str]) -> None:
        super().__init__()
        self.replies, self.pairs = replies, pairs
        self.server: Any = None
        self.saved: dict[str, str | None] = {}

    def answer(self, messages: list[Any], tools: Any) -> str:
        first, then = self.replies
        return then if any(m.role == "assistant" for m in messages) else first

    def __enter__(self) -> _FakeLlm:
        if any("{fake_llm}" in p for p in self.pairs):
            from agentrft.testing import FakeOpenAIServer

            self.server = FakeOpenAIServer(self.answer).start()
        for pair in self.pairs:
            key, _, value = pair.partition("=")
            if self.server is not None:
                value = value.replace("{fake_llm}", self.server.base_url)
            self[key] = value
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value
        return self

    def requests(self) -> int:
        return len(self.server.chat_requests) if self.server is not None else 0

    def __exit__(self, *exc: object) -> None:
        for key, old in self.saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        if self.server is not None:
            self.server.stop()


def _refuser() -> Any:
    from agentrft import ScriptedPolicy

    return ScriptedPolicy(lambda messages, tools: "Sorry, I cannot help with that.", "refuser")


def _foreign_libraries(pid: int, bundle: Path, base: Path) -> list[str]:
    """Shared objects the server mapped from outside the bundle and the interpreter's own
    installation (the system libc and friends are expected; site-packages are not)."""
    prefix = base.parent.parent
    allowed = (str(bundle), str(prefix), "/lib", "/usr/lib", "/lib64", "/usr/lib64")
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    paths = {line.split()[-1] for line in maps if line.split()[-1].startswith("/")}
    libs = sorted(p for p in paths if ".so" in p)
    foreign = [p for p in libs if not p.startswith(allowed) or "site-packages" in p]
    print(
        f"[bundle_check] server mapped {len(libs)} shared objects, "
        f"{sum(p.startswith(str(bundle)) for p in libs)} from the bundle, {len(foreign)} foreign"
    )
    return foreign


def _wait_ping(port: int, server: subprocess.Popen[bytes], log: Path) -> float:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            print(log.read_text()[-4000:])
            sys.exit(f"bundle_check: the bundle's main.py exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ping", timeout=2) as resp:
                if resp.status == 200:
                    return time.monotonic()
        except OSError:
            time.sleep(0.5)
    print(log.read_text()[-4000:])
    sys.exit("bundle_check: no /ping answer within 120 s")


def _post(port: int, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/invocations",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def _versions(dist_infos: list[str]) -> dict[str, str]:
    pairs = (d.removesuffix(".dist-info").rsplit("-", 1) for d in dist_infos)
    return {name.lower().replace("_", "-"): version for name, version in pairs}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _agentrft() -> str:
    return str(Path(sys.executable).with_name("agentrft"))


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


if __name__ == "__main__":
    raise SystemExit(main())
