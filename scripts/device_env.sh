# Source on the device machine: install the carried wheels (meshio, pymetis, ...) and point
# Python at this checkout. Two slim bundles may travel beside the wheels in .whl (each only
# when a run needs it; both are xz tarballs so that they fit the 64 MiB carry):
#   gmsh-lite.tar.xz  gmsh.py, its libgmsh.so and the X11/GL libraries it loads (lib/);
#   mpich-lite.tar.xz the mpich wheel's launcher and libraries (bin/mpiexec,
#                     bin/hydra_pmi_proxy, lib/); mpi4py (in the image) loads its libmpi.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || return 1
if [ -f .whl/gmsh-lite.tar.xz ]; then
    tar xJf .whl/gmsh-lite.tar.xz -C /tmp/site || return 1
    export LD_LIBRARY_PATH="/tmp/site/lib:${LD_LIBRARY_PATH:-}"
fi
export PYTHONPATH="/tmp/site:$PWD/packages/meshorder/src:$PWD/packages/gpusolver/src"
export PYTHONUNBUFFERED=1
if [ -f .whl/mpich-lite.tar.xz ]; then
    mkdir -p /tmp/mpich && tar xJf .whl/mpich-lite.tar.xz -C /tmp/mpich || return 1
    export PATH="/tmp/mpich/bin:$PATH"
    export LD_LIBRARY_PATH="/tmp/mpich/lib:$LD_LIBRARY_PATH"
    export MPI4PY_LIBMPI=/tmp/mpich/lib/libmpi.so.12
fi
# Bytecode as an installed package has it: the image neither writes nor ships it for this
# checkout and the carried wheels, so each process would compile ~550 modules (0.9 s).
# One writable cache for every module (the image's ones are written on their first import).
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX=/tmp/pycache
python3 -m compileall -q -j 0 /tmp/site packages/meshorder/src packages/gpusolver/src \
    > /dev/null 2>&1 || true
# gpusolver's entry points (meshorder finds its layout timer by them), as an install has them
python3 - <<'PY'
import pathlib, tomllib
project = tomllib.loads(pathlib.Path("packages/gpusolver/pyproject.toml").read_text())["project"]
info = pathlib.Path(f"/tmp/site/gpusolver-{project['version']}.dist-info")
info.mkdir(parents=True, exist_ok=True)
(info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gpusolver\nVersion: {project['version']}\n")
(info / "entry_points.txt").write_text("".join(
    f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    for group, points in project["entry-points"].items()))
PY
