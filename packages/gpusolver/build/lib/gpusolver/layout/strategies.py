"""Face-to-cell accumulation strategies: one name, one meaning, everywhere.

A face loop produces a value for each of its two cells; a strategy says how those
values reach the cells without races. The face-flux kernels implement every one; the
solver's array code (:mod:`gpusolver.solvers.fv.accumulate`) implements ``atomic``,
``colour`` and ``reduce``.
"""

#: Strategy name -> what it does.
STRATEGIES = {
    "atomic": "one thread per face, atomic adds into both cells",
    "colour": "one launch per face colour of the plan (no two faces of a colour share a "
              "cell), plain read-modify-writes",
    "block-colour": "faces cut into blocks of consecutive faces; a block sums its cells in "
                    "shared memory, one launch per block colour flushes with plain writes",
    "block-atomic": "the same blocks, all in one launch, flushed with one atomic per cell",
    "reduce": "fluxes stored per face, then each cell sums its own face slots",
    "gather": "each cell computes the fluxes of its own faces and writes its sum once",
}
