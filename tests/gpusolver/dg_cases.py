"""Meshes and exact solutions shared by the DG tests."""

from __future__ import annotations

import dataclasses

import numpy as np

from gpusolver.backends import get_backend
from gpusolver.physics.exact import isentropic_vortex
from meshorder.testing import grid_mesh

#: Shu's isentropic vortex (strength 5), as the DG tests call it.
vortex = isentropic_vortex


def mixed_mesh(rng):
    """Triangles and quadrilaterals (``grid_mesh(6, 5, "mixed")``), inner nodes moved."""
    mesh = grid_mesh(6, 5, "mixed")
    points = mesh.points.copy()
    inner = (points[:, 0] > 0) & (points[:, 0] < 1) & (points[:, 1] > 0) & (points[:, 1] < 1)
    points[inner, :2] += 0.02 * rng.uniform(-1, 1, (inner.sum(), 2))
    return dataclasses.replace(mesh, points=points)


def assert_kernels_match_the_rate(solver, backend: str, precision: str, rng) -> None:
    """The kernels of ``solver``'s layout (``host``: compiled for the CPU; ``cupy``) give
    the NumPy rate and boundary fluxes of a perturbed vortex: 1e-12 in fp64, 2e-5 in fp32."""
    from gpusolver.solvers.dg.fused import FusedDG

    u = solver.discretisation.project(lambda x, t: vortex(x, t, centre=(0.4, 0.6)))
    u *= 1 + 0.02 * rng.uniform(-1, 1, u.shape)
    expected = solver.discretisation.rate(u)
    dtype = np.float64 if precision == "fp64" else np.float32
    fused = FusedDG(solver.discretisation, get_backend("numpy" if backend == "host" else "cupy"),
                    dtype)
    got = fused.backend.to_host(fused.rate(u.astype(dtype)))
    tolerance = 1e-12 if precision == "fp64" else 2e-5
    for name, a, b in (("rate", got, expected), ("boundary flux", fused.backend.to_host(
            fused.boundary_flux), solver.discretisation.boundary_flux)):
        error = np.abs(a - b).max() / np.abs(b).max()
        print(f"{name}: relative error {error:.2e}")
        assert error < tolerance


def assert_the_rate_conserves(solver, rng) -> tuple[np.ndarray, np.ndarray]:
    """From the solver's state perturbed by 5%: the integral of the rate over the domain
    is minus what the boundary faces' fluxes carry out, to 1e-11. Returns the state and
    its rate."""
    u = solver.u * (1 + 0.05 * rng.uniform(-1, 1, solver.u.shape))
    rate = solver.discretisation.rate(u)
    total = sum(np.einsum("mq,qe,vme->v", g.values, g.weights, rate[:, :, g.elements])
                for g in solver.layout.groups)
    np.testing.assert_allclose(total, -solver.discretisation.boundary_flux.sum(axis=1),
                               rtol=1e-11, atol=1e-12)
    return u, rate


def diverge_from_one_bad_element(solver, mesh, bad: int, match: str):
    """Set element ``bad`` (file numbering) of ``solver`` (a DG solver or its parts) to
    NaN, take one step at the step size fixed before, and return the
    :class:`SolverDivergedError` it raises (message matching ``match``), after checking
    that it names an element the NaN can reach in the step's four stages."""
    import pytest

    from gpusolver.errors import SolverDivergedError

    dt = solver.time_step()
    u = solver.conserved()
    u[:, :, bad] = np.nan
    solver.set_conserved(u)
    with np.errstate(all="ignore"), pytest.raises(SolverDivergedError, match=match) as failure:
        solver.step(dt)
    assert failure.value.cell in cells_within(mesh, bad, 4)
    return failure.value


def cells_within(mesh, cell: int, faces: int) -> set[int]:
    """The cells of ``mesh`` at most ``faces`` faces from ``cell`` (file numbering): where
    a bad state can spread in as many Runge-Kutta stages."""
    from meshorder import Topology

    graph, near = Topology(mesh).cell_graph, {cell}
    for _ in range(faces):
        near |= {int(c) for c in np.concatenate(
            [graph.indices[graph.indptr[k]:graph.indptr[k + 1]] for k in near])}
    return near
