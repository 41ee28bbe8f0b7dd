"""The DG keys of a case file."""

from __future__ import annotations

from gpusolver.integrators.explicit import TABLEAUX
from gpusolver.io.case import mesh_schema
from gpusolver.io.schema import Key
from gpusolver.physics.fluxes import FLUXES

SCHEME_KEYS: dict[str, Key] = {
    "flux": Key(str, tuple(FLUXES), "roe", help="Riemann flux at element faces"),
    "degree": Key(int, (0, 1, 2, 3), 1, help="polynomial degree of the modal basis"),
    "shock_capturing": Key(bool, default=False,
                           help="damp the high modes where the modal-decay sensor finds a "
                                "shock"),
}

RUN_KEYS: dict[str, Key] = {
    "time_integrator": Key(str, tuple(TABLEAUX), "rk4", help="explicit Runge-Kutta"),
}

#: Section -> key -> :class:`Key` of a DG case.
SCHEMA = mesh_schema("dg", "dg: modal discontinuous Galerkin", SCHEME_KEYS, RUN_KEYS)
