// What the finite-volume kernels share about faces (kernels/residual.cu, the mean flow;
// kernels/turbulence.cu, the turbulence models' scalars): a cell's face slots and the
// face gradient of the viscous (and diffusive) fluxes.
#pragma once

// Slot s of a cell: its face, and whether the cell is that face's right cell.
__device__ __forceinline__ int slot_face(int s, int n_faces, bool* is_right) {
    *is_right = s >= n_faces;
    return *is_right ? s - n_faces : s;
}

// Calls visit(f, is_right) for each face f of cell c, in the order of its slots (the
// table slots[k * n_cells + c], k < width; 2 * n_faces ends a cell's list).
template <typename Visit>
__device__ __forceinline__ void for_each_face(const int* __restrict__ slots, int width,
                                              int n_cells, int n_faces, int c, Visit visit) {
    const int unused = 2 * n_faces;
    for (int k = 0; k < width; ++k) {
        const int s = slots[k * n_cells + c];
        if (s == unused) return;
        bool is_right;
        const int f = slot_face(s, n_faces, &is_right);
        visit(f, is_right);
    }
}

// The face gradient of a quantity whose cell gradients are a and b and cell values
// value_l and value_r: the mean of the two gradients with its component along the unit
// centroid-to-centroid direction t replaced by the difference (value_r - value_l) times
// the inverse centroid distance inv_len.
template <typename real, int DIM>
__device__ __forceinline__ void corrected_gradient(const real a[DIM], const real b[DIM],
                                                   real value_l, real value_r,
                                                   const real t[DIM], real inv_len,
                                                   real out[DIM]) {
    real along = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        out[d] = real(0.5) * (a[d] + b[d]);
        along += out[d] * t[d];
    }
    const real jump = (value_r - value_l) * inv_len - along;
#pragma unroll
    for (int d = 0; d < DIM; ++d) out[d] += jump * t[d];
}
