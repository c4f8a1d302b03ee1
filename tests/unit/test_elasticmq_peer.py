"""ElasticMQ as a benchmark peer (benchmarks/harness/elasticmq.py), its pure pieces: the pom
Maven resolves, the classpath Maven writes back, the elasticmq.conf of one start and the
command line. Pure: no Maven, no JVM (benchmarks/peer_throughput.py --servers elasticmq
starts the real server); and the usage error for a peer that is not installed.
"""

from __future__ import annotations

import argparse
import os
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from benchmarks.harness import elasticmq, peer_servers

POM = "{http://maven.apache.org/POM/4.0.0}"


def test_the_pom_depends_on_the_server_of_the_pinned_version_only() -> None:
    project = ElementTree.fromstring(elasticmq.pom_text("1.7.1"))
    dependencies = project.findall(f"{POM}dependencies/{POM}dependency")
    assert [
        (d.findtext(f"{POM}groupId"), d.findtext(f"{POM}artifactId"), d.findtext(f"{POM}version"))
        for d in dependencies
    ] == [("org.elasticmq", "elasticmq-server_2.13", "1.7.1")]
    assert project.findtext(f"{POM}packaging") == "pom"  # nothing of its own to build


def test_a_classpath_maven_wrote_gives_its_jars_in_order(tmp_path: Path) -> None:
    jars = [tmp_path / "org/elasticmq/elasticmq-server_2.13-1.7.1.jar",
            tmp_path / "org/scala-lang/scala-library-2.13.18.jar"]
    text = os.pathsep.join(str(jar) for jar in jars) + "\n"  # as written, a newline or not
    assert elasticmq.parse_classpath(text, "1.7.1") == jars


@pytest.mark.parametrize("text", ["", "\n", "/r/scala-library-2.13.18.jar",
                                  "/r/elasticmq-server_2.13-1.6.16.jar"])
def test_a_classpath_without_the_server_jar_of_the_version_is_refused(text: str) -> None:
    with pytest.raises(elasticmq.ElasticMQInstallError, match=re.escape("elasticmq-server_2.13-1.7.1.jar")):
        elasticmq.parse_classpath(text, "1.7.1")


def blocks(conf: str) -> dict[str, dict[str, str]]:
    """The `name { key = value ... }` blocks of a flat HOCON file (what config_text writes)."""
    found: dict[str, dict[str, str]] = {}
    for name, body in re.findall(r"^([\w-]+) \{\n(.*?)^\}", conf, re.M | re.S):
        pairs = (line.split("=", 1) for line in body.splitlines() if "=" in line)
        found[name] = {key.strip(): value.strip().strip('"') for key, value in pairs}
    return found


def test_the_config_binds_sqs_and_its_queue_urls_to_the_one_port_and_persists_nothing() -> None:
    conf = elasticmq.config_text(43210)
    found = blocks(conf)
    assert found["rest-sqs"] == {"enabled": "true", "bind-port": "43210",
                                 "bind-hostname": "127.0.0.1", "sqs-limits": "strict"}
    assert found["node-address"] == {"protocol": "http", "host": "127.0.0.1", "port": "43210",
                                     "context-path": ""}
    # No other listening port (statistics) and nothing written to disk.
    assert found["rest-stats"] == found["queues-storage"] == found["messages-storage"] == {
        "enabled": "false"}
    assert 'include classpath("application.conf")' in conf  # ElasticMQ's HTTP settings kept
    assert "generate-node-address = false" in conf


def test_the_command_runs_the_main_class_with_the_config_and_every_jar(tmp_path: Path) -> None:
    jars = [tmp_path / "a.jar", tmp_path / "b.jar"]
    config = tmp_path / "elasticmq.conf"
    command = elasticmq.server_command("java", jars, config)
    assert command == ["java", f"-Dconfig.file={config}", "-cp",
                       f"{jars[0]}{os.pathsep}{jars[1]}", "org.elasticmq.server.Main"]


def test_an_install_is_complete_only_with_every_jar_of_its_classpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(elasticmq.ElasticMQInstallError, match="benchmarks/install_elasticmq"):
        elasticmq.installed_classpath("1.7.1")
    home = elasticmq.elasticmq_home("1.7.1")
    assert home == tmp_path / "cqs" / "elasticmq-1.7.1"
    jars = [tmp_path / "elasticmq-server_2.13-1.7.1.jar", tmp_path / "config-1.4.6.jar"]
    home.mkdir(parents=True)
    (home / "classpath.txt").write_text(os.pathsep.join(map(str, jars)))
    jars[0].write_bytes(b"")
    with pytest.raises(elasticmq.ElasticMQInstallError, match="1 of ElasticMQ's jars are gone"):
        elasticmq.installed_classpath("1.7.1")
    jars[1].write_bytes(b"")
    assert elasticmq.installed_classpath("1.7.1") == jars


def test_a_peer_that_is_not_installed_is_a_usage_error_naming_its_installer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty cache: no ElasticMQ
    parser = argparse.ArgumentParser(prog="peer_throughput.py")
    offered = tuple(peer_servers.STARTERS)
    args = argparse.Namespace(servers="floor, elasticmq", localstack_python=tmp_path / "none")
    with pytest.raises(SystemExit) as exit_info:
        peer_servers.chosen_servers(parser, args, offered)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "ElasticMQ 1.7.1 is not installed" in error
    assert "run benchmarks/install_elasticmq, or leave elasticmq out of --servers" in error
    args.servers = "floor"
    assert peer_servers.chosen_servers(parser, args, offered) == ["floor"]
