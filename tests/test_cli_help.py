"""Every option of both command lines explains itself."""

import argparse

import pytest

from gpusolver.cli import build_parser as gpusolver_parser
from meshorder.cli import build_parser as meshorder_parser


def parsers(parser: argparse.ArgumentParser, name: str):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from parsers(sub, f"{name} {sub_name}")


ALL = [*parsers(meshorder_parser(), "meshorder"), *parsers(gpusolver_parser(), "gpusolver")]


@pytest.mark.parametrize(("name", "parser"), ALL, ids=[n for n, _ in ALL])
def test_every_option_has_help(name, parser):
    missing = [a.dest for a in parser._actions
               if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
               and not a.help]
    assert not missing, f"{name}: options without help: {missing}"
