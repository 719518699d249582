"""`placed explain-spec` for people: a field as kubectl explain lays one out."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from placed.cli.grid import printable
from placed.spec.fields import Field

_WIDTH = 80


def _paragraph(text: str, indent: str) -> str:
    return textwrap.fill(
        printable(text),
        _WIDTH,
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,
    )


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def field_text(found: Field) -> str:
    lines = [
        f"FIELD:       {found.path or '(the spec)'}",
        f"TYPE:        {found.type}",
        f"REQUIRED:    {'yes' if found.required else 'no'}",
    ]
    if found.has_default:
        lines.append(f"DEFAULT:     {_value(found.default)}")
    lines += ["", "DESCRIPTION:", _paragraph(found.description or "(none)", "    ")]
    if found.fields:
        lines += ["", "FIELDS:"]
        for child in found.fields:
            name = child.path.rsplit(".", 1)[-1]
            required = "  -required-" if child.required else ""
            lines.append(f"  {name}  <{child.type}>{required}")
            if child.description:
                lines.append(_paragraph(child.description, "    "))
            lines.append("")
        lines.pop()
    return "\n".join(lines) + "\n"
