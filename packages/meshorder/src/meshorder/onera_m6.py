"""The ONERA M6 wing: planform and ONERA D section (Schmitt and Charpin, AGARD AR-138).

Coordinates of the ONERA D half-section as published with NASA Glenn's WIND validation
case of the M6 wing (www.grc.nasa.gov/www/wind/valid/m6wing/m6wing.html): x/c and the
upper-surface z/c of the symmetric section, 9.8% thick at 37.6% chord, with a trailing
edge 0.14% thick that CFD closes to zero.
"""

from __future__ import annotations

import math

import numpy as np

#: Root chord, semi-span (m), leading-edge sweep (deg) and taper of the AGARD geometry.
ROOT_CHORD = 0.8059
SEMI_SPAN = 1.1963
LEADING_EDGE_SWEEP_DEG = 30.0
TAPER = 0.562

#: Reference area (m^2, the half wing) and mean aerodynamic chord (m) of the AGARD report.
REFERENCE_AREA = 0.7532
MEAN_AERODYNAMIC_CHORD = 0.64607

_HALF_SECTION = np.array([
    [0.0000000, 0.0000000], [0.0000165, 0.0006914], [0.0000696, 0.0014416],
    [0.0001675, 0.0022554], [0.0003232, 0.0031382], [0.0005508, 0.0040959],
    [0.0008657, 0.0051343], [0.0012868, 0.0062598], [0.0018364, 0.0074784],
    [0.0025441, 0.0087958], [0.0034428, 0.0102163], [0.0045704, 0.0117419],
    [0.0059751, 0.0133708], [0.0077112, 0.0150951], [0.0098413, 0.0168984],
    [0.0124479, 0.0187537], [0.0156171, 0.0206220], [0.0194609, 0.0224545],
    [0.0241067, 0.0242004], [0.0297008, 0.0258245], [0.0364261, 0.0273317],
    [0.0444852, 0.0287912], [0.0541248, 0.0303278], [0.0656303, 0.0320138],
    [0.0793366, 0.0338372], [0.0956354, 0.0357742], [0.1149796, 0.0377923],
    [0.1378963, 0.0398522], [0.1649976, 0.0419089], [0.1919327, 0.0436214],
    [0.2187096, 0.0450507], [0.2453310, 0.0462358], [0.2717978, 0.0471987],
    [0.2981113, 0.0479494], [0.3242726, 0.0484902], [0.3502830, 0.0488183],
    [0.3761446, 0.0489296], [0.4018567, 0.0488202], [0.4274223, 0.0484833],
    [0.4528441, 0.0479351], [0.4781197, 0.0471661], [0.5032514, 0.0461903],
    [0.5282426, 0.0450209], [0.5530937, 0.0436741], [0.5778043, 0.0421684],
    [0.6023757, 0.0405241], [0.6268104, 0.0387613], [0.6511093, 0.0368990],
    [0.6752726, 0.0349542], [0.6993027, 0.0329402], [0.7231995, 0.0308662],
    [0.7469658, 0.0287365], [0.7705998, 0.0265505], [0.7941055, 0.0243027],
    [0.8174828, 0.0219842], [0.8407324, 0.0195838], [0.8638564, 0.0170915],
    [0.8868235, 0.0145051], [0.9061905, 0.0122389], [0.9225336, 0.0102727],
    [0.9363346, 0.0085827], [0.9479946, 0.0071423], [0.9578511, 0.0059224],
    [0.9661860, 0.0048907], [0.9732361, 0.0040180], [0.9792020, 0.0032796],
    [0.9842508, 0.0026547], [0.9885252, 0.0021257], [0.9921438, 0.0016778],
    [0.9952080, 0.0012985], [0.9978030, 0.0009773], [1.0000000, 0.0007052],
])


def onera_d() -> np.ndarray:
    """The closed ONERA D section, unit chord: ``(m, 2)`` points (x, z) from the trailing
    edge over the upper surface to the leading edge and back, the trailing edge closed by
    a thickness ramp linear in x (as CFD models of the M6 do), the last point not repeated.

    Examples
    --------
    >>> section = onera_d()
    >>> bool(abs(section[:, 1].max() - 0.0489) < 1e-3), section[0].tolist()
    (True, [1.0, 0.0])
    """
    x, z = _HALF_SECTION.T
    z = z - x * z[-1]
    upper = np.column_stack([x[::-1], z[::-1]])
    lower = np.column_stack([x[1:-1], -z[1:-1]])
    return np.concatenate([upper, lower])


def planform() -> tuple[float, float, float]:
    """Root chord, tip chord and leading-edge x of the tip (m)."""
    return (ROOT_CHORD, ROOT_CHORD * TAPER,
            SEMI_SPAN * math.tan(math.radians(LEADING_EDGE_SWEEP_DEG)))
