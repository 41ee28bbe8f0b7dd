"""Shared fixtures: where the third-party meshes live, and GPU test skipping."""

from pathlib import Path

import pytest

SHARED_MESHES = Path(__file__).resolve().parents[1].parent / "shared" / "meshes"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when CuPy cannot see a CUDA device."""
    try:
        import cupy

        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        has_gpu = False
    if has_gpu:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_meshes() -> Path:
    """The folder of real third-party meshes (../shared/meshes)."""
    if not SHARED_MESHES.is_dir():
        pytest.skip(f"{SHARED_MESHES} is not there")
    return SHARED_MESHES
