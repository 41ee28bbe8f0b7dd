"""Several parts in one process (loopback halo exchange) give the one-part answer."""

from pathlib import Path

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from gpusolver.solvers.fv.partitioned import PartitionedSolver
from meshorder import Topology, read_mesh
from meshorder.pipeline import PlanOptions, make_plan
from meshorder.testing import box_mesh

DATA = Path(__file__).resolve().parents[2] / "data"
AIRFOIL = {"airfoil": "slip-wall", "farfield": "farfield"}
BOX = {"xmin": "supersonic-inflow", "xmax": "supersonic-outflow", "ymin": "slip-wall",
       "ymax": "farfield", "zmin": "symmetry", "zmax": "farfield"}


def _pair(mesh, boundaries, gas, n_parts, seed):
    print(f"seed {seed}")
    topology = Topology(mesh)
    plan = make_plan(mesh, PlanOptions(partitions=n_parts), topology=topology)
    scheme = Scheme("roe", 2, "least-squares", "venkatakrishnan")
    whole = Solver(mesh, gas, boundaries, scheme=scheme, stepping=Stepping("rk4", cfl=0.8),
                   plan=plan, backend="numpy", topology=topology)
    parts = PartitionedSolver(mesh, gas, boundaries, plan, scheme=scheme, cfl=0.8,
                              topology=topology)
    w = whole.primitive()
    w *= 1.0 + 0.05 * np.random.default_rng(seed).uniform(-1, 1, w.shape)
    whole.set_primitive(w)
    parts.set_conserved(whole.conserved())
    return whole, parts


@pytest.mark.parametrize("n_parts", [2, 3, 4])
def test_parts_give_the_one_part_answer_on_an_airfoil(n_parts):
    mesh = read_mesh(DATA / "naca0012_tri.msh")
    whole, parts = _pair(mesh, AIRFOIL, Gas(dim=2, mach=0.6, aoa_deg=2.0), n_parts,
                         seed=int(np.random.default_rng().integers(2**31)))
    assert parts.n_parts == n_parts
    expected = whole.discretisation.residual(whole.u)
    got = parts.residual(parts.u)
    assert np.abs(got - expected).max() <= 1e-12 * np.abs(expected).max()
    for _ in range(3):
        norms = [whole.step(), parts.step()]
        np.testing.assert_allclose(norms[1], norms[0], rtol=1e-12)
    np.testing.assert_allclose(parts.conserved(), whole.conserved(), rtol=1e-12, atol=1e-14)
    forces = [s.wall_forces()["total"].force for s in (whole, parts)]
    np.testing.assert_allclose(forces[1], forces[0], rtol=1e-11, atol=1e-15)


def test_parts_give_the_one_part_answer_in_3d():
    whole, parts = _pair(box_mesh(6, 5, 4), BOX, Gas(dim=3, mach=1.4, aoa_deg=2.0), 3,
                         seed=int(np.random.default_rng().integers(2**31)))
    for _ in range(2):
        np.testing.assert_allclose(parts.step(), whole.step(), rtol=1e-12)
    np.testing.assert_allclose(parts.conserved(), whole.conserved(), rtol=1e-12, atol=1e-14)


def test_a_plan_without_parts_is_refused():
    mesh = read_mesh(DATA / "naca0012_tri.msh")
    with pytest.raises(ConfigError, match="--partitions"):
        PartitionedSolver(mesh, Gas(dim=2, mach=0.5), AIRFOIL, make_plan(mesh))
