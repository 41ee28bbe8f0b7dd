"""Exceptions raised by meshorder.

Every error derives from :class:`MeshorderError` and also from the builtin that
fits it, so callers may catch either. Messages name the file, line, cell or face
involved and say what was expected.
"""


class MeshorderError(Exception):
    """Root of every error meshorder raises on purpose."""


class MeshReadError(MeshorderError, ValueError):
    """A mesh file could not be read: wrong format, truncated or malformed."""


class MeshWriteError(MeshorderError, ValueError):
    """A mesh could not be written in the requested format."""


class TopologyError(MeshorderError, ValueError):
    """The mesh is read but is not a valid volume mesh (bad faces, cells or facets)."""


class PlanError(MeshorderError, ValueError):
    """A plan file is malformed, inconsistent, or belongs to another mesh."""


class UnknownNameError(MeshorderError, KeyError):
    """A name (ordering, format, marker) is not in its registry."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class UsageError(MeshorderError, ValueError):
    """Options that do not go together (exit code 2, like argparse's own errors)."""


class MeshWarning(UserWarning):
    """Something in the mesh is unusual but not fatal (ignored cells, orphan points)."""
