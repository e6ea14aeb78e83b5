"""The one crisis screen every message passes: the lexicon floor and moderators' rules, then the learned model.

The lexicon decides first and is never lowered; the model can only add a detection, or raise one, when the
lexicon finds less than a crisis. A model that is switched off, missing, corrupt or failing leaves the
lexicon answering alone, and says so in health, the logs and ``unhooked_crisis_model_loaded``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from bot import bounded, safety
from bot.health import Faults, describe
from bot.lexicon import Rule
from bot.metrics import Metrics
from bot.models import Detection, Level
from bot.rules import floor
from bot.screen import Screened, screen

log = logging.getLogger("unhooked.crisis")

MODEL = "crisis_model"
"""The health check that fails while the learned screen cannot run."""
PATTERNS = "crisis_patterns"
"""The health check that fails once a rule's pattern has run out of its time bound, until the rules change."""
OFF = "off"
"""``UNHOOKED_CRISIS_MODEL=off``: screen with the lexicon alone."""
RECENT = 4096
"""Verdicts kept for recent messages (by a hash of the text, never the text): an adapter that screens updates
as they arrive, to put a crisis first, and the engine that answers each then read it once, not twice, even
when a burst of this many waits to be answered."""

Verdict = tuple[Screened | None, Detection | None]
"""The message as the lexicon read it (``None`` if reading failed), and the most serious detection."""


def _source(rule: Rule) -> str:
    return f"rule {rule.id}"


def _most_serious(found: Detection | None, learned: Detection | None) -> Detection | None:
    """The lexicon's detection, unless the model's is more serious: then the model's, keeping the rule's window."""
    if learned is None or (found is not None and found.level.rank >= learned.level.rank):
        return found
    if found is not None and found.window_level is not None:  # what the rule reaches in a crisis state stays
        return dataclasses.replace(learned, window_level=found.window_level)
    return learned


@lru_cache(maxsize=4)
def load_model(folder: Path | None) -> object:
    """The model in ``folder`` (the package's own when ``None``), loaded once per process, or the error.

    The crisis screen and meaning-based matching (``bot.meaning``) both load through here: one model in memory.
    """
    from bot.model.runtime import FILES, CrisisModel, ModelError

    try:
        return CrisisModel(folder or FILES)
    except (ModelError, ImportError) as error:
        return error


