"""SA-neg's source term: its derivative in nu_tilde against central differences."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusolver.physics import spalart_allmaras as sa


@settings(max_examples=300, deadline=None)
@given(chi=st.one_of(st.floats(1e-2, 1e3), st.floats(-1e2, -1e-2)),
       log_nu=st.floats(-7, -5), log_vorticity=st.floats(-2, 5), log_distance=st.floats(-6, 0))
def test_the_sources_derivative_is_its_slope(chi, log_nu, log_vorticity, log_distance):
    """Either branch, S-tilde clipped or not, r capped or not: the derivative is the
    central difference's (which is good to about 1e-6 of it) to 1e-5."""
    nu, vorticity, distance = 10.0**log_nu, 10.0**log_vorticity, 10.0**log_distance
    nt = np.array([chi * nu])
    args = (nu, np.array([vorticity]), np.array([distance]))
    with np.errstate(all="ignore"):  # where() evaluates the branch it does not take
        rate, derivative = sa.source(nt, *args)
        step = 1e-6 * abs(nt)
        slope = (sa.source(nt + step, *args)[0] - sa.source(nt - step, *args)[0]) / (2 * step)
    # near a kink (S-tilde's clip, r's cap) the difference straddles it: skip those
    with np.errstate(all="ignore"):
        left = (rate - sa.source(nt - step, *args)[0]) / step
        right = (sa.source(nt + step, *args)[0] - rate) / step
    if abs(left - right)[0] > 1e-4 * (abs(slope)[0] + abs(rate / nt)[0]):
        return
    scale = abs(slope)[0] + 1e-8 * abs(rate / nt)[0]
    assert abs(derivative - slope)[0] <= 1e-5 * scale
