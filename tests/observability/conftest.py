"""Helpers of the observability tests: scraping `/metrics` with prometheus-client's parser,
reading the JSON endpoints, a boto3 client, and waiting for a condition."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import boto3
from botocore.config import Config
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

T = TypeVar("T")


@dataclass(frozen=True)
class Scrape:
    """One parsed `/metrics` answer."""

    samples: list[Sample]
    family_types: dict[str, str]

    def matching(self, name: str, **labels: str) -> list[Sample]:
        return [
            s for s in self.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
        ]

    def value(self, name: str, **labels: str) -> float:
        """The sum of the series called `name` whose labels include `labels`; 0 if none."""
        return sum(s.value for s in self.matching(name, **labels))

    def names(self) -> set[str]:
        return {s.name for s in self.samples}


def scrape(endpoint: str) -> Scrape:
    with urllib.request.urlopen(endpoint + "/metrics", timeout=30) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    samples: list[Sample] = []
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        samples.extend(family.samples)
    return Scrape(samples, types)


def get_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def sqs_client(endpoint: str) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40),
    )


def wait_for(check: Callable[[], T | None], what: str, timeout: float = 30.0) -> T:
    """Poll `check` until it returns something truthy; fail naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
