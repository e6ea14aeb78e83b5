"""A lost, corrupt, full or read-only database under ``python -m bot run``, against the fake Bot API.

Each test counts what matters: crisis messages sent and crisis replies delivered (every one, at once), and
escalations recorded, lost and duplicated across every start, with the database restored from a backup where
the fault destroyed it. Every escalation ends up once in the database and each is alerted to the operators once.
The filesystem faults (a full disk, a filesystem that turns read-only) run on a small ext4 filesystem on a loop
device, mounted for the test; they are skipped, with the reason, where the test cannot mount one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest

from bot.engine import Engine
from bot.spool import SPOOL_NAME
from bot.store.memory import MemoryStore
from tests.conftest import REPO
from tests.fake_bot_api import FakeBotApi
from tests.telegram_harness import OPERATORS, free_port
from tests.test_faults import LOCKER, health_becomes, metrics
from tests.test_telegram_process import ended, start

SECRET = b"s" * 32  # the bot processes' UNHOOKED_SECRET
CRISIS = "I want to die"
ORDINARY = ("hello", "why do I miss him", "thanks")
ALERT_ID = re.compile(r"^Id: ([0-9a-f]{32})$", re.MULTILINE)


@dataclass
class Deployment:
    """One bot's data folder, its second spool place and its HTTP port, started and stopped as a process."""

    api: FakeBotApi
    tmp_path: Path
    port: int = field(default_factory=free_port)
    crisis_people: list[int] = field(default_factory=list)
    """Everyone who sent a crisis message, in order: each is owed one crisis reply and one escalation."""
    messages: int = 0

    @property
    def db(self) -> Path:
        return self.tmp_path / "data" / "bot.sqlite3"

    @property
    def second(self) -> Path:
        return self.tmp_path / "second-spool"

    async def backed_up(self) -> tuple[asyncio.subprocess.Process, Path]:
        """The first run, left running: two crisis replies alerted, then a backup taken while it runs."""
        first = await self.start("first")
        await self.talk(crisis=2)
        await self.alerts_marked(2)
        await self.answered()
        backup = self.tmp_path / "backup.sqlite3"
        await self.command("backup", str(backup))
        return first, backup

    async def restored(self, backup: Path, *flags: str) -> str:
        """``python -m bot restore``, then a third run that must come up healthy; what restore printed."""
        printed = await self.command("restore", str(backup), *flags)
        third = await self.start("third")
        await health_becomes(self.port, 200)
        await self.stop(third, "third")
        return printed

    async def start(self, name: str) -> asyncio.subprocess.Process:
        """``python -m bot run``, once its /healthz answers."""
        self.api.group(OPERATORS, "Operators")
        settings = {"UNHOOKED_HTTP_PORT": str(self.port), "UNHOOKED_OPERATOR_CHAT_ID": str(OPERATORS)}
        bot = await start(self.api, self.tmp_path, name, **settings)
        async with asyncio.timeout(60):
            while True:
                if bot.returncode is not None:
                    raise AssertionError((self.tmp_path / f"{name}.log").read_text()[-3000:])
                with contextlib.suppress(aiohttp.ClientError):
                    async with aiohttp.ClientSession() as session, session.get(self.url("/healthz")):
                        return bot
                await asyncio.sleep(0.1)

    async def stop(self, bot: asyncio.subprocess.Process, name: str) -> None:
        bot.send_signal(signal.SIGTERM)
        assert await ended(bot) == 0, (self.tmp_path / f"{name}.log").read_text()[-3000:]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def talk(self, crisis: int, ordinary: int = 3) -> None:
        """``crisis`` people new to the bot say they want to die, ``ordinary`` others say something else; wait
        for every reply and check each crisis reply."""
        first = 5000 + 10 * (len(self.crisis_people) + self.messages)
        people = [first + number for number in range(crisis)]
        others = [first + crisis + number for number in range(ordinary)]
        for person in people:
            self.api.send(person, CRISIS)
        for number, person in enumerate(others):
            self.api.send(person, ORDINARY[number % len(ORDINARY)])
        self.messages += crisis + ordinary
        self.crisis_people += people
        for person in people + others:
            await self.api.wait_sent(person, 1, timeout=30)
        assert all("988" in self.api.sent(person)[0].text for person in people), "a crisis reply was not sent"

    def stored(self) -> Counter[str]:
        """Escalations per person key in the database (which must open) and in every spool place."""
        with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as db:
            found = dict(db.execute("SELECT id, user_key FROM escalations").fetchall())
        for spool in self.spooled_files():
            for line in spool.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    found[record["id"]] = record["user_key"]
        return Counter(found.values())

    def spooled_files(self) -> list[Path]:
        return [path for path in (self.db.parent / SPOOL_NAME, self.second / SPOOL_NAME) if path.is_file()]

    def expected(self) -> Counter[str]:
        engine = Engine(MemoryStore(), SECRET)
        return Counter(engine.user_key("telegram", str(person)) for person in self.crisis_people)

    def alerted_ids(self) -> Counter[str]:
        """How many operators' alerts told each escalation id."""
        return Counter(found for message in self.api.sent(OPERATORS) for found in ALERT_ID.findall(message.text))

    def notices(self) -> list[str]:
        return [message.text for message in self.api.sent(OPERATORS) if "its database" in message.text]

    async def _until(self, query: str, done: Callable[[int], bool]) -> None:
        """Wait until the count that ``query`` reads from the database satisfies ``done``."""
        async with asyncio.timeout(30):
            while True:
                with contextlib.closing(sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)) as db:
                    if done(db.execute(query).fetchone()[0]):
                        return
                await asyncio.sleep(0.05)

    async def alerts_marked(self, count: int) -> None:
        """Wait until ``count`` escalations in the database are marked alerted."""
        await self._until("SELECT count(alerted_at) FROM escalations", lambda alerted: alerted >= count)

    async def answered(self) -> None:
        """Wait until the journal has committed every update as answered: none of them is replayed after a fault."""
        await self._until("SELECT count(*) FROM updates WHERE answered_at IS NULL", lambda waiting: waiting == 0)

    async def command(self, *args: str) -> str:
        """``python -m bot ARGS`` on this deployment's database; its output (it must succeed)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            *args,
            cwd=REPO,
            env={**os.environ, "UNHOOKED_DB": str(self.db), "UNHOOKED_SPOOL_DIR": str(self.second)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode == 0, err.decode()
        return out.decode()

    async def store_problem(self) -> str:
        """The store check's problems once /healthz fails (within seconds of the fault)."""
        body = await health_becomes(self.port, 503, timeout=15)
        assert "store" in body["failing"]
        return " | ".join(body["checks"]["store"]["problems"])

    def assert_no_escalation_lost(self, repeated: int = 0) -> int:
        """Every crisis message has its escalation in the database and the spool is empty; each escalation was
        alerted once. Returns how many were recorded twice, at most ``repeated``: a crisis message whose update the
        journal could not store is not confirmed to Telegram, so it comes again after a restart and is answered
        (and escalated) again, a repeat rather than a loss."""
        assert self.spooled_files() == [], "the spool was not emptied into the database"
        stored, expected = self.stored(), self.expected()
        lost, twice = sum((expected - stored).values()), sum((stored - expected).values())
        assert (len(expected), lost) == (len(self.crisis_people), 0)
        assert twice <= repeated and max(stored.values()) <= 2, f"{twice} escalations recorded twice"
        alerted = self.alerted_ids()
        assert sum(alerted.values()) == len(alerted) == sum(stored.values()), "an escalation alerted twice or never"
        logging.getLogger("tests").warning(
            "%d messages, %d crisis replies, %d escalations: %d lost, %d recorded twice",
            self.messages,
            len(expected),
            len(expected),
            lost,
            twice,
        )
        return twice


