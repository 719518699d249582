"""How help is laid out: plain text (help is user-visible text, so never markup), and
wrapped only between words.

Typer without rich markup renders help with click's formatter, whose wrapper breaks a
line inside a hyphenated word (examples/ironic-
affinity.yaml) and cuts a word longer than the line. A path or an option cut in two
cannot be copied, so the wrapper here moves such a word to a line of its own instead.
Paragraphs that start with a line holding only \\b (an "Examples:" block) keep their
lines as written, as click documents.
"""

from __future__ import annotations

from typing import Any

from typer._click import _textwrap


class _WholeWords(_textwrap.TextWrapper):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("break_on_hyphens", False)
        kwargs.setdefault("break_long_words", False)
        super().__init__(*args, **kwargs)

    def _handle_long_word(
        self, reversed_chunks: list[str], cur_line: list[str], cur_len: int, width: int
    ) -> None:
        # textwrap's own rule with break_long_words off: a long word on a line of its own.
        if not cur_line:
            cur_line.append(reversed_chunks.pop())


def install() -> None:
    """Make click's help formatter wrap between words only."""
    _textwrap.TextWrapper = _WholeWords  # type: ignore[misc]
