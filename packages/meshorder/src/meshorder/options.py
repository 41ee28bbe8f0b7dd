"""argparse value types shared by the command lines of meshorder and gpusolver.

Each refuses a value outside its range at parse time, so the command exits with
status 2 and names the option before any work starts.
"""

from __future__ import annotations

import argparse
import math


def _bounded(kind: type, low, what: str, below=math.inf):
    """A parser of ``kind`` values with ``low <= value < below``."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        if not (low <= value < below) or not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text}")
        return value
    return parse


#: argparse types that refuse values outside their range at parse time (exit 2).
non_negative_int = _bounded(int, 0, "an integer of 0 or more")
positive_int = _bounded(int, 1, "an integer of 1 or more")
positive_float = _bounded(float, float.fromhex("0x1p-1074"), "a finite number above 0")
unit_fraction = _bounded(float, float.fromhex("0x1p-1074"), "a number between 0 and 1",
                         below=1.0)
