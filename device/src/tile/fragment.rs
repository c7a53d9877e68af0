//! Products and triangular inverses of tiles in `8 x 8` fragments, on FP64 tensor cores
//! (`mma.sync.m8n8k4`) in `f64`: shared-memory tiles padded to whole fragments, or blocks
//! in global memory whose sizes are multiples of 8.
//!
//! A warp owns `RT x CT` output tiles of `8 x 8` at a time; per step of 4 along `k` it
//! loads one fragment value per lane for each row tile of `A` and each column tile of
//! `B` and issues `RT CT` DMMAs (lane `4g + t` holds `C[g][2t]`, `C[g][2t + 1]` of each
//! tile, the DMMA accumulator layout). Against register-tiled scalar FMAs this is about a
//! tenth of the instructions per multiply-add: the selected inversion's products
//! were issue-bound at two warps per scheduler (`docs/perf-notes.md`, entry 24).
//!
//! `f32` has no DMMA: the same tiles on FP32 FMAs, each lane computing the two entries its
//! fragment would hold.
//!
//! **Padding.** Sizes are padded to multiples of 8 (`m`, `n`: output tiles) and 4 (`k`);
//! the caller keeps the padded rows and columns of the operands readable and zero along
//! `k`, and the results outside `m x n` are computed but never emitted.
//!
//! **Banks.** With a leading dimension `≡ 4 (mod 8)` (in elements) a half-warp's fragment
//! reads (`(g, t)` at `g ld + t` or `t ld + g`, `g, t < 4`) fall on 16 distinct 8-byte
//! bank pairs, in either orientation of the view ([`fragment_ld`]).

use super::gemm::MatRef;
use crate::team::Team;
use blocktri_prims::mma::mma_m8n8k4_f64;
use blocktri_prims::{Real, lane_id};

/// Side of a fragment tile.
pub const FRAG: usize = 8;

/// One term `f A B` of [`warp_product_sum`].
pub type Term<T> = (MatRef<T>, MatRef<T>, T);

/// `n` rounded up to whole fragment tiles.
pub const fn padded(n: usize) -> usize {
    n.div_ceil(FRAG) * FRAG
}

/// Leading dimension of a shared tile of `padded(n)` rows read by fragments: `≡ 4 (mod 8)`
/// (conflict-free in both orientations, module docs), and a multiple of 4 so that
/// 16-byte copies stay aligned.
pub const fn fragment_ld(n: usize) -> usize {
    padded(n) + 4
}

/// For every entry of `C = sum_t f_t A_t B_t` (`A_t`: `m x kk`, `B_t`: `kk x n`), calls
/// `emit(i, j, c_ij)` once, on the lane that computed it. Warp `warp` of `warps` takes the
/// regions of `RT x CT` fragment tiles `warp, warp + warps, ...`; regions past the edge
/// compute the last tile again and do not emit it (no divergent branch around the DMMAs).
/// No barrier.
///
/// # Safety
/// All 32 lanes of the warp call it together. The views are readable over the padded
/// ranges (`padded(m) x kk` and `kk x padded(n)`), `kk` is a multiple of 4 and the
/// padded parts along `k` are zero; `kk >= 4`. `emit` is safe to call concurrently for distinct
/// `(i, j)`. `m, n >= 1`, `1 <= P <= 3`.
#[inline(always)]
pub unsafe fn warp_product_sum<T: Real, const RT: usize, const CT: usize, const P: usize>(
    warp: usize,
    warps: usize,
    m: usize,
    n: usize,
    kk: usize,
    terms: [Term<T>; P],
    emit: impl FnMut(usize, usize, T),
) {
    // SAFETY: forwarded.
    unsafe { warp_product_sum_ahead::<T, RT, CT, P, 1>(warp, warps, m, n, kk, terms, emit) }
}

