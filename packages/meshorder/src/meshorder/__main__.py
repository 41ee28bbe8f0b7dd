"""``python -m meshorder``: the command line."""

import sys

from .cli import command

sys.exit(command())
