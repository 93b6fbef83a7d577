"""The CLI's help layout: examples kept as written, and every option's default shown."""

from __future__ import annotations

import argparse
import copy


def _worth_saying(default: object) -> bool:
    return default is not None and default is not False and default is not argparse.SUPPRESS


class DefaultsHelp(argparse.RawDescriptionHelpFormatter):
    """``--help`` with each option's default appended, unless its help already states one or it
    has none worth saying (None, a False flag); the epilog's examples keep their line breaks."""

    def _format_action(self, action: argparse.Action) -> str:
        if not action.help and action.option_strings and _worth_saying(action.default):
            action = copy.copy(action)  # argparse prints no help line at all for an option without help
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not action.option_strings or "default" in text or not _worth_saying(action.default):
            return text
        return f"{text} (default: %(default)s)"


def one_line(doc: str | None, width: int = 110) -> str:
    """A docstring's first sentence on one line (``list``'s description): the first paragraph's
    lines joined, cut at its first full stop, and at a word with "…" if still longer than ``width``."""
    import re

    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    m = re.match(r"(.+?[.!?])(?=\s|$)", paragraph)
    text = m.group(1) if m else paragraph
    if len(text) > width:
        text = text[:width - 1].rsplit(" ", 1)[0].rstrip(",;:(") + "…"
    return text
