#!/usr/bin/env bash
# Fill .whl (gitignored) with what the device machine lacks, for scripts/device_env.sh:
# the pure wheels of meshio, tqdm and rich, pymetis's cp312 wheel, and hypothesis (with
# attrs and sortedcontainers) for the test suite's GPU run; with --gmsh, the
# slim gmsh bundle (gmsh.py, libgmsh and the X11/GL libraries it loads, copied from this
# machine); with --mpich, the mpich wheel's launchers (Hydra and gforker) and libraries. Both bundles are xz
# tarballs so that .whl stays under the device's 64 MiB carry.
#
# Usage: bash scripts/device_wheels.sh [--gmsh] [--mpich]    (from the repository root)
set -euo pipefail
python="${PYTHON:-.venv/bin/python}"
target=.whl
download() {
    "$python" -m pip download -q --no-deps -d "$1" --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
        --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 --platform any "${@:2}"
}
mkdir -p "$target"
download "$target" meshio tqdm rich markdown-it-py mdurl pygments pymetis hypothesis attrs \
    sortedcontainers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for bundle in "$@"; do
    case "$bundle" in
    --gmsh)
        download "$work" gmsh
        mkdir -p "$work/gmsh/lib" && (cd "$work/gmsh" && unzip -q ../gmsh-*.whl)
        cp "$work"/gmsh/gmsh-*.data/data/lib/libgmsh.so.* "$work/gmsh/"
        # the X11/GL libraries libgmsh loads that the device image has not
        for lib in $(ldd "$work"/gmsh/libgmsh.so.* | awk '/=> \//{print $3}' \
                     | grep -E 'libGL|libX|libxcb|libfontconfig|libfreetype|libOpenGL|libpng|libbrotli|libexpat|libbsd|libmd\.'); do
            cp -L "$lib" "$work/gmsh/lib/"
        done
        tar cJf "$target/gmsh-lite.tar.xz" -C "$work/gmsh" gmsh.py \
            "$(basename "$work"/gmsh/libgmsh.so.*)" lib
        ;;
    --mpich)
        download "$work" mpich
        mkdir -p "$work/mpich" && (cd "$work/mpich" && unzip -q ../mpich-*.whl)
        data=$(echo "$work"/mpich/mpich-*.data/data)
        tar cJf "$target/mpich-lite.tar.xz" -C "$data" bin/mpiexec bin/mpiexec.hydra bin/mpiexec.gforker \
            bin/hydra_pmi_proxy lib/libmpi.so lib/libmpi.so.12 lib/mpich
        ;;
    *)
        echo "device_wheels.sh: unknown option $bundle (expected --gmsh or --mpich)" >&2
        exit 2
        ;;
    esac
done
du -sh "$target"
