"""Exceptions gpusolver raises on purpose; the CLI maps them to exit codes."""


class GpusolverError(Exception):
    """Root of every error gpusolver raises on purpose."""


class ConfigError(GpusolverError, ValueError):
    """A case file or option is invalid: unknown key, value or marker."""


class UsageError(GpusolverError, ValueError):
    """A command-line option has a value outside its valid set (exit code 2)."""


class SolverDivergedError(GpusolverError, FloatingPointError):
    """The solution became non-finite or non-physical.

    Attributes
    ----------
    iteration : int
        Iteration at which it was detected.
    cell : int
        Cell index in the mesh's own (file) numbering.
    """

    def __init__(self, message: str, iteration: int, cell: int):
        super().__init__(message)
        self.iteration = iteration
        self.cell = cell


class SingularMatrixError(GpusolverError, ArithmeticError):
    """A sparse factorisation met an exactly singular matrix.

    Attributes
    ----------
    row : int
        The first row of the matrix (its own numbering) with a non-finite entry or no
        non-zero one; -1 where every row has some.
    """

    def __init__(self, message: str, row: int):
        super().__init__(message)
        self.row = row
