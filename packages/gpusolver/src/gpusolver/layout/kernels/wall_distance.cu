// Exact distance from points to the nearest wall face (gpusolver/layout/wall_distance.py:
// face_distance's arithmetic, per point over every face): one thread per point, the faces
// read in the same order by every thread of a warp. A face is skipped when its bounding
// sphere (centre, radius) lies farther than the point's best distance so far, which starts
// at an upper bound given by the caller (the distance to one face). Segments in 2D,
// triangles in 3D, quadrilaterals as two triangles (a NaN fourth corner: a triangle).

template <int DIM>
__device__ __forceinline__ double segment_distance(const double p[3], const double* a,
                                                   const double* b) {
    double edge[3] = {0, 0, 0}, length2 = 0, along = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        edge[d] = b[d] - a[d];
        length2 += edge[d] * edge[d];
        along += (p[d] - a[d]) * edge[d];
    }
    double t = length2 > 0 ? along / length2 : 0.0;
    t = fmin(fmax(t, 0.0), 1.0);
    double distance2 = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        const double gap = p[d] - (a[d] + t * edge[d]);
        distance2 += gap * gap;
    }
    return sqrt(distance2);
}

__device__ __forceinline__ void cross(const double u[3], const double v[3], double out[3]) {
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
}

__device__ __forceinline__ double dot(const double u[3], const double v[3]) {
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
}

__device__ double triangle_distance(const double p[3], const double* a, const double* b,
                                    const double* c) {
    double ab[3], ac[3], ap[3], normal[3], s[3], t[3];
    for (int d = 0; d < 3; ++d) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = p[d] - a[d];
    }
    cross(ab, ac, normal);
    const double area2 = dot(normal, normal);
    const double safe = area2 > 0 ? area2 : 1.0;
    cross(ap, ac, s);
    cross(ab, ap, t);
    const double v = dot(s, normal) / safe, w = dot(t, normal) / safe;
    if (area2 > 0 && v >= 0 && w >= 0 && v + w <= 1) return fabs(dot(ap, normal)) / sqrt(safe);
    return fmin(fmin(segment_distance<3>(p, a, b), segment_distance<3>(p, b, c)),
                segment_distance<3>(p, c, a));
}

// best: in, an upper bound of each point's distance; out, its distance. points (DIM, n)
// structure of arrays; corners (n_faces, CORNERS, DIM); centre (n_faces, DIM).
template <int DIM, int CORNERS>
__global__ void __launch_bounds__(256) wall_distance_kernel(
    int n_points, const double* __restrict__ points, int n_faces,
    const double* __restrict__ corners, const double* __restrict__ centre,
    const double* __restrict__ radius, double* __restrict__ best) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_points) return;
    double p[3] = {0, 0, 0};
#pragma unroll
    for (int d = 0; d < DIM; ++d) p[d] = points[d * n_points + i];
    double nearest = best[i];
    for (int f = 0; f < n_faces; ++f) {
        double gap2 = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            const double gap = p[d] - centre[f * DIM + d];
            gap2 += gap * gap;
        }
        const double reach = nearest + radius[f];
        if (gap2 > reach * reach) continue;  // the whole face is farther than the best
        const double* a = corners + (f * CORNERS) * DIM;
        double distance;
        if (CORNERS == 2) {
            distance = segment_distance<DIM>(p, a, a + DIM);
        } else {
            distance = triangle_distance(p, a, a + 3, a + 6);
            if (CORNERS == 4 && !isnan(a[9]))
                distance = fmin(distance, triangle_distance(p, a, a + 6, a + 9));
        }
        nearest = fmin(nearest, distance);
    }
    best[i] = nearest;
}