/// [`warp_product_sum`] with the fragments of the next `D` steps along `k` in flight
/// (`f64`; `f32` ignores `D`): for operands in global memory, whose load latency one
/// step ahead does not cover. About `D (RT + CT)` more registers per lane.
///
/// # Safety
/// As [`warp_product_sum`]; `D >= 1`.
#[inline(always)]
pub unsafe fn warp_product_sum_ahead<T: Real, const RT: usize, const CT: usize, const P: usize, const D: usize>(
    warp: usize,
    warps: usize,
    m: usize,
    n: usize,
    kk: usize,
    terms: [Term<T>; P],
    mut emit: impl FnMut(usize, usize, T),
) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let (mt, nt) = (m.div_ceil(FRAG), n.div_ceil(FRAG));
    let regions_down = mt.div_ceil(RT);
    let regions = regions_down * nt.div_ceil(CT);
    let mut region = warp;
    while region < regions {
        let (ri, rj) = (region % regions_down * RT, region / regions_down * CT);
        // Fragment rows of A and columns of B (tiles clamped to the edge).
        let rows: [usize; RT] = core::array::from_fn(|u| FRAG * (ri + u).min(mt - 1) + g);
        let cols: [usize; CT] = core::array::from_fn(|v| FRAG * (rj + v).min(nt - 1) + g);
        let mut acc = [[[T::ZERO; 2]; CT]; RT];
        let mut add = |(a, b, f): Term<T>| {
            // SAFETY: rows < padded(m), cols < padded(n), k < kk (caller's contract).
            unsafe { accumulate::<T, RT, CT, D>(&mut acc, (a, b, f), &rows, &cols, kk, (g, t)) };
        };
        // Constant indices (a loop over `terms` keeps the array in local memory).
        const { assert!(P >= 1 && P <= 3) };
        add(terms[0]);
        if P > 1 {
            add(terms[1 % P]);
        }
        if P > 2 {
            add(terms[2 % P]);
        }
        for (u, acc_row) in acc.iter().enumerate() {
            for (v, pair) in acc_row.iter().enumerate() {
                for (e, &value) in pair.iter().enumerate() {
                    let (i, j) = (FRAG * (ri + u) + g, FRAG * (rj + v) + 2 * t + e);
                    if i < m && j < n {
                        emit(i, j, value);
                    }
                }
            }
        }
        region += warps;
    }
}

/// `acc += f A B` over the fragment tiles at `rows` (this lane's `A` rows, `8 i + g`) and
/// `cols` (its `B` fragment columns, `8 j + g`), lane `(g, t)`, `k` in steps of 4 (`kk >= 4`),
/// the fragments of the next `D` steps loaded before this step's products.
///
/// # Safety
/// As [`warp_product_sum`].
#[inline(always)]
unsafe fn accumulate<T: Real, const RT: usize, const CT: usize, const D: usize>(
    acc: &mut [[[T; 2]; CT]; RT],
    (a, b, f): Term<T>,
    rows: &[usize; RT],
    cols: &[usize; CT],
    kk: usize,
    (g, t): (usize, usize),
) {
    if T::BYTES == 8 {
        // SAFETY (all reads): inside the padded ranges (caller's contract).
        let load = |k: usize| unsafe {
            let af: [f64; RT] = core::array::from_fn(|u| (f * a.at(rows[u], k + t)).to_f64());
            let bf: [f64; CT] = core::array::from_fn(|v| b.at(k + t, cols[v]).to_f64());
            (af, bf)
        };
        let mut acc64: [[[f64; 2]; CT]; RT] = core::array::from_fn(|u| core::array::from_fn(|v| acc[u][v].map(T::to_f64)));
        // A ring of D steps, indexed by constants (unrolled), so that it stays in registers.
        let mut ring: [_; D] = core::array::from_fn(|d| load((4 * d).min(kk - 4)));
        let mut k = 0;
        while k < kk {
            for (d, frags) in ring.iter_mut().enumerate() {
                // Steps past the end reload the last one's fragments: no read past `kk`.
                let next = load((k + 4 * (d + D)).min(kk - 4));
                if D == 1 || k + 4 * d < kk {
                    for u in 0..RT {
                        for v in 0..CT {
                            acc64[u][v] = mma_m8n8k4_f64(frags.0[u], frags.1[v], acc64[u][v]);
                        }
                    }
                }
                *frags = next;
            }
            k += 4 * D;
        }
        *acc = core::array::from_fn(|u| core::array::from_fn(|v| acc64[u][v].map(T::from_f64)));
    } else {
        // This lane's entries: rows `rows[u]`, columns `cols[v] - g + 2t + e`.
        for k in 0..kk {
            // SAFETY: as above.
            let av: [T; RT] = core::array::from_fn(|u| f * unsafe { a.at(rows[u], k) });
            let bv: [[T; 2]; CT] = core::array::from_fn(|v| core::array::from_fn(|e| unsafe { b.at(k, cols[v] - g + 2 * t + e) }));
            for u in 0..RT {
                for v in 0..CT {
                    for e in 0..2 {
                        acc[u][v][e] = av[u].mul_add(bv[v][e], acc[u][v][e]);
                    }
                }
            }
        }
    }
}

