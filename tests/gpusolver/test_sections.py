"""Spanwise stations of a wing's wall Cp and the measured ONERA M6 sections."""

from pathlib import Path

import numpy as np
import pytest

from gpusolver.monitors.sections import read_measured_sections, section_difference, span_station
from meshorder.onera_m6 import SEMI_SPAN, planform

MEASURED = Path(__file__).resolve().parents[2] / "cases" / "reference" / "oneram6_test2308_cp.csv"
#: Stagnation Cp at M 0.8395: (2 / (gamma M^2)) ((1 + 0.2 M^2)^3.5 - 1).
STAGNATION_CP = 2 / (1.4 * 0.8395**2) * ((1 + 0.2 * 0.8395**2) ** 3.5 - 1)


def test_the_measured_m6_sections_are_the_271_orifices_of_test_2308():
    sections = read_measured_sections(MEASURED)
    assert list(sections) == [0.20, 0.44, 0.65, 0.80, 0.90, 0.96, 0.99]
    counts = [sum(x.size for x, _ in section.values()) for section in sections.values()]
    assert counts == [34] * 4 + [45] * 3 and sum(counts) == 271
    for section in sections.values():
        (x_upper, cp_upper), (x_lower, cp_lower) = section["upper"], section["lower"]
        assert np.all((x_upper >= 0) & (x_upper <= 1)) and np.all(np.diff(x_upper) > 0)
        assert max(cp_upper.max(), cp_lower.max()) < STAGNATION_CP
        assert cp_upper.min() < -0.9  # the suction peak of every station
        # sectional normal force: lift at 3 degrees, the lower surface pushing up
        grid = np.linspace(0.01, 0.95, 400)
        normal = np.trapezoid(np.interp(grid, x_lower, cp_lower)
                              - np.interp(grid, x_upper, cp_upper), grid)
        assert 0.15 < normal < 0.5


def _wall_at(eta, section, cp_shift=0.0):
    """Face centres of a wing at station ``eta`` where Cp is the measured one."""
    root, tip, tip_leading_edge = planform()
    chord = root + eta * (tip - root)
    xs, zs, cps = [], [], []
    for surface, sign in (("upper", 1.0), ("lower", -1.0)):
        x, cp = section[surface]
        xs.append(eta * tip_leading_edge + chord * x)
        zs.append(np.full(x.size, sign * 0.01))
        cps.append(cp + cp_shift)
    x = np.concatenate(xs)
    return np.stack([x, np.full(x.size, eta * SEMI_SPAN), np.concatenate(zs)]), np.concatenate(cps)


@pytest.mark.parametrize("shift", [0.0, 0.1])
def test_a_station_of_the_measured_cp_differs_from_it_by_the_shift(shift):
    sections = read_measured_sections(MEASURED)
    root, tip, tip_leading_edge = planform()
    eta = 0.44
    centres, cp = _wall_at(eta, sections[eta], shift)
    far = _wall_at(0.65, sections[0.65], 5.0)  # another station, left out by the band
    centres, cp = np.hstack([centres, far[0]]), np.concatenate([cp, far[1]])
    x, values, upper = span_station(centres, cp, eta * SEMI_SPAN, eta * tip_leading_edge,
                                    root + eta * (tip - root), 0.01 * SEMI_SPAN)
    assert x.size == 34
    assert section_difference(x, values, upper, sections[eta]) == pytest.approx(shift, abs=1e-12)


@pytest.mark.parametrize("text, message", [
    ("eta,side,x_over_c,cp\n", "must be eta,surface,x_over_c,cp"),
    ("# only comments\n", "not missing"),
    ("eta,surface,x_over_c,cp\n0.2,top,0.1,-0.5\n", "line 2: surface 'top'"),
    ("# note\neta,surface,x_over_c,cp\n0.2,upper,0.1,x\n", "line 3: eta, x_over_c and cp"),
])
def test_a_bad_measured_file_is_named_with_its_line(tmp_path, text, message):
    path = tmp_path / "cp.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        read_measured_sections(path)
    assert str(path) in str(error.value)