class CrisisScreen:
    """Screens one message: ``detect`` never raises, and a failing lexicon counts as a crisis.

    A rule whose pattern runs out of its time bound (``bot.bounded``) counts as fired at its own level, the
    other rules (the floor's among them) still run, and the rule is logged by id, counted in
    ``unhooked_crisis_pattern_timeouts_total`` and reported under the ``crisis_patterns`` health check.
    """

    def __init__(
        self, model: str | None = None, *, faults: Faults | None = None, metrics: Metrics | None = None
    ) -> None:
        self.faults = faults or Faults()
        self.metrics = metrics
        self._recent: OrderedDict[int, Verdict] = OrderedDict()
        self._lock = threading.Lock()
        """Guards ``_recent`` and ``_generation``: ``prepare_apart`` screens on a thread of the screen's own."""
        self._generation = 0
        """Counts ``use``: a verdict reached under rules that have since changed is not kept."""
        self._apart = ThreadPoolExecutor(max_workers=1, thread_name_prefix="crisis-screen")
        """One thread for ``prepare_apart``, started at its first use: batches are screened one after another."""
        self._slow: set[Rule] = set()
        """Rules whose pattern has run out of its time bound (reported under ``PATTERNS`` while they are used)."""
        self.rules: tuple[Rule, ...] = floor()  # raises FloorError, with a sentence, if the floor does not compile
        self.model = None
        self.model_state = OFF
        """``loaded``, ``off`` (by setting) or ``failed: ...`` (missing, corrupt or failing), for health."""
        if model != OFF:
            loaded = load_model(Path(model) if model else None)
            if isinstance(loaded, Exception):
                self._fail("load", f"the lexicon screens every message alone, because {describe(loaded)}")
            else:
                self.model, self.model_state = loaded, "loaded"

    def use(self, rules: Iterable[Rule]) -> None:
        """Screen with ``rules`` (the floor and the catalogue's own) from the next message on."""
        rules = tuple(rules)
        safety.prepare(rules)  # never raises: a prefilter that cannot be built tries every rule
        with self._lock:
            self.rules = rules
            self._recent.clear()  # a verdict under the old rules no longer holds
            self._generation += 1
        self._slow &= set(rules)  # a rule changed or removed is no longer the slow one
        still = {_source(rule) for rule in self._slow}
        for source in self.faults.of(PATTERNS):
            if source not in still:
                self.faults.clear(PATTERNS, source)

    def detect(self, text: str) -> Detection | None:
        """The most serious detection for ``text`` from the lexicon and, below crisis, the model."""
        return self.read(text)[1]

    def read(self, text: str) -> Verdict:
        """The message as the lexicon read it (``None`` if reading failed), and the most serious detection."""
        key = hash(text)
        with self._lock:
            kept = self._recent.get(key)
            if kept is not None:
                self._recent.move_to_end(key)
                return kept
        return self._screen([text])[key]

    def prepare(self, texts: Sequence[str]) -> None:
        """Screen messages that arrived together, the model in one pass over them, keeping each verdict for ``read``.

        Only the messages the lexicon leaves below crisis go through the model; one read before is not read again.
        """
        self._screen(texts)

    async def prepare_apart(self, texts: Sequence[str]) -> None:
        """``prepare`` on the screen's own thread, so that the event loop answers other messages meanwhile.

        ONNX Runtime lets go of the interpreter while the model runs: on a second core, replies to the messages
        before go out while this batch is read.
        """
        await asyncio.get_running_loop().run_in_executor(self._apart, self._screen, list(texts))

    def close(self) -> None:
        """Stop the screen's own thread once the batch it is reading (if any) is done."""
        self._apart.shutdown(wait=True)

    def _screen(self, texts: Sequence[str]) -> dict[int, Verdict]:
        """Each text's verdict by its hash: kept ones as they are, the others read now and kept."""
        keyed = {hash(text): text for text in texts}
        with self._lock:
            rules, generation = self.rules, self._generation
            known = {key: self._recent[key] for key in keyed if key in self._recent}
        fresh = {key: text for key, text in keyed.items() if key not in known}
        lexicon = {key: self._lexicon(text, rules) for key, text in fresh.items()}
        asked = [key for key, (_, found) in lexicon.items() if self._asks_model(found)]
        learned = dict(zip(asked, self._learned([fresh[key] for key in asked]), strict=True))
        verdicts = {key: (read, _most_serious(found, learned.get(key))) for key, (read, found) in lexicon.items()}
        with self._lock:
            if generation == self._generation:
                self._recent.update(verdicts)
                while len(self._recent) > RECENT:
                    self._recent.popitem(last=False)
        return {**known, **verdicts}

    def _lexicon(self, text: str, rules: tuple[Rule, ...]) -> Verdict:
        timed_out: list[Rule] = []
        try:
            screened = screen(text)
            found = safety.detect(screened, rules, timed_out=timed_out)
        except Exception:
            log.exception("the crisis screen failed; answering with crisis resources to be safe")
            self._count("screen")
            return None, safety.SCREEN_FAILED
        for rule in timed_out:
            self._timed_out(rule)
        return screened, found

    def _asks_model(self, found: Detection | None) -> bool:
        """Whether the model may still add to the lexicon's verdict (a failed reading is already a crisis)."""
        return self.model is not None and (found is None or found.level.rank < Level.CRISIS.rank)

    def _learned(self, texts: list[str]) -> list[Detection | None]:
        """The model's detections, or none at all if it fails (the lexicon's verdicts stand)."""
        if not texts or self.model is None:
            return [None] * len(texts)
        try:
            return self.model.detect(texts)
        except Exception as error:
            log.exception("the learned crisis screen failed on a message; the lexicon's verdict stands")
            self._fail("detect", describe(error))
            self._count(MODEL)
            return [None] * len(texts)

    def _timed_out(self, rule: Rule) -> None:
        """A rule ran out of its time bound: it counted as fired; say so in the log, the metrics and health."""
        detail = (
            f"ran out of its {bounded.BOUND:g} s bound on a message and counted as a match "
            f"({rule.level.value}, {rule.category}); simplify it in its rule file (python -m bot check)"
        )
        log.error("crisis screen: the pattern of rule %s %s", rule.id, detail)
        self._slow.add(rule)
        self.faults.fail(PATTERNS, _source(rule), detail)
        if self.metrics is not None:
            self.metrics.pattern_timeouts.inc()

    def _count(self, part: str) -> None:
        if self.metrics is not None:
            self.metrics.handler_errors.inc(part)

    def _fail(self, source: str, detail: str) -> None:
        log.error("learned crisis screen: %s", detail)
        self.faults.fail(MODEL, source, detail)
        if source == "load":
            self.model_state = f"failed: {detail}"
