"""Pressure along the chord at spanwise stations of a 3-D wing, and measured sections.

A run's wall Cp (``cp_<marker>.csv``: face centres and Cp) is cut into stations by
:func:`span_station`; :func:`read_measured_sections` reads measured Cp (such as
``cases/reference/oneram6_test2308_cp.csv``) and :func:`section_difference` compares
the two at the measured points.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: Surfaces of a section, as the measured files name them.
SURFACES = ("upper", "lower")

#: One station's Cp: ``{surface: (x_over_c, cp)}``, each sorted by chord fraction.
Section = dict[str, tuple[np.ndarray, np.ndarray]]


def span_station(centres: np.ndarray, cp: np.ndarray, span: float, leading_edge: float,
                 chord: float, width: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cp of the wall faces of a 3-D wing at one spanwise station, along the chord.

    Parameters
    ----------
    centres : numpy.ndarray
        ``(3, m)`` wall face centres (x chordwise, y spanwise, z up).
    cp : numpy.ndarray
        ``(m,)`` their pressure coefficients.
    span : float
        The station's y.
    leading_edge, chord : float
        The section's leading-edge x and chord there.
    width : float
        Faces whose centre lies within ``width / 2`` of the station are taken.

    Returns
    -------
    x_over_c, cp, upper : numpy.ndarray
        Chord fraction, Cp, and whether the face is on the upper surface (z above the
        chord line), each sorted by chord fraction.

    Examples
    --------
    >>> centres = np.array([[0.1, 0.5, 0.9, 0.5], [1.0, 1.0, 1.0, 3.0], [0.01, -0.02, 0.0, 0.0]])
    >>> x, values, upper = span_station(centres, np.array([-1.0, 0.2, 0.1, 9.0]), 1.0, 0.0,
    ...                                 1.0, 0.1)
    >>> x.tolist(), values.tolist(), upper.tolist()
    ([0.1, 0.5, 0.9], [-1.0, 0.2, 0.1], [True, False, False])
    """
    near = np.abs(centres[1] - span) <= 0.5 * width
    x = (centres[0, near] - leading_edge) / chord
    order = np.argsort(x, kind="stable")
    return x[order], cp[near][order], (centres[2, near] > 0)[order]


def read_measured_sections(path: str | Path) -> dict[float, Section]:
    """Measured Cp per spanwise station and surface, each sorted by chord fraction.

    Parameters
    ----------
    path : str or pathlib.Path
        CSV with ``#`` comments and the columns ``eta,surface,x_over_c,cp`` (``eta``: the
        station's fraction of the semi-span; ``surface``: ``upper`` or ``lower``).

    Returns
    -------
    dict
        ``{eta: {surface: (x_over_c, cp)}}``.

    Raises
    ------
    ValueError
        Naming the file, and the line of a surface that is neither ``upper`` nor
        ``lower`` or of a value that is no number.
    """
    columns: dict[str, list] = {"eta": [], "surface": [], "x_over_c": [], "cp": []}
    with open(path, encoding="utf-8") as f:
        lines = [(number, line) for number, line in enumerate(f, 1)
                 if line.strip() and not line.startswith("#")]
    header = lines[0][1].strip().split(",") if lines else []
    if header != list(columns):
        raise ValueError(f"{path}: the first row that is no comment must be "
                         f"{','.join(columns)}, not {','.join(header) or 'missing'}")
    for number, line in lines[1:]:
        eta, surface, x, cp = (line.strip().split(",") + [""] * 4)[:4]
        if surface not in SURFACES:
            raise ValueError(f"{path}: line {number}: surface {surface!r}; expected "
                             f"{' or '.join(SURFACES)}")
        try:
            values = float(eta), float(x), float(cp)
        except ValueError:
            raise ValueError(f"{path}: line {number}: eta, x_over_c and cp must be numbers, "
                             f"got {line.strip()!r}") from None
        for name, value in zip(("eta", "x_over_c", "cp"), values, strict=True):
            columns[name].append(value)
        columns["surface"].append(surface)
    data = {name: np.array(values) for name, values in columns.items()}
    sections: dict[float, Section] = {}
    for eta in np.unique(data["eta"]):
        sections[float(eta)] = {}
        for surface in SURFACES:
            here = (data["eta"] == eta) & (data["surface"] == surface)
            order = np.argsort(data["x_over_c"][here], kind="stable")
            sections[float(eta)][surface] = (data["x_over_c"][here][order],
                                             data["cp"][here][order])
    return sections


def section_difference(x: np.ndarray, cp: np.ndarray, upper: np.ndarray,
                       measured: Section) -> float:
    """RMS of computed minus measured Cp at the measured points of one station.

    The computed Cp of each surface (``x``, ``cp``, ``upper`` as :func:`span_station`
    returns them) is interpolated linearly in x/c to the measured chord fractions.

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 0.0, 1.0])
    >>> cp = np.array([-1.0, 0.0, 1.0, 0.0])
    >>> upper = np.array([True, True, False, False])
    >>> measured = {"upper": (np.array([0.5]), np.array([-0.5])),
    ...             "lower": (np.array([0.5]), np.array([0.3]))}
    >>> round(section_difference(x, cp, upper, measured), 12)
    0.141421356237
    """
    errors = []
    for surface, (x_measured, cp_measured) in measured.items():
        side = upper if surface == "upper" else ~upper
        errors.append(np.interp(x_measured, x[side], cp[side]) - cp_measured)
    return float(np.sqrt(np.mean(np.concatenate(errors) ** 2)))
