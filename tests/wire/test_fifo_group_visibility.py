"""Which messages of a FIFO message group a receive serves while others of the group are in
flight, over both protocols.

The rule, as AWS documents and answers it: a group's messages are served in order up to its
first message in flight. A message whose visibility ran out (or was set to 0) is served
again even while a later message of its group stays in flight; messages after one in flight
wait for it. Sources: AWS's "FIFO queue delivery logic" page ("you can't receive additional
messages from the same message group ID in subsequent requests unless the currently received
messages are deleted, or they become visible again") and LocalStack's
`test_fifo_message_group_visibility_after_terminate_visibility_timeout`,
`..._after_change_message_visibility` and `..._after_partial_delete`, validated against
AWS. Both pages leave the order across groups open ("messages with different message group
IDs might arrive or be processed out of order"; AWS answered g2-m1 before g1-m1 where cqs
serves g1-m1 first), so these tests compare each group's own sequence only. Time is moved
with the test clock.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from tests.wire.conftest import Received, Speaker, SpokenQueue

Advance = Callable[[float], None]


@pytest.fixture
def fifo_queue(speaker: Speaker, spoken_queue: SpokenQueue) -> Callable[..., str]:
    def make(*messages: str) -> str:
        """A queue (VisibilityTimeout 30) holding `messages`, each named "<group>-<n>"."""
        url = spoken_queue(
            "fifo-groups-",
            {"ContentBasedDeduplication": "true", "VisibilityTimeout": "30"},
            fifo=True,
        )
        for body in messages:
            speaker.send(url, body, group_id=body.split("-")[0])
        return url

    return make


def by_group(received: Sequence[Received]) -> dict[str, list[str]]:
    """Bodies per group, in the order received (the order across groups is left open)."""
    groups: dict[str, list[str]] = {}
    for message in received:
        groups.setdefault(message.body.split("-")[0], []).append(message.body)
    return groups


def test_a_message_made_visible_again_is_served_while_a_later_one_of_its_group_is_in_flight(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue("g1-m1", "g1-m2", "g2-m1")
    held = speaker.receive(url, max_messages=2)
    assert [m.body for m in held] == ["g1-m1", "g1-m2"]
    speaker.change_visibility(url, held[0].receipt_handle, 0)
    # AWS (LocalStack's recorded test): ["g2-m1", "g1-m1"]; g1-m2 stays in flight.
    assert by_group(speaker.receive(url, max_messages=3)) == {"g1": ["g1-m1"], "g2": ["g2-m1"]}


def test_a_shortened_visibility_serves_that_message_again_after_it_runs_out(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue("g1-m1", "g1-m2", "g2-m1")
    held = speaker.receive(url, max_messages=2)
    speaker.change_visibility(url, held[0].receipt_handle, 5)
    advance(6)
    # AWS (LocalStack's recorded test, 1 s there): ["g2-m1", "g1-m1"]; g1-m2 has 24 s left.
    assert by_group(speaker.receive(url, max_messages=3)) == {"g1": ["g1-m1"], "g2": ["g2-m1"]}


def test_extending_the_later_message_lets_the_earlier_one_come_back_alone(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue("g1-m1", "g1-m2", "g1-m3", "g2-m1")
    held = speaker.receive(url, max_messages=2)
    assert [m.body for m in held] == ["g1-m1", "g1-m2"]
    speaker.change_visibility(url, held[1].receipt_handle, 120)
    advance(31)  # g1-m1's 30 s ran out; g1-m2 is hidden for 89 s more
    again = speaker.receive(url, max_messages=10)
    # g1-m1 again; g1-m3 waits behind g1-m2, which is still in flight.
    assert by_group(again) == {"g1": ["g1-m1"], "g2": ["g2-m1"]}
    for message in again:
        speaker.delete(url, message.receipt_handle)
    assert speaker.receive(url, max_messages=10) == []
    advance(90)  # g1-m2 back: the group goes on in order
    assert [m.body for m in speaker.receive(url, max_messages=10)] == ["g1-m2", "g1-m3"]


def test_extending_the_earlier_message_holds_the_later_one_back(
    speaker: Speaker, fifo_queue: Callable[..., str], advance: Advance
) -> None:
    url = fifo_queue("g1-m1", "g1-m2", "g2-m1")
    held = speaker.receive(url, max_messages=2)
    speaker.change_visibility(url, held[0].receipt_handle, 120)
    advance(31)  # g1-m2 is visible again, but g1-m1 before it is still in flight
    [other] = speaker.receive(url, max_messages=10)
    assert other.body == "g2-m1"
    speaker.delete(url, other.receipt_handle)
    assert speaker.receive(url, max_messages=10) == []
    advance(90)
    assert [m.body for m in speaker.receive(url, max_messages=10)] == ["g1-m1", "g1-m2"]


def test_deleting_the_first_of_two_received_messages_keeps_the_rest_of_the_group_waiting(
    speaker: Speaker, fifo_queue: Callable[..., str]
) -> None:
    url = fifo_queue("g1-m1", "g2-m1", "g1-m2", "g2-m2", "g1-m3", "g1-m4", "g3-m1")
    held = speaker.receive(url, max_messages=2)
    assert [m.body for m in held] == ["g1-m1", "g1-m2"]
    speaker.delete(url, held[0].receipt_handle)
    # AWS (LocalStack's recorded test): ["g2-m1", "g2-m2", "g3-m1"], nothing of group 1.
    assert by_group(speaker.receive(url, max_messages=10)) == {
        "g2": ["g2-m1", "g2-m2"], "g3": ["g3-m1"]
    }
