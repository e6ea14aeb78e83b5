"""The one way the command line adds a subcommand: its summary as help and description, its examples below."""

from __future__ import annotations

import argparse
from typing import Any


def subcommand(under: Any, name: str, summary: str, examples: str) -> argparse.ArgumentParser:
    """Add ``name`` to ``under`` (an argparse subparsers action), with ``examples`` printed after its options."""
    return under.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
