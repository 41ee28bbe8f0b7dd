"""``python -m gpusolver``: the command line."""

from meshorder.termination import command_process


def _command():
    from gpusolver.cli import main  # after the stop requests are taken

    return main


command_process("gpusolver", _command)
