# Source on the device machine: install the carried wheels (meshio, pymetis, gmsh if there) and
# point Python at this checkout. gmsh's X11/GL libraries travel in .whl/lib; its own
# library is a data file of the wheel, which `pip --target` drops, so unpack it by hand.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || return 1
mkdir -p /tmp/site/lib
if ls .whl/gmsh-*.whl > /dev/null 2>&1; then  # gmsh is carried only when a run meshes
    python3 -c "import glob, zipfile; zipfile.ZipFile(glob.glob('.whl/gmsh-*.whl')[0]).extract('gmsh-4.15.2.data/data/lib/libgmsh.so.4.15', '/tmp/gmshlib')" || return 1
    mv /tmp/gmshlib/gmsh-4.15.2.data/data/lib/libgmsh.so.4.15 /tmp/site/lib/
fi
export PYTHONPATH="/tmp/site:$PWD/packages/meshorder/src:$PWD/packages/gpusolver/src"
export LD_LIBRARY_PATH="$PWD/.whl/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
# MPI for several ranks: the mpich wheel's launcher and libraries, carried slim as
# .whl/mpich-lite.tgz (bin/mpiexec, bin/hydra_pmi_proxy, lib/); mpi4py (in the image)
# loads its libmpi.
if [ -f .whl/mpich-lite.tgz ]; then
    mkdir -p /tmp/mpich && tar xzf .whl/mpich-lite.tgz -C /tmp/mpich || return 1
    export PATH="/tmp/mpich/bin:$PATH"
    export LD_LIBRARY_PATH="/tmp/mpich/lib:$LD_LIBRARY_PATH"
    export MPI4PY_LIBMPI=/tmp/mpich/lib/libmpi.so.12
fi
