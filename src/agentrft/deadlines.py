"""Awaiting under a deadline: the agent loop's per-call timeouts, and hooks that may or may
not be async."""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["awaited", "within"]

T = TypeVar("T")


async def awaited(value: Any) -> Any:
    """`value`, awaited as often as it is awaitable (a sync reward may return a coroutine)."""
    while inspect.isawaitable(value):
        value = await value
    return value


async def within(awaitable: Awaitable[T], seconds: float) -> T:
    """`asyncio.wait_for` without its extra task on Python 3.11+ (the loop calls this per
    policy call and per tool call; the task costs ~20 us each). Raises `TimeoutError`."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(max(0.0, seconds)):
            return await awaitable
    return await asyncio.wait_for(awaitable, max(0.0, seconds))
