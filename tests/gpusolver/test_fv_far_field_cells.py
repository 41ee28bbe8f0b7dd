"""Second order on huge, stretched far-field cells (the ONERA M6 divergence, issue 20).

A real mesh with its far field hundreds of chords out has cells hundreds of chords
wide. Venkatakrishnan's threshold ``(K h)^3`` grows with the cell size, so there the
limiter was off; a disturbance reaching those cells (here a wall facing the flow,
on the mesh of a 1000-chord box) was reconstructed unlimited and second order
diverged within 15 iterations, while the same mesh at unit scale ran.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from gpusolver.errors import SolverDivergedError
from gpusolver.solvers.fv import Gas, Scheme, Solver, Stepping
from gpusolver.solvers.fv.discretisation import limiter_threshold
from meshorder.testing import box_mesh

BOUNDARIES = {"xmin": "farfield", "xmax": "slip-wall", "ymin": "symmetry",
              "ymax": "farfield", "zmin": "farfield", "zmax": "farfield"}


def far_field_box(scale: float):
    """5 x 5 x 5 x 6 tetrahedra of a box ``scale`` x ``0.3 scale`` x ``10 scale``."""
    mesh = box_mesh(5, 5, 5)
    return dataclasses.replace(mesh, points=mesh.points * np.array([1.0, 0.3, 10.0]) * scale)


def run(mesh, scheme: Scheme, iterations: int) -> Solver:
    solver = Solver(mesh, Gas(dim=3, mach=0.84, aoa_deg=3.06), BOUNDARIES, scheme=scheme,
                    stepping=Stepping("rk4", cfl=1.0), backend="numpy")
    for _ in range(iterations):
        solver.step()
    return solver


def test_second_order_on_huge_cells_stays_bounded():
    solver = run(far_field_box(1000.0), Scheme("roe", 2), 60)
    pressure = solver.primitive()[-1]
    assert 0.5 < pressure.min() and pressure.max() < 2.5
    assert solver.discretisation.limiter_values.min() < 0.9  # the limiter acts there


def test_the_uncapped_threshold_diverges_there_and_not_at_unit_scale():
    # least-squares gradients, with which the uncapped threshold went wrong on far-field cells
    uncapped = Scheme("roe", 2, "least-squares", venkatakrishnan_cap=np.inf)
    run(far_field_box(1.0), uncapped, 30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one message, no NumPy RuntimeWarnings first
        with pytest.raises(SolverDivergedError, match="iteration 1[0-9]: the solution at cell"):
            run(far_field_box(1000.0), uncapped, 30)


def test_the_threshold_is_the_classic_one_on_cells_below_the_cap():
    gas = Gas(dim=3, mach=0.8)
    volume = np.array([1e-9, 1e-6, 1.0, 1e3, 1e6])
    eps2 = limiter_threshold(volume, 3, gas, Scheme())
    classic = (5.0 * volume ** (1 / 3)) ** 3
    assert np.allclose(eps2[:, :2], classic[:2])
    assert np.allclose(eps2[:, 2:], np.array([0.09, 0.09, 0.09, 0.09, 0.09 / 1.4**2])[:, None])
