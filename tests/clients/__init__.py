"""Unmodified SQS SDKs against a live cqs: each runs the scenario of scenario.py.

One module per SDK: test_boto3.py (current boto3, JSON), test_botocore_query.py (botocore
1.34.89, the last with SQS on the query protocol), test_aws_cli.py (the AWS CLI, with the
README's commands as written), test_js_sdks.py (AWS SDK for JavaScript v3 and v2),
test_go_sdk.py (AWS SDK for Go v2: the newest over JSON, and Debian's package over query),
test_rust_sdk.py (the AWS SDK for Rust). The Go and Rust drivers are built by
tests/fixtures/toolchains.py. kombu and Celery are tested with a real worker in
tests/wire/test_kombu_and_celery.py.
"""

import pytest

# The step checks live in scenario.py: show their failed comparisons as in a test module.
pytest.register_assert_rewrite("tests.clients.scenario")
