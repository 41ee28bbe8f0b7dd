"""``python -m meshorder``: the command line."""

from .termination import command_process


def _command():
    from .cli import command  # after the stop requests are taken

    return command


command_process("meshorder", _command)
