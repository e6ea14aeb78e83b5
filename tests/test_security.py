"""Security checks on the core: SQL only with parameters, and no message text or raw user id in any log line
or stored byte of a whole terminal session, at DEBUG."""

from __future__ import annotations

import ast
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.config import PACKAGE_DIR
from tests.conftest import REPO
from tests.fake_bot_api import STICKER, FakeBotApi
from tests.telegram_harness import free_port
from tests.test_cli import run
from tests.test_telegram_process import ended, start

SQL_CALLS = {"execute", "executemany", "executescript"}
ALLOWED = {("sqlite.py", "_select_escalations")}
"""The one documented case: the WHERE clause is always one of the constant clauses in SqliteStore."""


def _dynamic(node: ast.expr) -> bool:
    """Whether an expression builds a string from run-time values (f-string, %, .format, or + with a non-constant)."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(part, ast.FormattedValue) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
        return not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {"format", "join"}


def unsafe_sql(source: str, filename: str = "<source>") -> list[str]:
    """``file:line in function`` for every SQL call whose statement is built from values, directly or via a name."""
    found = []
    tree = ast.parse(source)
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        built = {
            target.id
            for node in ast.walk(function)
            if isinstance(node, ast.Assign) and _dynamic(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(function):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS
                and node.args
            ):
                continue
            statement = node.args[0]
            dynamic = _dynamic(statement) or (isinstance(statement, ast.Name) and statement.id in built)
            if dynamic and (Path(filename).name, function.name) not in ALLOWED:
                found.append(f"{filename}:{node.lineno} in {function.name}")
    return sorted(set(found))


def test_every_sql_statement_in_the_bot_takes_values_as_parameters() -> None:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        found += unsafe_sql(path.read_text(), str(path.relative_to(REPO)))
    assert found == []


def test_the_allowed_case_is_still_the_documented_one() -> None:
    source = (PACKAGE_DIR / "store" / "sqlite.py").read_text()
    assert "``where`` is always one of the constant clauses in this class" in source
    assert unsafe_sql(source, "elsewhere.py") == [
        "elsewhere.py:" + str(_line_of(source, "self.db.execute(query, (*parameters")) + " in _select_escalations"
    ]


def _line_of(source: str, text: str) -> int:
    return next(number for number, line in enumerate(source.splitlines(), 1) if text in line)


@pytest.mark.parametrize(
    "body",
    [
        "await db.execute(f\"SELECT * FROM t WHERE name = '{name}'\")",
        "await db.execute(\"SELECT * FROM t WHERE name = '%s'\" % name)",
        "await db.execute(\"SELECT * FROM t WHERE name = '{}'\".format(name))",
        'await db.execute("SELECT * FROM t WHERE name = \'" + name + "\'")',
        'query = f"DELETE FROM t WHERE id = {name}"\n    await db.executemany(query, [])',
        'db.executescript(" ".join(parts))',
    ],
)
def test_the_scan_catches_statements_built_from_values(body: str) -> None:
    found = unsafe_sql(f"async def f(db, name, parts):\n    {body}\n")
    assert len(found) == 1 and found[0].endswith(" in f"), found


def test_the_scan_accepts_parameters_and_constants() -> None:
    source = (
        "async def f(db, name):\n"
        '    await db.execute("SELECT * FROM t WHERE name = ?", (name,))\n'
        '    await db.execute("SELECT 1" " FROM t")\n'
        '    query = "SELECT * FROM t"\n'
        "    await db.execute(query)\n"
    )
    assert unsafe_sql(source) == []


# Logs and stored bytes of a whole session

RAW_ID = "survivor-8675309"
MESSAGES = {
    "hi zebrafinch": "zebrafinch",
    "why do I miss him quokka": "quokka",
    "I want to die axolotl": "axolotl",
    "he said he will kill me pangolin": "pangolin",
    "asdf qwerty narwhal": "narwhal",
    "tell me more okapi": "okapi",
}


def test_no_log_line_or_stored_byte_holds_message_text_or_the_raw_user_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = run(
        "chat",
        "--user",
        RAW_ID,
        stdin="".join(f"{text}\n" for text in MESSAGES),
        env={"UNHOOKED_LOG_LEVEL": "DEBUG"},
        tmp=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "988" in result.stdout and "911" in result.stdout, "the session did not include both crisis tracks"
    logs = result.stderr
    assert " DEBUG " in logs, "logging was not at DEBUG, so this check would prove nothing"
    assert '"event": "escalation"' in logs, "the escalation log lines are missing"
    leaks = [marker for marker in [*MESSAGES.values(), RAW_ID, "8675309"] if marker in logs.lower()]
    assert leaks == [], f"logs contain {leaks}"
    stored = b"".join(path.read_bytes() for path in data.iterdir() if path.is_file())
    assert stored, "nothing was stored, so this check would prove nothing"
    assert [marker for marker in [*MESSAGES.values(), RAW_ID] if marker.encode() in stored] == []


def test_payload_echoing_libraries_stay_quiet_at_debug() -> None:
    script = (
        "import logging\n"
        "from bot.logs import configure_logging\n"
        "configure_logging('DEBUG')\n"
        "logging.getLogger('telegram.ext.Updater').debug('update with text okapi')\n"
        "logging.getLogger('httpx').info('POST https://api.telegram.org/bot123:SECRET/getUpdates')\n"
        "logging.getLogger('aiosqlite').debug('executing with parameters okapi')\n"
        "logging.getLogger('unhooked.engine').debug('our own debug line')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60, check=True
    )
    assert "our own debug line" in result.stderr
    assert "okapi" not in result.stderr and "SECRET" not in result.stderr


# Logs of a whole Telegram session, errors and retries included

PEOPLE = {918273645: "quokka", 918273646: "axolotl", 918273647: "pangolin", 918273648: "narwhal"}
ADMIN_ID, OPERATORS_ID, GROUP_ID = 918273650, -1009182736511, -1009182736522


async def test_a_telegram_session_logs_no_token_no_raw_id_and_no_message_text(api: FakeBotApi, tmp_path: Path) -> None:
    """``python -m bot run`` at DEBUG through 429s, 5xx, dropped connections, a failing poll, a blocked person,
    an alert Telegram refuses, admin commands from someone who is not an admin, /forget, /erase, a group, an
    edit and a sticker: then every log line, and the /healthz and /metrics answers, are searched."""
    alice, bob, carol, dave = PEOPLE
    port = free_port()
    api.fail("getUpdates", 502)
    api.fail("sendMessage", 429, retry_after=1, chat_id=alice)
    api.fail("sendMessage", 500, chat_id=bob)
    api.disconnect("sendMessage", chat_id=bob)
    api.block(dave)
    # No api.group(OPERATORS_ID): every alert to the operators' chat is refused ("chat not found").
    api.send(alice, f"why do I miss him {PEOPLE[alice]}")
    api.send(bob, f"I want to die {PEOPLE[bob]}")
    api.send(carol, f"/reload {PEOPLE[carol]}")
    api.send(carol, f"/stats {PEOPLE[carol]}")
    api.send(dave, f"hello {PEOPLE[dave]}")
    api.send(alice, f"he said he will kill me {PEOPLE[alice]}", chat_id=GROUP_ID)
    api.send(alice, None, **STICKER)
    api.send(carol, f"tell me more {PEOPLE[carol]}")
    api.send(ADMIN_ID, "/stats")
    bot = await start(
        api,
        tmp_path,
        "session",
        UNHOOKED_LOG_LEVEL="DEBUG",
        UNHOOKED_OPERATOR_CHAT_ID=str(OPERATORS_ID),
        UNHOOKED_ADMIN_IDS=str(ADMIN_ID),
        UNHOOKED_HTTP_PORT=str(port),
    )
    try:
        await api.wait_for(lambda: api.delivered_to[ADMIN_ID] == 1 and api.delivered_to[carol] >= 3, timeout=30)
        api.edit(carol, api.messages[(carol, 3)].message_id, f"I want to die {PEOPLE[carol]}")
        api.send(carol, "/forget")
        await api.wait_for(lambda: api.delivered_to[carol] >= 5, timeout=30)
        asked = api.sent(carol)[-1]
        query = api.tap(carol, asked, "forget:yes")
        api.send(alice, "/erase")
        await api.wait_for(lambda: api.delivered_to[alice] >= 3 and query in api.callback_answers, timeout=30)
        assert asked.edits == 1 and "deleted" in asked.text.lower()
        async with aiohttp.ClientSession() as session:
            served = ""
            for path in ("/healthz", "/metrics"):
                async with session.get(f"http://127.0.0.1:{port}{path}") as response:
                    served += await response.text()
    finally:
        bot.send_signal(signal.SIGTERM)
        assert await ended(bot) == 0
    logs = (tmp_path / "session.log").read_text()
    assert " DEBUG " in logs, "logging was not at DEBUG, so this search would prove nothing"
    for expected in ("Telegram asked to wait", "sendMessage failed", "getUpdates failed", "has blocked the bot"):
        assert expected in logs, f"the session did not go through '{expected}', so the search proves less"
    assert "escalations not delivered" in logs and '"event": "escalation"' in logs
    assert "Content reloaded" not in "".join(m.text for m in api.sent(carol))  # /reload refused a non-admin
    assert "Today (" not in "".join(m.text for m in api.sent(carol))  # /stats refused a non-admin
    assert "Today (" in api.sent(ADMIN_ID)[0].text
    raw_ids = [str(number) for number in (*PEOPLE, ADMIN_ID, OPERATORS_ID, GROUP_ID)]
    secrets = [api.token, api.token.split(":")[1], "s" * 32]
    leaks = [marker for marker in [*PEOPLE.values(), *raw_ids, *secrets] if marker in logs or marker in served]
    assert leaks == [], f"logs or health/metrics hold {leaks}"