/// `X = L^-1` for the lower-triangular `L` of order `np` (a multiple of 8) in the shared
/// tile `l`, into the shared tile `x` (both column-major, leading dimension `ld`), in
/// strips of 8 rows: per strip one fragment product with the strips above
/// (`X[S, :] = -L[S, :S] X[:S, :]`, one warp per column tile) and one solve with the
/// `8 x 8` diagonal tile (one thread per column, in registers). Two barriers per strip
/// (against one per row for a row-by-row solve on the identity). `inv[r]` is `1 / L_rr`,
/// or zero for padded rows, which makes their rows and columns of `X` zero. Ends with a
/// team barrier.
///
/// # Safety
/// `l`, `x` (`np` columns of `ld >= np`) and `inv[..np]` are shared memory of this team
/// alone, `x` is zero above the diagonal (it stays so); the team is whole warps
/// (`lanes() == 32`: groups are warps) with at least `np` threads.
pub unsafe fn invert_lower_strips<T: Real, M: Team>(team: M, l: *const T, x: *mut T, ld: usize, np: usize, inv: *const T) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let (lv, xv) = (MatRef::col_major(l, ld), MatRef::col_major(x as *const T, ld));
    for s in (0..np).step_by(FRAG) {
        // X[S, C] = -L[S, c0..s] X[c0..s, C] for each column tile C = c0..c0 + 8, c0 <= s
        // (X[k, C] = 0 for k < c0); the tile C = s is reset to zero.
        let mut c0 = FRAG * team.group();
        while c0 <= s {
            let mut acc = [[[T::ZERO; 2]; 1]; 1];
            if s > c0 {
                let (rows, cols) = ([s + g], [c0 + g]);
                // SAFETY: rows, columns and k inside the tiles; k runs over c0..s, a
                // multiple of 8 long.
                let (a, b) = unsafe { (MatRef { ptr: lv.ptr.add(c0 * ld), ..lv }, MatRef { ptr: xv.ptr.add(c0), ..xv }) };
                unsafe { accumulate::<T, 1, 1, 1>(&mut acc, (a, b, -T::ONE), &rows, &cols, s - c0, (g, t)) };
            }
            for e in 0..2 {
                // SAFETY: inside the tile; this warp's column tile alone.
                unsafe { *x.add((c0 + 2 * t + e) * ld + s + g) = acc[0][0][e] };
            }
            c0 += FRAG * team.groups();
        }
        team.sync();
        // The diagonal tile: column c of X[S, :] solves L[S, S] y = X[S, c] + e_c[S].
        let mut c = team.rank();
        while c < s + FRAG {
            // SAFETY: inside the tiles; column c of x is this thread's alone here.
            unsafe {
                let col = x.add(c * ld + s);
                let mut y: [T; FRAG] = core::array::from_fn(|r| *col.add(r) + if s + r == c { T::ONE } else { T::ZERO });
                for r in 0..FRAG {
                    for q in 0..FRAG {
                        if q < r {
                            y[r] = (-*l.add((s + q) * ld + s + r)).mul_add(y[q], y[r]);
                        }
                    }
                    y[r] *= *inv.add(s + r);
                }
                for (r, &v) in y.iter().enumerate() {
                    *col.add(r) = v;
                }
            }
            c += team.size();
        }
        team.sync();
    }
}

/// Writes `1 / L_rr` for `r < n` and zero for `n <= r < np` into `inv` (see
/// [`invert_lower_strips`]). No barrier.
///
/// # Safety
/// `l` (column-major, `ld`) holds `L`'s diagonal for `r < n`; `inv[..np]` is shared
/// memory that no other thread reads until a barrier.
pub unsafe fn diagonal_reciprocals<T: Real, M: Team>(team: M, l: *const T, ld: usize, n: usize, np: usize, inv: *mut T) {
    let mut r = team.rank();
    while r < np {
        // SAFETY: inside the tile and `inv` (caller's contract).
        unsafe { *inv.add(r) = if r < n { T::ONE / *l.add(r * ld + r) } else { T::ZERO } };
        r += team.size();
    }
}
