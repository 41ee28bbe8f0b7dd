"""The vortex sheet's intensity: exact potential flows, zero velocity inside the body."""

import math

import numpy as np
import pytest

from gpusolver.errors import ConfigError
from gpusolver.solvers.vortex.biot_savart import direct_velocity
from gpusolver.solvers.vortex.body import circle, naca_airfoil, rounded_plate
from gpusolver.solvers.vortex.sheet import VortexSheet, mean_tangential, panel_velocity


def _stream(sheet, speed=(1.0, 0.0)):
    return sheet.body.tangents @ np.asarray(speed, float)


def test_a_panel_velocity_equals_the_sum_of_many_point_vortices():
    rng = np.random.default_rng(4)
    a, b = 0.3 + 0.1j, 1.1 + 0.7j
    points = rng.uniform(-1, 2, 20) + 1j * rng.uniform(-1, 2, 20)
    s = (np.arange(20000) + 0.5) / 20000
    sources = a + s * (b - a)
    exact = (abs(b - a) / len(s) / (2j * math.pi) / (points[:, None] - sources)).sum(axis=1)
    assert np.allclose(panel_velocity(points, a, b), exact, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n", [64, 256])
def test_on_a_circle_in_a_stream_the_intensity_is_the_potential_flow_slip(n):
    sheet = VortexSheet(circle(n))
    gamma = sheet.intensities(_stream(sheet), 0.0)
    angle = np.arctan2(*sheet.body.midpoints.T[::-1])
    error = np.abs(gamma + 2 * np.sin(angle)).max()
    print(f"n {n}: max error {error:.2e}")
    assert error < 20 / n**2
    assert abs(gamma @ sheet.body.lengths) < 1e-12


@pytest.mark.parametrize("body", [circle(200), naca_airfoil("2412", 300),
                                  rounded_plate(600, thickness=0.1)],
                         ids=["circle", "naca2412", "plate"])
def test_with_a_free_vortex_outside_the_flow_inside_the_body_is_still(body):
    sheet = VortexSheet(body)
    vortex, strength = np.array([[0.5, 0.9]]), np.array([0.7])
    known = _stream(sheet, (1.0, 0.2)) + mean_tangential(vortex, strength, body)
    gamma = sheet.intensities(known, float(strength.sum()))
    assert math.isclose(gamma @ body.lengths, -0.7, rel_tol=1e-12)
    # points well inside: the midpoints pulled in by a third of the local half-thickness
    centre = body.vertices.mean(axis=0)
    inside = centre + 0.5 * (body.midpoints[::7] - centre)
    stream = np.array([1.0, 0.2])
    total = stream + direct_velocity(vortex, strength, 1e-3, inside) + sheet.velocity(gamma,
                                                                                      inside)
    print(f"largest speed inside: {np.abs(total).max():.2e}")
    assert np.abs(total).max() < 5e-3


def test_the_mean_tangential_velocity_of_point_vortices_is_their_exact_average():
    # against a fine midpoint average of the point vortices' velocity (no core), for
    # vortices near and far, either side of the panels
    rng = np.random.default_rng(8)
    print("seed 8")
    body = rounded_plate(40, thickness=0.1)
    vortices = np.column_stack([rng.uniform(-0.2, 1.2, 30), rng.uniform(-0.3, 0.3, 30)])
    strength = rng.normal(size=30)
    s = (np.arange(4000) + 0.5) / 4000
    points = body.vertices[:, None] + s[None, :, None] * (body.ends - body.vertices)[:, None]
    velocity = direct_velocity(vortices, strength, 1e-12, points.reshape(-1, 2))
    average = (velocity.reshape(40, -1, 2) * body.tangents[:, None]).sum(axis=2).mean(axis=1)
    assert np.allclose(mean_tangential(vortices, strength, body), average, atol=1e-3)


def test_a_thin_plate_stays_still_inside_with_vortices_hugging_a_face():
    # vortices 0.3 panel lengths over the upper face of a 2% plate: the point vortices'
    # field is harmonic inside, so the sheet leaves the inside nearly at rest (1e-2);
    # from their smoothed cores' averages, flow went through the faces at 0.2 U, which
    # blew the time loop up
    body = rounded_plate(300, thickness=0.02)
    x = np.linspace(0.05, 0.95, 40)
    vortices = np.column_stack([x, np.full(40, 0.01 + 0.3 * body.lengths.mean())])
    strength = np.full(40, -0.01)
    sheet = VortexSheet(body)
    gamma = sheet.intensities(_stream(sheet) + mean_tangential(vortices, strength, body),
                              float(strength.sum()))
    inside = np.column_stack([np.linspace(0.1, 0.9, 9), np.zeros(9)])
    total = (np.array([1.0, 0.0]) + direct_velocity(vortices, strength, 1e-12, inside)
             + sheet.velocity(gamma, inside))
    print(f"largest speed inside: {np.abs(total).max():.2e}")
    assert np.abs(total).max() < 0.02


def test_bad_sheet_inputs_are_refused():
    with pytest.raises(ConfigError, match="points_per_panel must be a positive integer"):
        VortexSheet(circle(10), points_per_panel=0)
    sheet = VortexSheet(circle(10))
    with pytest.raises(ConfigError, match=r"along must be \(10,\)"):
        sheet.intensities(np.zeros((10, 2)), 0.0)
