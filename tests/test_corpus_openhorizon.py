"""Open Horizon's examples repository, as its users have it (issue 38): every folder of the
corpus (../shared/corpora/openhorizon-examples, see tests/corpora.py) that holds a service
definition, through `placed validate`.

Each folder either validates (exit 0 or 1), alone or given with the folders that define the
services it requires (as hzn finds them in the exchange), or is refused for a reason hzn
would refuse it for, listed below with that reason.

The environment is what the examples' Makefiles export before they run hzn: ARCH for every
folder (`export ARCH ?= $(shell hzn architecture)`), and the variables a few Makefiles set
themselves (MAKEFILE_ENVIRONMENT). Each folder's other variables come from its hzn.json."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from placed.cli.main import EXIT_INVALID, app
from placed.spec import hzn_config

from .corpora import require

ARCH = "amd64"
# What the Makefile of a folder exports besides ARCH (examples commit 9141653).
MAKEFILE_ENVIRONMENT: dict[str, dict[str, str]] = {
    # VERSION:='1.0.0' ... export VERSION=$(VERSION); ... envsubst (service-publish)
    "services/speedtest/horizon": {"VERSION": "1.0.0"},
    "wiotp/speedtest2wiotp/horizon": {"VERSION": "1.0.0"},
    # edge/wiotp/cpu2wiotp/Makefile: export CPU2WIOTP_NAME, CPU2WIOTP_VERSION, MYDOMAIN;
    # HZN_ORG_ID is the user's own (hzn exchange needs it or -o).
    **{
        f"wiotp/cpu2wiotp/{name}": {
            "CPU2WIOTP_NAME": "cpu2wiotp",
            "CPU2WIOTP_VERSION": "1.2.2",
            "MYDOMAIN": "internetofthings.ibmcloud.com",
            "HZN_ORG_ID": "IBM",
        }
        for name in ("horizon.service", "horizon.service.mac", "horizon.service.no-core-iot")
    },
}


@dataclass(frozen=True)
class Reads:
    """Validates alone (exit 0 or 1)."""


@dataclass(frozen=True)
class Requires:
    """Refused alone because it requires `service`, which another folder defines; reads
    when given with the others (hzn finds it in the exchange)."""

    service: str


@dataclass(frozen=True)
class Refused:
    """Refused (exit 2) with `message`, for `why`: what hzn does with the same folder."""

    message: str
    why: str


_OLD_FORMAT = (
    "a format hzn has not read since 2018",
    "hzn has had no `exchange microservice` or `exchange workload` since anax e7fbc8d0",
)

EXPECTED: dict[str, Reads | Requires | Refused] = {
    "evtstreams/cpu2evtstreams/horizon": Requires("IBM/ibm.cpu"),
    "evtstreams/sdr2evtstreams/horizon": Requires("IBM/ibm.gps"),
    "evtstreams/watson_speech2text/horizon": Requires("IBM/ibm.mqtt"),
    "services/audio2text/horizon": Requires("IBM/ibm.mqtt"),
    "services/cpu_percent/horizon": Reads(),
    "services/fft_client/horizon": Requires("testorg/ibm.volantmq"),
    "services/fft_server/horizon": Requires("testorg/ibm.volantmq"),
    "services/gps/horizon": Reads(),
    "services/helloMMS/horizon": Reads(),
    "services/helloSecretWorld/horizon": Reads(),
    "services/helloworld/horizon": Reads(),
    "services/hotword_detection/horizon": Requires("IBM/ibm.mqtt"),
    "services/mqtt2kafka/horizon": Requires("IBM/ibm.mqtt"),
    "services/mqtt_broker/horizon": Reads(),
    # Its ../operator.tar.gz is not in the corpus (JSON only): read as hzn deploycheck
    # reads it, without the archive, with an operator-archive-missing warning.
    "services/nginx-operator/horizon": Reads(),
    "services/pi3_streamer/horizon": Refused(*_OLD_FORMAT),
    "services/processtext/horizon": Requires("IBM/ibm.mqtt"),
    "services/sdr/horizon": Reads(),
    "services/speedtest/horizon": Reads(),
    "services/stopword_removal/horizon": Reads(),
    "services/text2speech/horizon": Requires("IBM/ibm.mqtt"),
    "services/voice2audio/horizon": Requires("IBM/ibm.mqtt"),
    "services/volantmq/horizon": Reads(),
    "services/weatherstation/horizon": Refused(*_OLD_FORMAT),
    "wiotp/cpu2wiotp/horizon": Refused(*_OLD_FORMAT),
    "wiotp/cpu2wiotp/horizon/pattern": Refused(*_OLD_FORMAT),
    "wiotp/cpu2wiotp/horizon/pre-signed": Refused(*_OLD_FORMAT),
    "wiotp/cpu2wiotp/horizon.service": Refused(
        "requires IBM/https://internetofthings.ibmcloud.com/wiotp-edge/services/core-iot 2.4.0",
        "it requires Watson IoT's core-iot, which only IBM's exchange held, and a cpu service "
        "at a URL no example defines; hzn exchange service publish resolves both first "
        "(common/service_file.go ValidateService)",
    ),
    "wiotp/cpu2wiotp/horizon.service.mac": Refused(
        "requires IBM/https://internetofthings.ibmcloud.com/wiotp-edge/services/core-iot-mac",
        "as horizon.service, with core-iot-mac",
    ),
    "wiotp/cpu2wiotp/horizon.service.no-core-iot": Refused(
        "requires IBM/https://internetofthings.ibmcloud.com/services/ [0.0.0,INFINITY)",
        "it requires the cpu service at https://$MYDOMAIN/services/$CPU_NAME, which no example "
        "defines (nor its Makefile's variables); hzn exchange service publish resolves it first",
    ),
    "wiotp/netspeed2wiotp/horizon": Refused(*_OLD_FORMAT),
    "wiotp/netspeed2wiotp/horizon/pattern": Refused(*_OLD_FORMAT),
    "wiotp/pi3streamer2wiotp/horizon": Refused(*_OLD_FORMAT),
    "wiotp/pws2wiotp/horizon": Refused(*_OLD_FORMAT),
    "wiotp/speedtest2wiotp/horizon": Reads(),
}


@pytest.fixture
def edge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The corpus's edge/ folder, read with an empty home and no system hzn files."""
    root = require("openhorizon-examples") / "edge"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(hzn_config, "PACKAGE_CONFIG", tmp_path / "none" / "hzn.json")
    monkeypatch.setattr(hzn_config, "DEFAULTS_FILE", tmp_path / "none" / "horizon")
    names = {name for values in MAKEFILE_ENVIRONMENT.values() for name in values}
    for name in (*names, "SERVICE_NAME", "SERVICE_VERSION", hzn_config.DONT_SUBSTITUTE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARCH", ARCH)
    yield root


def _validate(
    monkeypatch: pytest.MonkeyPatch, edge: Path, *folders: str, command: str = "validate"
) -> Result:
    with monkeypatch.context() as scoped:
        for name in folders:
            for variable, value in MAKEFILE_ENVIRONMENT.get(name, {}).items():
                scoped.setenv(variable, value)
        result = CliRunner().invoke(app, [command, *(str(edge / name) for name in folders)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def _definition_folders(edge: Path) -> set[str]:
    """Every folder of the corpus holding a service definition, in any of hzn's formats:
    today's (url, version), or the workload and microservice definitions of before 2018
    (and those patterns' workload references)."""
    found = set()
    for path in edge.rglob("*.json"):
        data = json.loads(hzn_config.blank_comments(path.read_text(encoding="utf-8")))
        if isinstance(data, dict) and (
            {"url", "version"} <= set(data)
            or "workloadUrl" in data
            or {"specRef", "workloads"} <= set(data)
        ):
            found.add(str(path.parent.relative_to(edge)))
    return found


def test_every_folder_with_a_service_definition_is_listed(edge: Path) -> None:
    assert _definition_folders(edge) == set(EXPECTED)


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_each_folder_alone(folder: str, edge: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = EXPECTED[folder]
    result = _validate(monkeypatch, edge, folder)
    if isinstance(expected, Reads):
        assert result.exit_code in (0, 1), result.output
    elif isinstance(expected, Requires):
        assert result.exit_code == EXIT_INVALID, result.output
        assert f"requires {expected.service} " in result.stderr
        assert "which no file given defines" in result.stderr
    else:
        assert result.exit_code == EXIT_INVALID, result.output
        assert expected.message in result.stderr, result.stderr


def _reading() -> list[str]:
    return [name for name, e in sorted(EXPECTED.items()) if isinstance(e, Reads | Requires)]


def test_the_folders_that_require_services_read_with_the_others(
    edge: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = _validate(monkeypatch, edge, *_reading())
    assert result.exit_code in (0, 1), result.output
    converted = _validate(monkeypatch, edge, *_reading(), command="convert")
    document: dict[str, Any] = yaml.safe_load(converted.stdout)
    services = {
        service["url"]: service
        for w in document["workloads"]
        if w.get("pattern")
        for service in w["services"]
    }
    # processtext requires four services, the first of which requires the broker too.
    required = [r["url"] for r in services["ibm.processtext"]["requires"]]
    assert required == ["ibm.mqtt", "ibm.voice2audio", "ibm.audio2text", "ibm.text2speech"]
    assert [r["url"] for r in services["ibm.processtext"]["requires"][1]["requires"]] == [
        "ibm.mqtt"
    ]
    # A service policy joins its deployment policy (helloworld: openhorizon.memory >= 100),
    # and no pattern.
    policies = {w["name"]: w["service"] for w in document["workloads"] if "service" in w}
    assert policies["helloworld-deployment"]["constraints"] == ["openhorizon.memory >= 100"]
    assert "constraints" not in services["ibm.helloworld"]


def test_how_many_folders_read(edge: Path) -> None:
    services = [name for name in EXPECTED if (edge / name / "service.definition.json").exists()]
    reading = [name for name in services if not isinstance(EXPECTED[name], Refused)]
    share = 100 * len(reading) / len(services)
    print(f"placed validate reads {len(reading)} of {len(services)} folders ({share:.1f}%)")
    # Of the 26 folders with a service definition in today's format, 23 read (88.5%; the
    # issue asks for 85%): all but the three cpu2wiotp services, which require Watson IoT
    # services only IBM's exchange held. README.md and docs/real-files.md state it.
    assert (len(services), len(reading)) == (26, 23)
    assert share >= 85