async def test_a_database_corrupted_while_running_7_crisis_replies_7_escalations_0_lost_0_duplicated(
    api: FakeBotApi, tmp_path: Path
) -> None:
    bot = Deployment(api, tmp_path)
    first, backup = await bot.backed_up()
    with contextlib.closing(sqlite3.connect(bot.db)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # what was written is in the file, not only in its WAL
    size = bot.db.stat().st_size
    with bot.db.open("r+b") as handle:
        handle.write(os.urandom(size))  # a disk, a filesystem or a stray tool wrote over it
    problem = await bot.store_problem()
    assert "is corrupt" in problem and "python -m bot restore BACKUP --force" in problem
    assert (await metrics(bot.port))["unhooked_database_fault"] == {'{kind="corrupt"}': 1.0}
    await bot.talk(crisis=3)
    await api.wait_for(lambda: len(bot.notices()) == 1, timeout=15)
    assert "Unhooked lost its database while running" in bot.notices()[0]
    await bot.stop(first, "first")

    second = await bot.start("second")  # still corrupt: answered, reported, nothing replayed into memory
    problem = await bot.store_problem()
    assert "is corrupt" in problem and "start-afresh --force" in problem
    await bot.talk(crisis=2)
    await api.wait_for(lambda: len(bot.notices()) == 2, timeout=15)
    assert "Unhooked started without its database" in bot.notices()[1]
    await bot.stop(second, "second")
    assert len(bot.spooled_files()) == 1  # the five escalations since the corruption wait in the spool

    assert "kept the database it replaces as" in await bot.restored(backup, "--force")
    assert bot.messages == 7 + 3 * 3
    bot.assert_no_escalation_lost(repeated=3)


async def test_a_database_deleted_while_running_7_crisis_replies_7_escalations_0_lost_0_duplicated(
    api: FakeBotApi, tmp_path: Path
) -> None:
    bot = Deployment(api, tmp_path)
    first, backup = await bot.backed_up()
    bot.db.unlink()
    problem = await bot.store_problem()
    assert "was deleted while the bot ran" in problem and "python -m bot restore BACKUP" in problem
    assert (await metrics(bot.port))["unhooked_database_fault"] == {'{kind="missing"}': 1.0}
    await bot.talk(crisis=3)
    await api.wait_for(lambda: len(bot.notices()) == 1, timeout=15)
    await bot.stop(first, "first")

    second = await bot.start("second")
    problem = await bot.store_problem()
    assert "is missing, but bot.sqlite3.created" in problem and "python -m bot start-afresh" in problem
    assert not bot.db.exists(), "an empty database was created over the lost one"
    await bot.talk(crisis=2)
    await api.wait_for(lambda: len(bot.notices()) == 2, timeout=15)
    await bot.stop(second, "second")

    await bot.restored(backup)
    assert bot.messages == 7 + 3 * 3
    bot.assert_no_escalation_lost()


async def test_a_spool_beside_the_database_that_cannot_be_written_1_escalation_in_the_second_place(
    api: FakeBotApi, tmp_path: Path
) -> None:
    bot = Deployment(api, tmp_path)
    first = await bot.start("first")
    blocked = bot.db.parent / SPOOL_NAME
    blocked.mkdir()  # a folder where the spool file should be: that place refuses every append
    locker = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LOCKER, str(bot.db), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert await locker.stdout.readline() == b"locked\n"  # the database takes no escalation either
    try:
        await bot.talk(crisis=1, ordinary=1)
        spooled = bot.second / SPOOL_NAME
        await api.wait_for(spooled.is_file, timeout=15)
        assert bot.second.stat().st_mode & 0o777 == 0o700 and spooled.stat().st_mode & 0o777 == 0o600
        assert (await metrics(bot.port))["unhooked_escalations_stored_total"] == {'{where="spool"}': 1.0}
    finally:
        locker.stdin.write(b"\n")
        await locker.wait()
    await bot.stop(first, "first")
    blocked.rmdir()
    second = await bot.start("second")  # replays the second place into the database
    await health_becomes(bot.port, 200)
    await bot.stop(second, "second")
    bot.assert_no_escalation_lost(repeated=1)


@dataclass
class SmallDisk:
    """A small ext4 filesystem on a loop device, mounted where the bot keeps its database."""

    image: Path
    mount: Path
    device: str = ""

    def run(self, tool: str, *args: str, check: bool = True) -> str:
        """Run a system tool (found on the PATH, else ``OSError``); its output."""
        found = shutil.which(tool)
        if found is None:
            raise OSError(f"{tool} is not installed")
        done = subprocess.run([found, *args], capture_output=True, text=True, timeout=60, check=False)
        if check and done.returncode != 0:
            raise OSError(f"{tool} failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def attach(self) -> None:
        self.run("truncate", "-s", "8M", str(self.image))
        self.run("mkfs.ext4", "-q", "-F", "-m", "0", str(self.image))
        self.device = self.run("losetup", "--find", "--show", str(self.image))
        self.run("blockdev", "--setrw", self.device)
        self.mount.mkdir(parents=True, exist_ok=True)
        self.run("mount", "-o", "errors=remount-ro", self.device, str(self.mount))

    def fill(self) -> None:
        """Write a file until no space is left, not even for one byte more."""
        with (self.mount / "filler").open("wb", buffering=0) as handle:
            for size in (65536, 1024, 1):
                with contextlib.suppress(OSError):
                    while True:
                        handle.write(b"\0" * size)
                os.fsync(handle.fileno())

    def turn_read_only(self) -> None:
        """An ext4 error: with errors=remount-ro the kernel makes the filesystem read-only at once, files open."""
        Path(f"/sys/fs/ext4/{Path(self.device).name}/trigger_fs_error").write_text("test: the disk failed")

    def repair(self) -> None:
        """What an operator does next: unmount, fsck, mount again (the bot is stopped)."""
        self.run("umount", str(self.mount))
        self.run("e2fsck", "-fy", self.device, check=False)  # 1: errors were corrected
        self.run("mount", "-o", "errors=remount-ro", self.device, str(self.mount))

    def detach(self) -> None:
        with contextlib.suppress(OSError):
            self.run("umount", "-l", str(self.mount), check=False)
            if self.device:
                self.run("losetup", "-d", self.device, check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    disk = SmallDisk(tmp_path / "disk.img", tmp_path / "data")
    try:
        disk.attach()
    except (OSError, subprocess.SubprocessError) as error:
        disk.detach()
        pytest.skip(f"cannot mount a small ext4 filesystem here (needs root, losetup and mkfs.ext4): {error}")
    try:
        yield disk
    finally:
        disk.detach()


@pytest.mark.parametrize("fault", ["disk-full", "read-only"])
async def test_the_database_disk_full_or_read_only_5_crisis_replies_5_escalations_0_lost_0_duplicated(
    api: FakeBotApi, tmp_path: Path, small_disk: SmallDisk, fault: str
) -> None:
    bot = Deployment(api, tmp_path)
    first = await bot.start("first")
    await bot.talk(crisis=2)  # committed, and so on the disk: they survive the fault (and the fsck)
    await bot.alerts_marked(2)
    await bot.answered()  # else an update whose answer was not yet marked is replayed, and recorded twice
    if fault == "disk-full":
        small_disk.fill()
    else:
        small_disk.turn_read_only()
    await bot.talk(crisis=3, ordinary=20)
    assert "store" in (await health_becomes(bot.port, 503))["failing"]
    stored = (await metrics(bot.port))["unhooked_escalations_stored_total"]
    assert stored.get('{where="nowhere"}', 0) == 0 and sum(stored.values()) == 5
    lines = (bot.second / SPOOL_NAME).read_text().splitlines()
    assert len({json.loads(line)["id"] for line in lines}) == 3  # the spool beside the database shares its disk
    await bot.stop(first, "first")
    if fault == "disk-full":
        (small_disk.mount / "filler").unlink()
    else:
        small_disk.repair()
    second = await bot.start("second")
    await health_becomes(bot.port, 200)
    await bot.stop(second, "second")
    assert bot.messages == 5 + 3 + 20
    bot.assert_no_escalation_lost(repeated=3)
