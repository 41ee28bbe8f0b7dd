"""Benchmark and comparison results: plain-text tables, JSON and markdown files."""

from __future__ import annotations

import json
from collections.abc import Sequence

from .atomic import atomic_path, check_writable


def check_result_paths(*paths: str | None) -> None:
    """Raise ``OSError`` naming the first results path that cannot be written (before work)."""
    for path in paths:
        if path is not None:
            check_writable(path)


def write_results(rows: list[dict], text: str, json_path: str | None,
                  markdown_path: str | None) -> None:
    """Write benchmark rows as JSON and their table as markdown (each atomically, if asked)."""
    if json_path:
        with atomic_path(json_path) as tmp:
            tmp.write_text(json.dumps(rows, indent=1))
    if markdown_path:
        with atomic_path(markdown_path) as tmp:
            tmp.write_text(text.rstrip("\n") + "\n")


def format_value(value: object) -> str:
    """Numbers to short strings: integers as is, floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table (aligned, so it also reads well in a terminal)."""
    cells = [[format_value(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])
