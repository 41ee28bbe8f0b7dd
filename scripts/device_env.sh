# Source on the device machine: install the carried wheels (gmsh, meshio, pymetis) and
# point Python at this checkout. gmsh's X11/GL libraries travel in .whl/lib.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || return 1
export PYTHONPATH="/tmp/site:$PWD/packages/meshorder/src:$PWD/packages/gpusolver/src"
export LD_LIBRARY_PATH="$PWD/.whl/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
