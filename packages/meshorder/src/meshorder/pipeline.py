"""From a mesh to a plan: orderings, face order, colouring, hyperplanes, metrics."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

import numpy as np

from . import __version__
from .agglomeration import coarse_graph, hierarchy
from .blocks import BLOCK_ARRAYS, build_face_blocks
from .colouring import colour_cells, colour_items
from .errors import UsageError
from .faceorder import get_face_order
from .hyperplanes import colour_levels, renumber_by_level, sweep_levels
from .mesh import Mesh
from .metrics import layout_metrics, matrix_metrics, renumber_graph, sectors_per_warp
from .orderings import OrderingInput, get_ordering
from .part_mesh import PartMesh, part_mesh
from .partition import Partition, PartitionError, partition_cells
from .permutation import check_permutation, inverse
from .plan import Plan
from .progress import Steps
from .topology import CSR, Topology, sorted_columns

#: The default combination, chosen from the measurements in docs/benchmarks.md.
DEFAULT_CELLS = "rcm"
DEFAULT_FACES = "greedy"
#: :attr:`PlanOptions.weights` weighing each cell by its number of faces.
FACE_WEIGHTS = "faces"


def check_weights(weights: np.ndarray, n_cells: int, what: str) -> None:
    """Raise :class:`PartitionError` unless ``weights`` holds one positive finite number
    per cell; the message names ``what`` and the first bad cell.

    Examples
    --------
    >>> check_weights(np.array([1.0, 0.0]), 2, "w.txt")
    Traceback (most recent call last):
    ...
    meshorder.partition.PartitionError: w.txt: the weight of cell 1 is 0.0; expected a ...
    """
    weights = np.asarray(weights)
    if weights.shape != (n_cells,):
        raise PartitionError(f"{what}: {weights.size} weight(s) for a mesh of {n_cells} cells; "
                         "expected one per cell, in the mesh file's order")
    bad = np.flatnonzero(~(np.isfinite(weights) & (weights > 0)))
    if len(bad):
        raise PartitionError(f"{what}: the weight of cell {int(bad[0])} is {weights[bad[0]]}; "
                         "expected a positive number")


@dataclass(frozen=True)
class PlanOptions:
    """What to compute for a plan.

    Attributes
    ----------
    cells : str
        Cell ordering name (see :data:`meshorder.orderings.ORDERINGS`).
    faces : str
        Face ordering name (see :data:`meshorder.faceorder.FACE_ORDERS`).
    nodes : str or None
        Node ordering name for cell-vertex schemes; None numbers nodes by first
        use in the new cell order and computes no edges.
    colour : bool
        Colour faces (and edges when ``nodes`` is set).
    hyperplanes : bool
        Compute LU-SGS forward and backward levels.
    sweep_colours : bool
        The LU-SGS levels are cell colours (multicolour sweeps: few, wide levels;
        :func:`meshorder.hyperplanes.colour_levels`) rather than hyperplanes; implies
        ``hyperplanes``.
    renumber_by_level : bool
        Renumber cells level by level (keeps the sequential sweep exactly; hyperplanes
        only).
    seed_markers : tuple of str or None
        Boundary markers seeding ``layers`` (and layered faces); None means all.
    seed : int
        Random seed (``random``, ``metis``).
    cluster_size : int
        Target cells per METIS cluster.
    partitions : int
        Parts for several GPUs (1: none): the cells are split by METIS and each part's
        cells follow, interior first, in the cell ordering (:mod:`meshorder.partition`).
    weights : str or None
        The cells' weights that METIS balances across parts: None (each cell one),
        ``faces`` (each cell's number of faces: its share of the face loop, so a hexahedron
        weighs 6 and a tetrahedron 4), or the name of weights given to
        :func:`make_plan` as ``cell_weights``.
    blocks : int
        Faces per block of the block-coloured face kernels (0: no blocks); the plan
        then holds each block's cells, their faces and the block colouring
        (:mod:`meshorder.blocks`).
    multigrid : int
        Coarse levels of agglomeration multigrid to store (0: none;
        :func:`meshorder.agglomeration.hierarchy`, fewer where the mesh runs out of cells).
    """

    cells: str = DEFAULT_CELLS
    faces: str = DEFAULT_FACES
    nodes: str | None = None
    colour: bool = False
    hyperplanes: bool = False
    sweep_colours: bool = False
    renumber_by_level: bool = False
    seed_markers: tuple[str, ...] | None = None
    blocks: int = 0
    seed: int = 0
    cluster_size: int = 256
    partitions: int = 1
    weights: str | None = None
    multigrid: int = 0

    @property
    def lusgs_levels(self) -> bool:
        """Whether the plan holds LU-SGS sweep levels (hyperplanes or colours)."""
        return self.hyperplanes or self.sweep_colours

    def as_dict(self) -> dict:
        """JSON-ready parameters."""
        d = dict(self.__dict__)
        d["seed_markers"] = list(self.seed_markers) if self.seed_markers else None
        return d

    @classmethod
    def from_dict(cls, parameters: dict) -> PlanOptions:
        """The options :meth:`as_dict` gave ``parameters`` (a plan's; keys it does not
        know are left out).

        Examples
        --------
        >>> options = PlanOptions(cells="metis", seed_markers=("wall",), multigrid=2)
        >>> PlanOptions.from_dict(options.as_dict()) == options
        True
        """
        names = {f.name for f in fields(cls)}
        given = {k: v for k, v in parameters.items() if k in names}
        if given.get("seed_markers") is not None:
            given["seed_markers"] = tuple(given["seed_markers"])
        return cls(**given)


def run_ordering(name: str, data: OrderingInput, options: PlanOptions) -> np.ndarray:
    """Call the ordering ``name`` with the options it accepts."""
    function = get_ordering(name)
    accepted = inspect.signature(function).parameters
    extra = {k: getattr(options, k) for k in ("seed", "cluster_size", "lusgs_levels")
             if k in accepted}
    return function(data, **extra)


def make_plan(mesh: Mesh, options: PlanOptions | None = None, *,
              topology: Topology | None = None, cell_order: np.ndarray | None = None,
              cell_weights: np.ndarray | None = None, native: dict | None = None,
              progress: bool = False) -> Plan:
    """Compute a plan for ``mesh``.

    Parameters
    ----------
    mesh : Mesh
    options : PlanOptions, optional
        Defaults to :class:`PlanOptions` ().
    topology : Topology, optional
        Reuse an existing topology of ``mesh``.
    cell_order : numpy.ndarray, optional
        A cell order computed elsewhere (new -> old); ``options.cells`` then only
        labels it.
    cell_weights : numpy.ndarray, optional
        Positive weight of every cell (the file's order) for the partitions; then
        ``options.weights`` only labels them.
    native : dict, optional
        The layout metrics of the file's own order (:func:`layout_metrics` of the
        topology's cell graph and faces) where already known: they cost as much as the
        plan's own.
    progress : bool
        Show a progress bar on stderr for long runs.

    Returns
    -------
    Plan
        Validated; ``plan.metrics["timings"]`` holds each step's seconds and
        ``plan.metrics["native"]`` the layout metrics of the file's own order.

    Examples
    --------
    >>> from meshorder.testing import grid_mesh
    >>> plan = make_plan(grid_mesh(3, 2), PlanOptions(cells="rcm", colour=True))
    >>> plan.n_cells, plan.metrics["colours"] >= plan.metrics["max_faces_per_cell"]
    (6, True)
    """
    options = options or PlanOptions()
    if cell_order is None:
        get_ordering(options.cells)  # fail before any work
    else:
        check_permutation(cell_order, mesh.n_cells, "cell order")
    get_face_order(options.faces)
    if cell_weights is not None:
        check_weights(cell_weights, mesh.n_cells, "cell weights")
    elif options.weights not in (None, FACE_WEIGHTS):
        raise UsageError(f"weights {options.weights!r} need their values (cell_weights), "
                         f"or name {FACE_WEIGHTS!r}")
    if options.nodes is not None:
        get_ordering(options.nodes)
    if options.sweep_colours and options.renumber_by_level:
        raise UsageError("renumbering by level keeps hyperplane sweeps, not colour sweeps")
    if options.partitions > 1 and options.renumber_by_level:
        raise PartitionError("partitions and renumbering by level exclude each other (the "
                             "halo lists use the partitioned numbering)")
    steps = Steps(total=7 + 2 * (options.partitions > 1) + (options.multigrid > 0),
                  show=progress)
    try:
        return _make_plan(mesh, options, topology, cell_order, cell_weights, native, steps)
    finally:
        steps.close()


def _make_plan(mesh: Mesh, options: PlanOptions, topology: Topology | None,
               given_order: np.ndarray | None, weights: np.ndarray | None,
               native: dict | None, steps: Steps) -> Plan:
    with steps.step("topology"):
        topology = topology or Topology(mesh)
        graph = topology.cell_graph
        markers = (topology.marker_ids(list(options.seed_markers))
                   if options.seed_markers else None)
        seed_cells = topology.boundary_cells(markers)
    with steps.step(f"cells:{options.cells}"):
        if given_order is None:
            data = OrderingInput(graph, mesh.centroids(), seed_cells)
            cell_order = run_ordering(options.cells, data, options)
        else:
            cell_order = np.asarray(given_order, dtype=np.int64)
    arrays: dict[str, np.ndarray] = {}
    metrics: dict[str, float] = {}
    if options.partitions > 1:
        with steps.step("partitions"):
            if options.weights == FACE_WEIGHTS and weights is None:
                weights = topology.faces_per_cell()
            split = partition_cells(graph, options.partitions, cell_order, seed=options.seed,
                                    weights=weights)
            cell_order = split.order
            arrays |= _partition_arrays(split)
            metrics |= split.metrics(graph, weights)
    new_graph = renumber_graph(graph, cell_order)
    levels = {}
    if options.sweep_colours or options.hyperplanes:
        with steps.step(_LEVELS_STEP[options.sweep_colours]):
            levels = _sweep_levels(new_graph, options)
            if options.renumber_by_level:  # hyperplanes only (checked above)
                cell_order = cell_order[renumber_by_level(levels["forward"])]
                new_graph = renumber_graph(graph, cell_order)
                levels = _sweep_levels(new_graph, options)
    if options.multigrid > 0:
        with steps.step("agglomeration"):
            maps = hierarchy(new_graph, options.multigrid, seed=options.seed)
            arrays |= {"coarse_cells": np.concatenate([np.zeros(0, np.int64), *maps]),
                       "coarse_offsets": np.cumsum([0, *map(len, maps)]).astype(np.int64)}
            metrics["multigrid_cells"] = [int(m.max()) + 1 for m in maps]
            if options.sweep_colours and maps:  # a solver sweeps its coarse levels by colour
                arrays["coarse_colour"] = _coarse_colours(new_graph, maps, options.seed)
    cell_rank = inverse(cell_order)
    with steps.step(f"faces:{options.faces}"):
        face_order = get_face_order(options.faces)(topology, cell_rank, seed_cells=seed_cells)
        old = topology.face_cells[face_order]
        face_cells = np.where(old >= 0, cell_rank[np.maximum(old, 0)], -1)
        face_marker = topology.face_marker[face_order]
        arrays |= {"face_nodes": topology.face_nodes[face_order],
                   "face_facet": topology.face_facet[face_order]}
    if options.colour:
        with steps.step("colour"):
            colouring = colour_items(face_cells[:, 0], face_cells[:, 1], mesh.n_cells)
            arrays |= {"colour_order": colouring.order, "colour_offsets": colouring.offsets}
            metrics |= {"colours": colouring.n_colours, "colour_balance": colouring.balance(),
                        "max_faces_per_cell": topology.max_faces_per_cell()}
    if options.blocks:
        with steps.step("blocks"):
            blocks = build_face_blocks(face_cells[:, 0], face_cells[:, 1], mesh.n_cells,
                                       options.blocks)
            arrays |= {f"block_{name}": getattr(blocks, name) for name in BLOCK_ARRAYS}
            metrics |= {"face_blocks": blocks.n_blocks, "block_colours": blocks.n_block_colours}
    arrays |= _level_arrays(levels, metrics)
    with steps.step("nodes"):
        node_order = _node_order(mesh, topology, cell_order, options, arrays, metrics)
    with steps.step("metrics"):
        metrics |= layout_metrics(new_graph, face_cells)
        metrics["native"] = native or layout_metrics(graph, topology.face_cells)
    parts: tuple[PartMesh, ...] = ()
    if options.partitions > 1:
        with steps.step("part meshes"):
            parts = tuple(part_mesh(mesh, topology, cell_order, split, p)
                          for p in range(split.n_parts))
    metrics["timings"] = steps.timings
    plan = Plan(mesh_digest=mesh.digest(), parameters=options.as_dict(), metrics=metrics,
                marker_names=dict(topology.marker_names), cell_order=cell_order,
                node_order=node_order, face_order=face_order, face_cells=face_cells,
                face_marker=face_marker, created_by=f"meshorder {__version__}", parts=parts,
                **arrays)
    plan.validate()
    return plan


#: The plan's timing step of its sweep levels, by whether they are colours.
_LEVELS_STEP = {True: "sweep colours", False: "hyperplanes"}


def _sweep_levels(graph: CSR, options: PlanOptions) -> dict:
    """The ``forward`` and ``backward`` LU-SGS levels of ``graph`` that ``options`` asks
    for: cell colours, hyperplanes, or none (empty)."""
    if options.sweep_colours:
        forward, backward = colour_levels(graph, seed=options.seed)
    elif options.hyperplanes:
        forward, backward = sweep_levels(graph)
    else:
        return {}
    return {"forward": forward, "backward": backward}


def _level_arrays(levels: dict, metrics: dict) -> dict[str, np.ndarray]:
    """The plan arrays of the sweep ``levels`` (``forward``, ``backward``); their counts
    and widths added to ``metrics``."""
    arrays = {}
    for name, lv in levels.items():
        arrays |= {f"{name}_order": lv.order, f"{name}_offsets": lv.offsets}
        widths = lv.widths()
        metrics |= {f"{name}_levels": lv.n_levels, f"{name}_min_width": int(widths.min()),
                    f"{name}_mean_width": float(widths.mean())}
    return arrays


def with_sweeps(plan: Plan, topology: Topology, options: PlanOptions) -> Plan:
    """``plan`` with the LU-SGS sweep levels that ``options`` asks for (colours,
    hyperplanes or none) instead of its own, the rest kept: the same plan as
    :func:`make_plan` with ``options`` and ``plan``'s cell order, for ``options`` that
    differ from ``plan``'s in their sweeps alone, without its multigrid levels
    (:mod:`meshorder.tune`'s candidates).

    Raises
    ------
    UsageError
        For options that renumber cells by level or make coarse levels: those change more
        than the sweeps.
    """
    if options.renumber_by_level or options.multigrid:
        raise UsageError("with_sweeps changes the sweep levels alone: not renumbering by "
                         "level or coarse levels")
    new_graph = renumber_graph(topology.cell_graph, plan.cell_order)
    levels = _sweep_levels(new_graph, options)
    metrics = {name: value for name, value in plan.metrics.items()
               if not name.startswith(("forward_", "backward_"))}
    metrics["timings"] = {step: seconds for step, seconds in metrics.get("timings", {}).items()
                          if step not in _LEVELS_STEP.values()}
    arrays = {f.name: f.default_factory() for f in fields(Plan)  # no sweeps: empty groups
              if f.name.startswith(("forward_", "backward_"))}
    arrays |= _level_arrays(levels, metrics)
    return plan.replace(parameters=options.as_dict(), metrics=metrics, **arrays)


def _coarse_colours(graph: CSR, maps: list[np.ndarray], seed: int) -> np.ndarray:
    """The cell colours (:func:`~meshorder.colouring.colour_cells`) of each coarse level of
    ``graph`` agglomerated by ``maps``, level after level."""
    colours = []
    for coarse in maps:
        graph = coarse_graph(graph, coarse)
        colours.append(colour_cells(graph, seed=seed).colour)
    return np.concatenate(colours)


def _partition_arrays(split: Partition) -> dict[str, np.ndarray]:
    """The plan arrays of a partition (halo lists flattened by pair)."""
    pairs = sorted(split.send)
    sizes = [len(split.send[pair]) for pair in pairs]
    return {"part_offsets": split.offsets, "part_interior": split.n_interior,
            "send_pairs": np.array(pairs, dtype=np.int64).reshape(-1, 2),
            "send_offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
            "send_cells": (np.concatenate([split.send[pair] for pair in pairs]) if pairs
                           else np.zeros(0, np.int64))}


def _node_order(mesh: Mesh, topology: Topology, cell_order: np.ndarray, options: PlanOptions,
                arrays: dict[str, np.ndarray], metrics: dict) -> np.ndarray:
    """Node order, plus greedy edges (and their colouring) when a node ordering is asked."""
    if options.nodes is None:
        return first_touch_nodes(mesh, cell_order)
    boundary = topology.face_nodes[~topology.interior].ravel()
    boundary = boundary[boundary >= 0]
    _, first = np.unique(boundary, return_index=True)
    data = OrderingInput(topology.node_graph, mesh.points, boundary[np.sort(first)])
    node_order = run_ordering(options.nodes, data, options)
    rank = inverse(node_order)
    edges = np.column_stack(sorted_columns(rank[topology.edges]))
    edges = edges[np.lexsort((edges[:, 1], edges[:, 0]))]
    arrays["edges"] = edges
    node_metrics = matrix_metrics(renumber_graph(topology.node_graph, node_order))
    metrics |= {f"node_{k}": v for k, v in node_metrics.items()}
    metrics["edge_sectors_per_warp_fp64"] = sectors_per_warp(edges, 8)
    if options.colour:
        colouring = colour_items(edges[:, 0], edges[:, 1], mesh.n_points)
        arrays |= {"edge_colour_order": colouring.order,
                   "edge_colour_offsets": colouring.offsets}
        metrics |= {"edge_colours": colouring.n_colours,
                    "edge_colour_balance": colouring.balance()}
    return node_order


def first_touch_nodes(mesh: Mesh, cell_order: np.ndarray) -> np.ndarray:
    """Nodes numbered by their first use walking cells in ``cell_order``; unused nodes last."""
    offsets, nodes = mesh.cell_node_csr()
    cell_rank = inverse(cell_order)
    position = np.repeat(cell_rank, np.diff(offsets)) * np.diff(offsets).max() + (
        np.arange(len(nodes)) - np.repeat(offsets[:-1], np.diff(offsets)))
    first = np.full(mesh.n_points, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, nodes, position)
    return np.argsort(first, kind="stable").astype(np.int64)
