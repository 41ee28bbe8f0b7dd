"""Figures: adjacency (correlation) matrices before and after, bandwidth profile, histograms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .atomic import atomic_path
from .permutation import inverse
from .plan import Plan
from .topology import Topology

#: Above this many neighbour pairs the adjacency matrix is drawn as a density image.
MAX_DOTS = 400_000

#: Pixels per side of the density image.
DENSITY_BINS = 800


def _pairs(topology: Topology, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left, right = topology.face_cells[topology.interior].T
    i, j = rank[left], rank[right]
    return np.concatenate([i, j]), np.concatenate([j, i])


def _adjacency(ax: Axes, rows: np.ndarray, cols: np.ndarray, n: int, title: str) -> None:
    """One dot per neighbour pair; above :data:`MAX_DOTS` pairs (say 10M cells) the
    number of pairs per pixel on a log scale, so every pair counts and nothing is sampled."""
    if len(rows) > MAX_DOTS:
        counts, _, _ = np.histogram2d(rows, cols, bins=DENSITY_BINS, range=[[0, n], [0, n]])
        ax.imshow(np.log1p(counts), extent=(0, n, n, 0), cmap="Greys",
                  interpolation="nearest")
    else:
        ax.scatter(cols, rows, s=0.2, marker=".", linewidths=0, color="k", rasterized=True)
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    ax.set_title(title)
    ax.set_xlabel("cell index")
    ax.set_ylabel("cell index")


def _span_profile(rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    low, high = np.arange(n), np.arange(n)
    np.minimum.at(low, rows, cols)
    np.maximum.at(high, rows, cols)
    return high - low


def plot_plan(topology: Topology, plan: Plan, path: str | Path) -> None:
    """Save :func:`plan_figure` to ``path`` (PNG, PDF, SVG, ...), atomically."""
    fig = plan_figure(topology, plan)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)


def plan_figure(topology: Topology, plan: Plan):
    """The adjacency matrix before and after, the bandwidth profile, and histograms.

    Parameters
    ----------
    topology : Topology
        Topology of the mesh in its native order.
    plan : Plan
        The plan to draw.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot: it shows inline in a notebook and needs no display.
        One panel each: native and plan adjacency, row-span profile, faces per colour,
        cells per LU-SGS level and the cells coloured by part (the last three when the
        plan has them).
    """
    n = topology.n_cells
    before = _pairs(topology, np.arange(n))
    after = _pairs(topology, inverse(plan.cell_order))
    split = plan.partition()
    panels = 3 + (len(plan.colour_order) > 0) + (len(plan.forward_order) > 0) + (split is not None)
    fig = Figure(figsize=(4.6 * panels, 4.6), layout="constrained")
    axes = fig.subplots(1, panels)
    _adjacency(axes[0], *before, n, f"native (bandwidth {plan.metrics['native']['bandwidth']})")
    _adjacency(axes[1], *after, n,
               f"{plan.parameters['cells']} (bandwidth {plan.metrics['bandwidth']})")
    ax = axes[2]
    ax.plot(_span_profile(*before, n), lw=0.6, alpha=0.6, drawstyle="steps-mid",
            label="native")
    ax.plot(_span_profile(*after, n), lw=0.9, alpha=0.9, drawstyle="steps-mid",
            label=plan.parameters["cells"])
    ax.set_yscale("symlog")
    ax.set_xlabel("row (cell index)")
    ax.set_ylabel("row span (max - min neighbour index)")
    ax.set_title("bandwidth profile")
    ax.legend()
    k = 3
    if len(plan.colour_order):
        axes[k].bar(np.arange(len(plan.colour_offsets) - 1), np.diff(plan.colour_offsets))
        axes[k].set_title(f"faces per colour ({plan.metrics['colours']} colours)")
        axes[k].set_xlabel("colour")
        k += 1
    if len(plan.forward_order):
        axes[k].plot(np.diff(plan.forward_offsets), lw=0.8)
        axes[k].set_title(f"LU-SGS forward levels ({plan.metrics['forward_levels']})")
        axes[k].set_xlabel("level")
        axes[k].set_ylabel("cells")
        k += 1
    if split is not None:
        centroids = topology.mesh.centroids()
        part = split.part_of()[inverse(plan.cell_order)]  # of every cell in the file's order
        axes[k].scatter(centroids[:, 0], centroids[:, 1], c=part % 10, s=1.0, cmap="tab10",
                        vmin=0, vmax=9, linewidths=0)
        axes[k].set_aspect("equal")
        axes[k].set_title(f"{split.n_parts} parts (edge cut {plan.metrics['edge_cut']})")
        axes[k].set_xlabel("x")
        axes[k].set_ylabel("y")
    for i, axis in enumerate(axes):  # 1e6-style ticks: 10M-cell labels do not run together
        axis.ticklabel_format(axis="x" if i == 2 else "both", style="sci", scilimits=(-3, 4))
    return fig
