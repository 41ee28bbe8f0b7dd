"""``python -m gpusolver``: the command line."""

import sys

from gpusolver.cli import main

sys.exit(main())
