"""Who a wake-up reaches among the long polls waiting on a queue (pure asyncio)."""

from __future__ import annotations

import asyncio

from cqs.service.long_poll import LongPollWaiters


async def settle() -> None:
    """Let every ready callback run: a wake-up, if it reached a waiter, has resolved it."""
    for _ in range(10):
        await asyncio.sleep(0)


async def start_waiters(
    waiters: LongPollWaiters, name: str, count: int, seconds: float = 5.0
) -> list[asyncio.Task[bool]]:
    tasks = []
    for _ in range(count):
        tasks.append(asyncio.ensure_future(waiters.wait(name, seconds)))
        await asyncio.sleep(0)  # registered in this order
    return tasks


async def test_a_wake_up_reaches_only_the_oldest_waiter() -> None:
    waiters = LongPollWaiters(recheck_seconds=60)
    tasks = await start_waiters(waiters, "q", 3)
    waiters.wake("q")
    assert await tasks[0] is True
    await settle()
    assert not tasks[1].done() and not tasks[2].done()
    assert waiters.waiting_on("q") == 2
    for task in tasks[1:]:
        task.cancel()
    await waiters.close()


async def test_a_full_batch_passes_the_wake_up_on_and_a_partial_one_does_not() -> None:
    waiters = LongPollWaiters(recheck_seconds=60)
    tasks = await start_waiters(waiters, "q", 2)
    waiters.pass_on("q", delivered=3, asked=10)
    waiters.pass_on("q", delivered=0, asked=10)
    await settle()
    assert not any(task.done() for task in tasks)
    waiters.pass_on("q", delivered=10, asked=10)
    assert await tasks[0] is True
    tasks[1].cancel()
    await waiters.close()


async def test_a_waiter_that_is_not_woken_times_out_and_leaves() -> None:
    """Times a real 50 ms wait: the timeout is the loop's clock, which is what is tested."""
    waiters = LongPollWaiters(recheck_seconds=60)
    assert await waiters.wait("q", 0.05) is False
    assert waiters.waiting == 0
    await waiters.close()


async def test_a_woken_waiter_whose_client_left_hands_the_wake_up_to_the_next() -> None:
    waiters = LongPollWaiters(recheck_seconds=60)
    tasks = await start_waiters(waiters, "q", 2)
    waiters.wake("q")
    tasks[0].cancel()  # woken, but cancelled before it could look at the queue
    assert await tasks[1] is True
    await waiters.close()


async def test_rechecks_wake_one_waiter_per_queue_without_any_announcement() -> None:
    """Rechecks run every 50 ms of the loop's clock: their period is what wakes these."""
    waiters = LongPollWaiters(recheck_seconds=0.05)
    on_a = await start_waiters(waiters, "a", 2)
    on_b = await start_waiters(waiters, "b", 1)
    assert await on_a[0] is True
    assert await on_b[0] is True
    assert await on_a[1] is True  # the next recheck
    await waiters.close()


async def test_ten_thousand_waiters_wake_one_per_wake_up_in_arrival_order() -> None:
    waiters = LongPollWaiters(recheck_seconds=60)
    tasks = [asyncio.ensure_future(waiters.wait(f"q{n % 100}", 30)) for n in range(10_000)]
    await asyncio.sleep(0)  # each task runs once, in creation order, and registers
    assert waiters.waiting == 10_000
    for n in range(10_000):
        waiters.wake(f"q{n % 100}")
    assert all(await asyncio.gather(*tasks))
    assert waiters.waiting == 0
    await waiters.close()
