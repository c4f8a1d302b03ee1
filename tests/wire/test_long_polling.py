"""Long polling over both protocols: a waiting receive wakes for new messages, or times out.

Owns the WaitTimeSeconds and ReceiveMessageWaitTimeSeconds scenarios of the wire suite.
Must not import cqs.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any

from .conftest import Boto3Speaker, QuerySpeaker, Speaker, wait_for

# How much earlier than its wait an empty long poll may return (clock granularity).
EARLY_SLACK = 0.3


def long_polls_waiting(endpoint: str) -> float:
    """The server's `cqs_api_long_polls_waiting` gauge."""
    with urllib.request.urlopen(endpoint + "/metrics", timeout=10) as response:
        text = response.read().decode()
    return sum(
        float(line.split()[-1]) for line in text.splitlines()
        if line.startswith("cqs_api_long_polls_waiting")
    )


def send_later(
    speaker: Speaker, url: str, body: str, endpoint: str, polls: int = 1
) -> threading.Thread:
    """Send once `polls` more long polls than now wait on the server: the message arrives
    during the wait (an event, not a guess at how long a poll takes to start)."""
    before = long_polls_waiting(endpoint)

    def send() -> None:
        wait_for(lambda: long_polls_waiting(endpoint) >= before + polls, 10)
        speaker.send(url, body)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_waiting_receive_returns_when_a_message_arrives(
    speaker: Speaker, make_queue: Any, sqs: Any, cqs_endpoint: str
) -> None:
    """Wall clock: returning well before WaitTimeSeconds ends is what is checked."""
    url = make_queue()
    # The sender uses its own connection: the waiting receive holds the speaker's.
    sender = send_later(Boto3Speaker(sqs), url, "worth the wait", cqs_endpoint)
    started = time.monotonic()
    received = speaker.receive(url, wait_seconds=5)
    elapsed = time.monotonic() - started
    sender.join()
    assert [m.body for m in received] == ["worth the wait"]
    assert elapsed < 4.5, f"the receive waited {elapsed:.1f} s although a message came during it"


def test_waiting_receive_on_empty_queue_returns_nothing_after_the_wait(
    speaker: Speaker, make_queue: Any
) -> None:
    """Wall clock: a long poll's WaitTimeSeconds is what is measured."""
    url = make_queue()
    started = time.monotonic()
    received = speaker.receive(url, wait_seconds=2)
    elapsed = time.monotonic() - started
    assert received == []
    assert elapsed >= 2 - EARLY_SLACK, f"returned after {elapsed:.2f} s of a 2 s wait"


def test_waiting_receive_returns_at_once_when_messages_are_there(
    speaker: Speaker, make_queue: Any
) -> None:
    """Wall clock: returning well before WaitTimeSeconds ends is what is checked."""
    url = make_queue()
    speaker.send(url, "already here")
    started = time.monotonic()
    received = speaker.receive(url, wait_seconds=10)
    assert [m.body for m in received] == ["already here"]
    assert time.monotonic() - started < 5


def test_queue_wait_time_applies_when_receive_gives_none(speaker: Speaker, make_queue: Any) -> None:
    """Wall clock: the queue's ReceiveMessageWaitTimeSeconds is what is measured."""
    url = make_queue(ReceiveMessageWaitTimeSeconds=2)
    started = time.monotonic()
    received = speaker.receive(url)
    elapsed = time.monotonic() - started
    assert received == []
    assert elapsed >= 2 - EARLY_SLACK, f"returned after {elapsed:.2f} s; the queue waits 2 s"


def test_queue_wait_time_lets_a_plain_receive_catch_a_new_message(
    speaker: Speaker, make_queue: Any, sqs: Any, cqs_endpoint: str
) -> None:
    url = make_queue(ReceiveMessageWaitTimeSeconds=5)
    sender = send_later(Boto3Speaker(sqs), url, "caught", cqs_endpoint)
    received = speaker.receive(url)
    sender.join()
    assert [m.body for m in received] == ["caught"]


def test_receive_wait_of_zero_overrides_queue_wait_time(speaker: Speaker, make_queue: Any) -> None:
    """Wall clock: a short poll must not wait the queue's 5 s."""
    url = make_queue(ReceiveMessageWaitTimeSeconds=5)
    started = time.monotonic()
    received = speaker.receive(url, wait_seconds=0)
    elapsed = time.monotonic() - started
    assert received == []
    assert elapsed < 4, f"a short poll waited {elapsed:.1f} s, as if it used the queue's 5 s"


def test_waiting_receive_gets_a_delayed_message_when_it_becomes_due(
    speaker: Speaker, make_queue: Any
) -> None:
    """Wall clock: a 1 s delay ends during a real long poll (the shared server's clock)."""
    url = make_queue()
    speaker.send(url, "due soon", delay_seconds=1)
    received = speaker.receive(url, wait_seconds=8)
    assert [m.body for m in received] == ["due soon"]


def test_waiting_receive_gets_a_message_whose_visibility_timeout_ends(
    speaker: Speaker, make_queue: Any
) -> None:
    """Wall clock: a 1 s visibility timeout ends during a real long poll."""
    url = make_queue()
    speaker.send(url, "comes back")
    [first] = speaker.receive(url, wait_seconds=2, visibility_timeout=1)
    received = speaker.receive(url, wait_seconds=8)
    assert [m.message_id for m in received] == [first.message_id]


def test_two_waiting_receivers_share_messages_without_duplicates(
    make_queue: Any, sqs: Any, cqs_endpoint: str
) -> None:
    """Wall clock: the loser's 3 s wait must end empty, not with a duplicate."""
    url = make_queue()
    results: dict[str, list[str]] = {}

    def wait(name: str, speaker: Speaker) -> None:
        results[name] = [m.body for m in speaker.receive(url, wait_seconds=3)]

    waiters = [
        threading.Thread(target=wait, args=("query", QuerySpeaker(cqs_endpoint))),
        threading.Thread(target=wait, args=("json", Boto3Speaker(sqs))),
    ]
    sender = send_later(Boto3Speaker(sqs), url, "only one gets it", cqs_endpoint, polls=2)
    for thread in waiters:
        thread.start()
    sender.join()
    for thread in waiters:
        thread.join()
    delivered = results["query"] + results["json"]
    assert delivered == ["only one gets it"]
