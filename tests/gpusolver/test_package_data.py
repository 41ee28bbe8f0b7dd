"""Every kernel source ships in the wheel: package-data covers each non-Python file."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "packages" / "gpusolver"


def test_package_data_globs_cover_every_kernel_source():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["gpusolver"]
    package = ROOT / "src" / "gpusolver"
    shipped = {path for pattern in globs for path in package.glob(pattern)}
    sources = {path for path in package.rglob("*")
               if path.is_file() and path.suffix not in (".py", ".pyc")
               and "__pycache__" not in path.parts}
    assert sources and sources <= shipped, sorted(str(p) for p in sources - shipped)
