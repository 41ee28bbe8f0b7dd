"""Where the kernel tests run: compiled as C++ for the CPU (``host``), and on a GPU."""

from __future__ import annotations

import pytest

from gpusolver.backends.host import compiler

BACKENDS = [pytest.param("host", marks=pytest.mark.skipif(compiler() is None,
                                                          reason="no C++ compiler")),
            pytest.param("cupy", marks=pytest.mark.gpu)]
