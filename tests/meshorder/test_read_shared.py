"""Every mesh in ../shared/meshes reads, with the cells and markers its README lists."""

import warnings

import numpy as np
import pytest

from meshorder import MeshWarning, Topology, read_mesh

# file -> (dim, {cell type: count}, boundary faces, some marker names)
EXPECTED = {
    "su2/mesh_NACA0012_inv.su2": (2, {"triangle": 10216}, 250, {"airfoil", "farfield"}),
    "su2/mesh_cylinder_lam.su2": (2, {"triangle": 26192}, 480, {"cylinder", "farfield"}),
    "su2/n0012_225-65.su2": (2, {"quad": 14336}, 480, {"airfoil", "farfield"}),
    "su2/mesh_brick_pyra_ffd.su2": (3, {"tetra": 71884, "pyramid": 741}, 6631,
                                    {"x_m", "x_p", "y_m", "y_p", "z_m", "z_p"}),
    "pyfr/euler-vortex.msh": (2, {"quad": 400}, 80, {"periodic_0_l", "periodic_1_r"}),
    "pyfr/inc-cylinder.msh": (2, {"triangle": 3231, "quad": 196}, 99, {"wall", "inlet"}),
    "pyfr/taylor-green.fixed.msh": (3, {"hexahedron": 32768}, 6144, {"periodic_2_r"}),
    "gmsh/naca_boundary_layer_2d.msh": (2, {"triangle": 2165, "quad": 1863}, 241, {"curve_1"}),
    "gmsh/gmsh_wing_flap_2d.msh": (2, {"triangle": 23751}, 569, {"curve_1"}),
    "gmsh/gmsh_naca12_3d_cl0.3.msh": (3, {"tetra": 97412}, 13722, {"surface_14"}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_mesh_reads_with_markers(shared_meshes, name):
    dim, counts, n_boundary, names = EXPECTED[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        mesh = read_mesh(shared_meshes / name)
    assert mesh.dim == dim
    assert {b.type: len(b) for b in mesh.cells} == counts
    topo = Topology(mesh)
    boundary = ~topo.interior
    assert boundary.sum() == n_boundary
    assert names <= set(topo.marker_names.values())
    # every boundary face is marked by a facet of the file (none 'unmarked')
    assert "unmarked" not in topo.marker_names.values() or name.startswith("pyfr/inc")
    assert topo.components()[0] == 1


def test_gmsh_points_and_lines_in_3d_are_ignored_with_one_warning(shared_meshes):
    with pytest.warns(MeshWarning, match=r"ignored .*vertex.*line") as record:
        read_mesh(shared_meshes / "gmsh/gmsh_naca12_3d_cl0.3.msh")
    assert len([w for w in record if issubclass(w.category, MeshWarning)]) == 1


def test_higher_order_cells_reduce_to_corners_and_keep_their_mid_edge_nodes(shared_meshes):
    mesh = read_mesh(shared_meshes / "pyfr/inc-cylinder.msh")
    assert {b.type: b.nodes.shape[1] for b in mesh.cells} == {"triangle": 3, "quad": 4}
    topo = Topology(mesh)
    assert len(topo.unreferenced_points()) > 0  # mid-edge nodes no cell corner uses
    a, b, mid = mesh.mid_edge_nodes.T
    assert len(mid) == topo.n_faces and (a < b).all()
    xy = mesh.points[:, :2]
    off = np.linalg.norm(xy[mid] - 0.5 * (xy[a] + xy[b]), axis=1) > 1e-9
    radius = np.linalg.norm(xy[mid[off]], axis=1)  # the curved ones: the wall and a ring
    assert off.sum() == 56 and np.allclose(np.sort(np.unique(radius.round(9))), [0.5, 1.5])


def test_geo_is_meshed_and_size_factor_refines(shared_meshes):
    coarse = read_mesh(shared_meshes / "gmsh/naca12.geo", mesh_size_factor=2.0)
    fine = read_mesh(shared_meshes / "gmsh/naca12.geo", mesh_size_factor=1.0)
    assert coarse.dim == 3 and fine.dim == 3
    assert fine.n_cells > 2 * coarse.n_cells
    topo = Topology(fine)
    assert topo.components()[0] == 1
    assert (~topo.interior).sum() > 0


def test_2d_mesh_at_nonzero_z_is_read(shared_meshes):
    mesh = read_mesh(shared_meshes / "pyfr/euler-vortex.msh")
    assert np.all(mesh.points[:, 2] == mesh.points[0, 2])
    assert mesh.dim == 2


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_full_plan_on_every_shared_mesh(shared_meshes, tmp_path, name):
    from meshorder.pipeline import PlanOptions, make_plan
    from meshorder.plan import Plan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeshWarning)
        mesh = read_mesh(shared_meshes / name)
    plan = make_plan(mesh, PlanOptions(cells="rcm", colour=True, hyperplanes=True, nodes="rcm"))
    path = tmp_path / "plan.npz"
    plan.save(path)
    loaded = Plan.load(path)
    loaded.check_mesh(mesh.digest())
    # never much worse than the file's order; structured files (pyfr) are already good
    native = plan.metrics["native"]["sectors_per_warp_fp64"]
    assert plan.metrics["sectors_per_warp_fp64"] <= 1.15 * native
    assert plan.metrics["colours"] <= 2 * plan.metrics["max_faces_per_cell"] - 1
