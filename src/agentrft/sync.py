"""`run_sync`: run a coroutine from synchronous code (a sync hook that plays episodes)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result, from synchronous code.

    Sync hooks such as `Task.reward_samples` often play episodes, which are async
    (`run_episode`). Without a running event loop this is `asyncio.run`; inside one (an
    async test, a notebook, async code calling the hook) the coroutine runs on a fresh loop
    in a worker thread, so the caller's loop is never re-entered.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
