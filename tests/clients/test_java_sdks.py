"""The Java SQS clients against a live cqs, unmodified, at the versions java/pom.xml pins:
the AWS SDK for Java v2 (JSON protocol; its sync client, and its async client with several
long polls in flight at once), the AWS SDK for Java v1 (its newest 1.12 releases speak JSON
1.0 as well, observed on its requests), the Amazon SQS Java Messaging Library (JMS) and
Spring Cloud AWS SQS (an `@SqsListener` application).

java/ is one Maven module, compiled at most once per test run, outside the checkout: into
`${XDG_CACHE_HOME:-~/.cache}/cqs/java-clients/<digest of pom and sources>`, reused as it is
while the sources are unchanged, with Maven's local repository beside it
(`.../cqs/maven-repository`, shared with the embedded Cassandra's jars): offline when that
cache is warm, else Maven downloads what is missing first. One JVM then runs every driver
at once (each on its own queues) and prints one JSON line per step; the SDK v2 and v1 steps
are scenario.py's, each checked there, and the JMS, async and Spring steps are checked
here, every message id accounted for.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.clients import scenario
from tests.clients.conftest import MakePlan

JAVA = Path(__file__).resolve().parent / "java"
POM = JAVA / "pom.xml"
SCENARIO_DRIVERS = ("v2-sync", "v2-async", "v1")
PROTOCOLS = {"v2-sync": "json", "v2-async": "json", "v1": "json"}
CONCURRENT_POLLS = 8
CONCURRENT_POLL_WAIT = 10
JMS_MESSAGES = 30
# The first test carries the build (on a cold Maven cache, its download too) and the JVM run.
pytestmark = pytest.mark.timeout(900)

Plans = dict[str, dict[str, Any]]
Observed = dict[str, scenario.Observations]


def pinned(property_name: str) -> str:
    """A version java/pom.xml pins, by its property name."""
    found = re.search(rf"<{re.escape(property_name)}>([^<]+)</", POM.read_text())
    assert found is not None, property_name
    return found.group(1)


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cqs"


def sources_digest() -> str:
    """What the build depends on: the pom and every source file, by content."""
    digest = hashlib.sha256()
    for path in [POM, *sorted((JAVA / "src").rglob("*.java"))]:
        digest.update(path.relative_to(JAVA).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def maven_build(build: Path) -> None:
    """`mvn compile` of java/ into `build`, with the classpath of its jars in classpath.txt:
    offline first, online only for what a cold cache lacks."""
    mvn, javac = shutil.which("mvn"), shutil.which("javac")
    assert mvn and javac, "run ./scripts/bootstrap --test (Maven and a JDK)"
    command = [mvn, "-B", "-q", "--no-transfer-progress", "-f", str(POM),
               f"-Dmaven.repo.local={cache_root() / 'maven-repository'}",
               f"-Dcqs.build.directory={build}", "compile",
               "dependency:build-classpath", f"-Dmdep.outputFile={build / 'classpath.txt'}"]
    built = subprocess.run([mvn, "-o", *command[1:]], capture_output=True, text=True,
                           timeout=600)
    if built.returncode != 0:  # a cold cache: let Maven fetch what is missing
        built = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, (built.stdout + built.stderr)[-4000:]


@pytest.fixture(scope="session")
def java_classpath() -> str:
    """The classpath of java/'s classes and every jar they need, from the build of these
    sources in the cache, made now (once) unless it is complete and its jars are all there."""
    build = cache_root() / "java-clients" / sources_digest()
    complete = build / ".cqs-complete"

    def jars() -> list[str]:
        return (build / "classpath.txt").read_text().strip().split(os.pathsep)

    if not complete.is_file() or not all(Path(jar).is_file() for jar in jars()):
        complete.unlink(missing_ok=True)
        maven_build(build)
        complete.touch()
    return os.pathsep.join([str(build / "classes"), *jars()])


@pytest.fixture(scope="module")
def run(java_classpath: str, make_plan: MakePlan) -> tuple[Plans, Observed]:
    """Every driver in one JVM, at once; what each step of each driver observed."""
    plans: Plans = {
        "v2-sync": make_plan(),
        "v2-async": make_plan(concurrent_polls=CONCURRENT_POLLS,
                              concurrent_poll_wait=CONCURRENT_POLL_WAIT),
        "v1": make_plan(),
        "jms": make_plan(jms_messages=JMS_MESSAGES),
        "spring": make_plan(),
    }
    java = shutil.which("java")
    assert java
    done = subprocess.run([java, "-cp", java_classpath, "cqs.clients.Main", json.dumps(plans)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    observed: Observed = {name: {} for name in plans}
    for line in done.stdout.splitlines():
        if line.startswith('{"driver"'):
            record = json.loads(line)
            observed[record.pop("driver")][record["step"]] = record
    for name, steps in observed.items():
        assert "driver" not in steps, f"{name}: {steps.get('driver')}"
    return plans, observed


def step(observed: Observed, driver: str, name: str) -> dict[str, Any]:
    record = observed[driver].get(name)
    assert record is not None, f"{driver} reported nothing for {name!r}"
    assert "error" not in record, f"{driver} {name}: {record['error']}"
    return record


@pytest.mark.parametrize("driver", SCENARIO_DRIVERS)
def test_the_java_sdk_is_the_pinned_version_and_speaks_its_protocol(
    run: tuple[Plans, Observed], driver: str
) -> None:
    client = step(run[1], driver, "client")
    pinned_version = pinned("aws-java-sdk-v1.version" if driver == "v1" else "awssdk.version")
    assert client["version"] == pinned_version
    assert client["protocol"] == PROTOCOLS[driver]


@pytest.mark.parametrize("driver", SCENARIO_DRIVERS)
@pytest.mark.parametrize("name", scenario.STEPS)
def test_java_scenario_step(run: tuple[Plans, Observed], driver: str, name: str) -> None:
    plans, observed = run
    scenario.check(name, observed[driver], plans[driver])


def test_async_client_long_polls_in_flight_at_once_are_each_answered_by_a_send(
    run: tuple[Plans, Observed],
) -> None:
    record = step(run[1], "v2-async", "concurrent_long_polls")
    polls = record["polls"]
    assert len(record["sent"]) == CONCURRENT_POLLS
    received = Counter(message_id for poll in polls for message_id in poll["message_ids"])
    assert set(received) == set(record["sent"]), "every message sent went to a waiting poll"
    assert max(received.values()) == 1, "and to one poll only"
    assert all(len(poll["message_ids"]) == 1 for poll in polls)
    # Answered when the messages came, not when the wait ran out.
    assert all(poll["elapsed"] < CONCURRENT_POLL_WAIT - 1 for poll in polls)


def test_jms_producer_and_consumer_deliver_every_message_once_with_its_properties(
    run: tuple[Plans, Observed],
) -> None:
    record = step(run[1], "jms", "jms_send_receive")
    sent = {message_id: body for message_id, body in record["sent"]}
    assert len(sent) == JMS_MESSAGES
    received = Counter(delivery["id"] for delivery in record["received"])
    assert set(received) == set(sent) and max(received.values()) == 1
    for delivery in record["received"]:
        assert delivery["body"] == sent[delivery["id"]]
        number = int(delivery["body"].removeprefix("jms-"))
        assert (delivery["kind"], delivery["number"], delivery["even"]) == (
            "greeting", number, number % 2 == 0)
        assert (delivery["redelivered"], delivery["delivery_count"]) == (False, 1)
    assert record["counts_after"] == [0, 0], "AUTO_ACKNOWLEDGE deleted each message"


def test_jms_listener_with_client_acknowledge_gets_back_what_it_did_not_acknowledge(
    run: tuple[Plans, Observed],
) -> None:
    record = step(run[1], "jms", "jms_listener_client_acknowledge")
    assert record["listener_errors"] == []
    assert record["came_back"] and record["all_heard"]
    unacknowledged = [d for d in record["deliveries"] if d["body"] == "left-unacknowledged"]
    assert [(d["redelivered"], d["delivery_count"]) for d in unacknowledged[:2]] == [
        (False, 1), (True, 2)]
    assert len({d["id"] for d in unacknowledged}) == 1, "the same message, delivered again"
    sent = {message_id: body for message_id, body in record["sent"]}
    heard = Counter(d["id"] for d in record["deliveries"] if d["body"] != "left-unacknowledged")
    assert set(heard) == set(sent) and max(heard.values()) == 1, "each acknowledged once"
    assert record["counts_after"] == [0, 0]


def test_jms_fifo_queue_keeps_each_groups_order(run: tuple[Plans, Observed]) -> None:
    plans, observed = run
    record = step(observed, "jms", "jms_fifo")
    assert all(sequence for *_, sequence in record["sent"]), "each send has a sequence number"
    sent_ids = {message_id for _, _, message_id, _ in record["sent"]}
    assert {message_id for *_, message_id in record["received"]} == sent_ids
    for group, count in plans["jms"]["fifo_groups"].items():
        assert [body for g, body, _ in record["received"] if g == group] == [
            f"{group}-{n}" for n in range(count)]
    assert record["counts_after"] == [0, 0]


def test_spring_sqs_listener_receives_and_acknowledges_every_message(
    run: tuple[Plans, Observed],
) -> None:
    plans, observed = run
    record = step(observed, "spring", "spring_listener")
    assert record["spring_cloud_aws"] == pinned("spring-cloud-aws.version")
    assert record["spring_boot"] == pinned("spring-boot.version")
    assert record["failed"] == []
    sent = {message_id for message_id, _ in record["sent"]}
    assert len(sent) == 10 * plans["spring"]["batches"]
    assert record["all_heard"]
    assert set(record["deliveries"]) == sent, "every message sent reached the listener"
    assert set(record["deliveries"].values()) == {1}, "once: each acknowledged in time"
    assert record["counts_after"] == [0, 0], "acknowledged messages are deleted"

