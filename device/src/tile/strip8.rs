//! Cholesky in 8-column strips over a row-major matrix in shared memory, the tile
//! products on FP64 tensor cores in `f64`: `16 x 8` tiles on the sm_90 shapes
//! (`mma.sync.m16n8k8` / `m16n8k16`, [`tiles16_minus_abt`]) on Hopper builds, `8 x 8`
//! tiles on `mma.sync.m8n8k4` on sm_80 builds.
//!
//! Used by the blocked panel factor ([`crate::level::blocked`]: a node's panel
//! `[D; A_l; A_r]`) and the chain engine's strips; the tiled engine's diagonal-tile step
//! uses only the tile routines (`factor_invert_diag_tile`, [`tile_minus_abt`]) in a
//! left-looking pass of its own (`crate::tiled::potrf`). Per strip of 8 columns
//! `kb..kb + 8` ([`factor_strips`]):
//! - **Diagonal tile**: one warp factors the `8 x 8` tile `D[kb.., kb..]`, each lane the
//!   whole tile in its own registers (no shuffle, no barrier), and writes `1 / L_jj`.
//! - **Strip rows**: every row below the tile solves its 8 entries against it (one thread
//!   per row, the tile read by broadcast).
//! - **Trailing update**: `P[I, J] -= P[I, K] P[J, K]^T` over output tiles, a warp taking
//!   one row tile and two column tiles at a time in `f64` (one `A` fragment, independent
//!   DMMAs): on sm_90 `16 x 8` tiles of one `m16n8k8` each, on sm_80 `8 x 8` tiles of two
//!   `m8n8k4`s. The last warp updates the next diagonal tile and factors it at once
//!   (look-ahead), so the next strip starts without a barrier for it; the other warps
//!   share the remaining tiles.
//!
//! Two barriers per strip. `f32` has no DMMA: the same tiles on FP32 FMAs, lane `(g, t)`
//! computing the two entries that its DMMA fragment would hold.
//!
//! A row stride `≡ 4 (mod 16)` keeps the fragment reads of a half-warp (lane `4g + t`
//! reads row `g`, column `t`) on distinct 8-byte bank pairs.

use super::FastDiv;
use crate::team::{Block, Team};
use blocktri_prims::mma::{has_sm90_dmma, mma_m8n8k4_f64, mma_m16n8k8_f64, mma_m16n8k16_f64};
use blocktri_prims::{Real, lane_id, sync_warp};

/// Width of a strip and side of a tile.
pub(crate) const KB: usize = 8;

/// `c - A B^T` for one `8 x 8` tile, by one warp: `A` rows at `a + g sa` and `B` rows at
/// `b + g sb` (`g < 8`), `k` columns (a multiple of 8: a strip, or whole strips); lane
/// `4g + t` holds `c = [C[g][2t], C[g][2t + 1]]` (the DMMA accumulator layout).
///
/// # Safety
/// The 8 rows of `k` entries behind `a` and `b` are readable; all 32 lanes of the warp
/// call it together (the DMMA is warp-synchronous).
#[inline(always)]
pub(crate) unsafe fn tile_minus_abt<T: Real>(c: [T; 2], a: *const T, sa: usize, b: *const T, sb: usize, k: usize) -> [T; 2] {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    if T::BYTES == 8 {
        // This lane's fragment entries: row g, columns kk + t and kk + 4 + t.
        // SAFETY (all reads): inside the rows (caller's contract).
        let (a_frag, b_frag) = unsafe { (a.add(g * sa + t), b.add(g * sb + t)) };
        // Two accumulators (even and odd 4-column steps) halve the dependent DMMA chain.
        let mut even = [c[0].to_f64(), c[1].to_f64()];
        let mut odd = [0.0f64; 2];
        let mut kk = 0;
        while kk < k {
            let (a0, b0, a1, b1) = unsafe {
                ((*a_frag.add(kk)).to_f64(), (*b_frag.add(kk)).to_f64(), (*a_frag.add(kk + 4)).to_f64(), (*b_frag.add(kk + 4)).to_f64())
            };
            even = mma_m8n8k4_f64(-a0, b0, even);
            odd = mma_m8n8k4_f64(-a1, b1, odd);
            kk += 8;
        }
        [T::from_f64(even[0] + odd[0]), T::from_f64(even[1] + odd[1])]
    } else {
        let mut acc = c;
        // SAFETY (all reads): as above.
        let (a_row, b0, b1) = unsafe { (a.add(g * sa), b.add(2 * t * sb), b.add((2 * t + 1) * sb)) };
        for kk in 0..k {
            let av = unsafe { *a_row.add(kk) };
            acc[0] = (-av).mul_add(unsafe { *b0.add(kk) }, acc[0]);
            acc[1] = (-av).mul_add(unsafe { *b1.add(kk) }, acc[1]);
        }
        acc
    }
}

/// [`tile_minus_abt`] for `W` output tiles that share the `A` rows: tile `w` is
/// `c[w] - A B_w^T` with `B_w`'s rows at `b[w] + g sb`. One `A` fragment feeds `W`
/// products, and the `2 W` accumulators (even and odd 4-column steps of each tile) are
/// independent DMMA chains: the products of a latency-bound warp overlap
/// (`docs/perf-notes.md`, entry 73).
///
/// # Safety
/// As [`tile_minus_abt`], for every `b[w]`.
#[inline(always)]
pub(crate) unsafe fn tiles_minus_abt<T: Real, const W: usize>(
    c: [[T; 2]; W],
    a: *const T,
    sa: usize,
    b: [*const T; W],
    sb: usize,
    k: usize,
) -> [[T; 2]; W] {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    if T::BYTES == 8 {
        // This lane's fragment entries: row g, columns kk + t and kk + 4 + t.
        // SAFETY (all reads): inside the rows (caller's contract).
        let a_frag = unsafe { a.add(g * sa + t) };
        let b_frag: [*const T; W] = core::array::from_fn(|w| unsafe { b[w].add(g * sb + t) });
        // Two accumulators per tile (even and odd 4-column steps) halve the dependent
        // DMMA chain.
        let mut even: [[f64; 2]; W] = core::array::from_fn(|w| [c[w][0].to_f64(), c[w][1].to_f64()]);
        let mut odd = [[0.0f64; 2]; W];
        let mut kk = 0;
        while kk < k {
            let (a0, a1) = unsafe { ((*a_frag.add(kk)).to_f64(), (*a_frag.add(kk + 4)).to_f64()) };
            for w in 0..W {
                let (b0, b1) = unsafe { ((*b_frag[w].add(kk)).to_f64(), (*b_frag[w].add(kk + 4)).to_f64()) };
                even[w] = mma_m8n8k4_f64(-a0, b0, even[w]);
                odd[w] = mma_m8n8k4_f64(-a1, b1, odd[w]);
            }
            kk += 8;
        }
        core::array::from_fn(|w| [T::from_f64(even[w][0] + odd[w][0]), T::from_f64(even[w][1] + odd[w][1])])
    } else {
        // `f32` (no DMMA): one tile at a time. Its FMA tiles, capped at 80 registers in the
        // blocked kernels, measured slower in pairs (entry 73); callers pass `W = 1`.
        // SAFETY: forwarded.
        core::array::from_fn(|w| unsafe { tile_minus_abt(c[w], a, sa, b[w], sb, k) })
    }
}

/// [`tiles_minus_abt`] on the sm_90 FP64 DMMA shapes, for `f64` where [`has_sm90_dmma`]:
/// `W` output tiles of `16 x 8`, tile `w` being `c[w] - A B_w^T` with `A`'s rows `r < 8`
/// at `a[0] + r sa` and `8 + r` at `a[1] + r sa` (a tile of 8 rows passes `a[1] = a[0]`
/// and drops the copy) and `B_w`'s 8 rows at `b[w] + g sb`, over `k` columns (a multiple
/// of 8: `m16n8k16` per 16 columns, `m16n8k8` for a last 8). Lane `4g + t` holds
/// `c[w][i] = C_w[g + 8 (i / 2)][2 t + i % 2]` (the DMMA accumulator layout). One such
/// DMMA does the work of eight `m8n8k4`s, and on Hopper the `m8n8k4` shape keeps the
/// tensor pipe at about half its FP64 rate (`docs/perf-notes.md`, entries 7 and 74).
/// Alternate 16-column steps go to two accumulators per tile (independent DMMA chains).
///
/// # Safety
/// The 8 rows behind each `a[h]` and each `b[w]` hold `k` readable entries; all 32
/// lanes of the warp call it together; `T` is `f64` and `has_sm90_dmma` holds (the
/// instructions trap otherwise).
#[inline(always)]
pub(crate) unsafe fn tiles16_minus_abt<T: Real, const W: usize>(
    c: [[T; 4]; W],
    a: [*const T; 2],
    sa: usize,
    b: [*const T; W],
    sb: usize,
    k: usize,
) -> [[T; 4]; W] {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    // This lane's fragment entries: A rows g and g + 8, B_w row g; columns kk + t + 4 u.
    // SAFETY (all reads): inside the rows (caller's contract).
    let (a_lo, a_hi) = unsafe { (a[0].add(g * sa + t), a[1].add(g * sa + t)) };
    let b_frag: [*const T; W] = core::array::from_fn(|w| unsafe { b[w].add(g * sb + t) });
    // `-A` in fragment order: `[A[g][kk + t], A[g + 8][kk + t], A[g][kk + t + 4], ..]`.
    // `R` registers of A (`R / 2` of each B): a 16-column step at 8, its first half at 4.
    fn a_step<T: Real, const R: usize>((lo, hi): (*const T, *const T), kk: usize) -> [f64; R] {
        core::array::from_fn(|i| -unsafe { *(if i % 2 == 0 { lo } else { hi }).add(kk + 4 * (i / 2)) }.to_f64())
    }
    fn b_step<T: Real, const R: usize>(b: *const T, kk: usize) -> [f64; R] {
        core::array::from_fn(|u| unsafe { *b.add(kk + 4 * u) }.to_f64())
    }
    let mut even: [[f64; 4]; W] = core::array::from_fn(|w| c[w].map(|v| v.to_f64()));
    let mut odd = [[0.0f64; 4]; W];
    let mut kk = 0;
    while kk + 32 <= k {
        let (a0, a1) = (a_step::<T, 8>((a_lo, a_hi), kk), a_step::<T, 8>((a_lo, a_hi), kk + 16));
        for w in 0..W {
            even[w] = mma_m16n8k16_f64(a0, b_step::<T, 4>(b_frag[w], kk), even[w]);
            odd[w] = mma_m16n8k16_f64(a1, b_step::<T, 4>(b_frag[w], kk + 16), odd[w]);
        }
        kk += 32;
    }
    if kk + 16 <= k {
        let a0 = a_step::<T, 8>((a_lo, a_hi), kk);
        for w in 0..W {
            even[w] = mma_m16n8k16_f64(a0, b_step::<T, 4>(b_frag[w], kk), even[w]);
        }
        kk += 16;
    }
    if kk < k {
        // The last 8 columns: the first half of a 16-column step's fragments.
        let a0 = a_step::<T, 4>((a_lo, a_hi), kk);
        for w in 0..W {
            odd[w] = mma_m16n8k8_f64(a0, b_step::<T, 2>(b_frag[w], kk), odd[w]);
        }
    }
    core::array::from_fn(|w| core::array::from_fn(|i| T::from_f64(even[w][i] + odd[w][i])))
}

/// Updates the `8 x 8` tile of `p` (row stride `s`) at `(r0, c0)` by the strip
/// `kb..kb + 8`: `P[r0.., c0..] -= P[r0.., kb..] P[c0.., kb..]^T`, by one warp.
///
/// # Safety
/// As [`tile_minus_abt`]; no other thread touches the tile meanwhile.
#[inline(always)]
pub(crate) unsafe fn update_tile<T: Real>(p: *mut T, s: usize, r0: usize, c0: usize, kb: usize) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let cell = unsafe { p.add((r0 + g) * s + c0 + 2 * t) };
    let c = unsafe { [*cell, *cell.add(1)] };
    let d = unsafe { tile_minus_abt(c, p.add(r0 * s + kb), s, p.add(c0 * s + kb), s, KB) };
    unsafe {
        *cell = d[0];
        *cell.add(1) = d[1];
    }
}

/// [`update_tile`] for the `W` tiles at `(r0, c0[w])` in one pass of [`tiles_minus_abt`]
/// (shared `A` fragment, `2 W` independent DMMA chains); tile `w` is written back only
/// where `keep[w]`: a tile that is read but not kept must not be written by another
/// thread meanwhile either (its result is dropped).
///
/// # Safety
/// As [`update_tile`] for every kept tile; the others are readable and no other thread
/// writes them meanwhile.
#[inline(always)]
pub(crate) unsafe fn update_tiles<T: Real, const W: usize>(p: *mut T, s: usize, r0: usize, c0: [usize; W], kb: usize, keep: [bool; W]) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let cells = c0.map(|c| unsafe { p.add((r0 + g) * s + c + 2 * t) });
    let c = cells.map(|cell| unsafe { [*cell, *cell.add(1)] });
    let d = unsafe { tiles_minus_abt(c, p.add(r0 * s + kb), s, c0.map(|c| p.add(c * s + kb) as *const T), s, KB) };
    for w in 0..W {
        if keep[w] {
            unsafe {
                *cells[w] = d[w][0];
                *cells[w].add(1) = d[w][1];
            }
        }
    }
}

/// Cholesky of the `8 x 8` diagonal tile at `(k0, k0)` in place by one warp: every lane
/// reads the whole lower triangle (broadcast reads) and factors it in its own registers,
/// so a column costs one reciprocal square root and independent FMAs, with no shuffle on
/// the serial chain (`docs/perf-notes.md`, entry 22). The lower triangle becomes `L`; the
/// upper triangle is left as it was (no caller reads it). `1 / L_jj` goes to
/// `inv[k0 + j]`: the Newton-refined reciprocal square root of the pivot, the same number
/// that scaled column `j`. Returns whether every pivot was positive and finite (the same
/// answer in every lane).
///
/// # Safety
/// The tile and `inv[k0..k0 + 8]` are in shared memory and no other thread touches them
/// meanwhile; all 32 lanes call it together.
#[inline(always)]
pub(crate) unsafe fn factor_diag_tile<T: Real>(p: *mut T, s: usize, k0: usize, inv: *mut T) -> bool {
    let lane = lane_id() as usize;
    let mut l = unsafe { load_lower_tile(p, s, k0) };
    let (inv_diag, ok) = factor_in_registers(&mut l);
    // Every lane has read the tile before any lane writes it.
    sync_warp();
    if lane == 0 {
        unsafe { store_lower_tile(p, s, k0, &l) };
        for (j, &v) in inv_diag.iter().enumerate() {
            unsafe { *inv.add(k0 + j) = v };
        }
    }
    sync_warp();
    ok
}

/// [`factor_diag_tile`] that also inverts the factor, and writes no `1 / L_jj`: lane
/// `c < 8` stores column `c` of `W = L^-1` (zero above the diagonal) row-major into `wd`
/// (row stride `sd`, rows `k0..k0 + 8`, columns `0..8`) and transposed into `wt` (row
/// stride `s`: `wt[(k0 + c) s + k0 + i] = W(i, c)`).
///
/// Every lane computes a column of `W` (lane `c % 8`) from the factor in its registers,
/// with no branch around it, so that the compiler can interleave the substitution with
/// the factor's pivot chain: row `i` of `W` needs only rows `..=i` of `L`, and its
/// instructions fill the issue slots that the chain's reciprocal square roots leave idle.
///
/// # Safety
/// As [`factor_diag_tile`], for `wt` and `wd` too.
#[inline(always)]
pub(crate) unsafe fn factor_invert_diag_tile<T: Real>(p: *mut T, s: usize, k0: usize, wt: *mut T, wd: *mut T, sd: usize) -> bool {
    let lane = lane_id() as usize;
    let mut l = unsafe { load_lower_tile(p, s, k0) };
    let (inv_diag, ok) = factor_in_registers(&mut l);
    let x = inverse_column(lane % KB, |i, k| l[i][k], |i| inv_diag[i]);
    sync_warp();
    if lane == 0 {
        unsafe { store_lower_tile(p, s, k0, &l) };
    }
    if lane < KB {
        unsafe { store_inverse_column(&x, lane, k0, (wt, s), (wd, sd)) };
    }
    sync_warp();
    ok
}

/// Column `c` of `W = L^-1` for the `8 x 8` lower-triangular `L` whose entries `l(i, k)`
/// (`k < i`) and reciprocal diagonal `inv_diag(i)` the closures read: `L x = e_c` by
/// forward substitution (`x_i = 0` for `i < c`).
#[inline(always)]
pub(crate) fn inverse_column<T: Real>(c: usize, l: impl Fn(usize, usize) -> T, inv_diag: impl Fn(usize) -> T) -> [T; KB] {
    let mut x = [T::ZERO; KB];
    for i in 0..KB {
        let mut v = if i == c { T::ONE } else { T::ZERO };
        for k in 0..KB {
            // Rectangular with a condition, as in `factor_in_registers`: `x` stays in
            // registers.
            if k < i {
                v = (-l(i, k)).mul_add(x[k], v);
            }
        }
        x[i] = v * inv_diag(i);
    }
    x
}

/// Stores column `c` of the `8 x 8` diagonal block `W_kk` of an inverse (rows from `k0`)
/// both ways: transposed into `wt` (row stride `s`: `wt[(k0 + c) s + k0 + i] = W(i, c)`)
/// and row-major into `wd` (row stride `sd`, columns `0..8`).
///
/// # Safety
/// Both areas hold those entries and no other thread writes them meanwhile.
#[inline(always)]
pub(crate) unsafe fn store_inverse_column<T: Real>(x: &[T; KB], c: usize, k0: usize, (wt, s): (*mut T, usize), (wd, sd): (*mut T, usize)) {
    for (i, &xi) in x.iter().enumerate() {
        unsafe {
            *wt.add((k0 + c) * s + k0 + i) = xi;
            *wd.add((k0 + i) * sd + c) = xi;
        }
    }
}

/// The lower triangle of the `8 x 8` tile at `(k0, k0)` (broadcast reads); the upper
/// entries are zero constants, which unrolling drops (36 live values).
///
/// # Safety
/// The tile is readable.
#[inline(always)]
unsafe fn load_lower_tile<T: Real>(p: *const T, s: usize, k0: usize) -> [[T; KB]; KB] {
    core::array::from_fn(|r| core::array::from_fn(|c| if c <= r { unsafe { *p.add((k0 + r) * s + k0 + c) } } else { T::ZERO }))
}

/// Stores the lower triangle of `l` into the `8 x 8` tile at `(k0, k0)`, by the calling
/// lane alone: one branch. Spreading the entries over the lanes (`lane == e % 32`) became
/// a jump table on the lane, 32 divergent paths run one after the other (+6 µs per
/// `potrf` launch, docs/perf-notes.md entry 22).
///
/// # Safety
/// The tile is writable and no other thread touches it meanwhile.
#[inline(always)]
unsafe fn store_lower_tile<T: Real>(p: *mut T, s: usize, k0: usize, l: &[[T; KB]; KB]) {
    for (r, row) in l.iter().enumerate() {
        for (c, &v) in row.iter().enumerate() {
            if c <= r {
                unsafe { *p.add((k0 + r) * s + k0 + c) = v };
            }
        }
    }
}

/// Cholesky of the `8 x 8` lower triangle `l` in this lane's registers: `l` becomes `L`,
/// and the result is `1 / L_jj` (the Newton-refined reciprocal square root of each
/// pivot, the number that scaled column `j`) and whether every pivot was positive and
/// finite.
#[inline(always)]
fn factor_in_registers<T: Real>(l: &mut [[T; KB]; KB]) -> ([T; KB], bool) {
    let mut ok = true;
    let mut inv_diag = [T::ONE; KB];
    // Rectangular loops with conditions on the indices (not `j + 1..KB`): a trip count
    // that depends on an outer index stops LLVM from unrolling the nest, and `l` would go
    // to local memory.
    for j in 0..KB {
        let d = l[j][j];
        ok &= d > T::ZERO && d.is_finite();
        let r_d = d.rsqrt_fast();
        for r in 0..KB {
            if r >= j {
                l[r][j] *= r_d; // sqrt(d) on the diagonal, the multipliers below
            }
        }
        inv_diag[j] = r_d;
        for c in 0..KB {
            for r in 0..KB {
                if c > j && r >= c {
                    l[r][c] = (-l[r][j]).mul_add(l[c][j], l[r][c]);
                }
            }
        }
    }
    (inv_diag, ok)
}

/// Row `i` of the strip `k0..k0 + 8` below the diagonal tile: `x = P[i, k0..] L_kk^-T`
/// (forward substitution with the factored tile, read by broadcast), in place.
///
/// # Safety
/// The tile is factored and `inv` written (barrier); no other thread touches the row's
/// strip entries meanwhile.
#[inline(always)]
unsafe fn solve_strip_row<T: Real>(p: *mut T, s: usize, k0: usize, inv: *const T, i: usize) {
    let row = unsafe { p.add(i * s + k0) };
    let mut x: [T; KB] = core::array::from_fn(|c| unsafe { *row.add(c) });
    for j in 0..KB {
        let l_row = unsafe { p.add((k0 + j) * s + k0) };
        let mut v = x[j];
        for c in 0..KB {
            // Rectangular, as in `factor_diag_tile`.
            if c < j {
                v = (-x[c]).mul_add(unsafe { *l_row.add(c) }, v);
            }
        }
        x[j] = v * unsafe { *inv.add(k0 + j) };
    }
    for (c, xc) in x.iter().enumerate() {
        unsafe { *row.add(c) = *xc };
    }
}

/// Factors in place, by the whole block, the panel `P` (row stride `s`) made of the
/// `n x n` matrix `D` in rows `0..n` (lower triangle valid) and the row blocks `A` of
/// `n` rows each that start at the rows in `couplings` (when present), column by strip:
/// `D = L L^T`, `A <- A L^-T`. `1 / L_jj` lands in `inv[j]`, and `*failed` is set to
/// nonzero when a pivot is not positive and finite (the factor is then garbage).
///
/// `D`'s rows and columns from `n` up to the next multiple of [`KB`] must hold an identity
/// block and the couplings' columns there zeros: they factor to 1 and 0 and touch nothing
/// else. Ends with a barrier.
///
/// # Safety
/// `p` holds the rows and `round_up(n, 8)` columns described, `inv` that many entries and
/// `failed` one word, all in shared memory; all threads of the block call it together,
/// with at least 64 threads (the last warp is the look-ahead's).
#[inline(always)]
pub(crate) unsafe fn factor_strips<T: Real>(p: *mut T, s: usize, n: usize, couplings: [Option<usize>; 2], inv: *mut T, failed: *mut u32) {
    let team = Block;
    let (warp, lane) = (team.rank() / 32, team.rank() % 32);
    let warps = team.size() / 32;
    // The look-ahead warp: updates and factors the next diagonal tile.
    let ahead = warps - 1;
    let tiles = n.div_ceil(KB);
    if warp == ahead {
        let ok = unsafe { factor_diag_tile(p, s, 0, inv) };
        if lane == 0 {
            unsafe { *failed = u32::from(!ok) };
        }
    }
    team.sync();
    // Rows of each panel part below a strip: D from the strip's end, the couplings all.
    let [(l0, rows_l), (rr0, rows_r)] = couplings.map(|c| c.map_or((0, 0), |start| (start, n)));
    for kt in 0..tiles {
        let kb = kt * KB;
        // Strip rows.
        let rows_d = n.saturating_sub(kb + KB);
        let mut e = team.rank();
        while e < rows_d + rows_l + rows_r {
            let i = if e < rows_d {
                kb + KB + e
            } else if e < rows_d + rows_l {
                l0 + e - rows_d
            } else {
                rr0 + e - rows_d - rows_l
            };
            unsafe { solve_strip_row(p, s, kb, inv, i) };
            e += team.size();
        }
        team.sync();
        if kt + 1 == tiles {
            break;
        }
        // Trailing update: column tiles kt+1.., row tiles of D (on or below the diagonal
        // tile) and of the present couplings; the next diagonal tile is the look-ahead
        // warp's, first.
        let next = kb + KB;
        if warp == ahead {
            unsafe { update_tile(p, s, next, next, kb) };
            sync_warp();
            let ok = unsafe { factor_diag_tile(p, s, next, inv) };
            if lane == 0 && !ok {
                unsafe { *failed = 1 };
            }
        }
        // Row tiles: D's below the strip (kt+1..tiles), then those of the present
        // couplings, over the other warps only: the look-ahead warp's factor is the strip's
        // critical path, and tiles of its own after it made the closing barrier wait
        // longer (docs/perf-notes.md entry 22).
        let rows = TrailingRows { kt, tiles, l: (l0, rows_l > 0), r: (rr0, rows_r > 0) };
        // Pairs of column tiles in `f64` (entry 73); `f32`'s FMA tiles under their
        // 80-register cap measured slower paired.
        // On sm_90, `16 x 8` tiles of one `m16n8k8` each (entry 74).
        if T::BYTES == 8 && has_sm90_dmma() {
            if warp != ahead {
                unsafe { update_trailing16::<T, TRAILING16_WIDTH>(p, s, kb, &rows, warp, ahead) };
            }
        } else if T::BYTES == 8 {
            // Only the warps with items enter (measured 1-1.5 % faster at n = 64 than the
            // look-ahead warp passing through the loop's bounds check).
            if warp != ahead {
                unsafe { update_trailing::<T, 2>(p, s, kb, &rows, warp, ahead) };
            }
        } else {
            unsafe { update_trailing::<T, 1>(p, s, kb, &rows, warp, ahead) };
        }
        team.sync();
    }
}

/// Column tiles of 8 per work item of [`update_trailing16`].
const TRAILING16_WIDTH: usize = 2;

/// [`update_trailing`] on the sm_90 DMMA shape, `f64` where [`has_sm90_dmma`]: items of
/// one row tile of 16 rows and `W` consecutive column tiles of 8, one `m16n8k8` per
/// `16 x 8` tile (the work of four `m8n8k4`s). `D`'s row tiles start below the
/// look-ahead's diagonal tile (row `kb + 16`); a part whose rows end 8 into a row tile
/// (rounded size `≡ 8 mod 16`) gets a last tile of 8 rows (its `A` rows passed twice,
/// the copy dropped), so that nothing past the part is read or written. Entries of `D`
/// above the diagonal inside a kept tile are updated too: no other item writes them and
/// nothing reads `D`'s upper triangle.
///
/// # Safety
/// As [`update_trailing`], with `T = f64` and `has_sm90_dmma()`; called by every warp but
/// `ahead`.
#[inline(always)]
unsafe fn update_trailing16<T: Real, const W: usize>(p: *mut T, s: usize, kb: usize, rows: &TrailingRows, warp: usize, ahead: usize) {
    let TrailingRows { kt, tiles, l: (l0, has_l), r: (rr0, has_r) } = *rows;
    let nc = tiles * KB;
    let col_tiles = (tiles - kt - 1) as u32;
    // D's rows below the look-ahead's tile, and each present coupling's rows.
    let d_rows = nc.saturating_sub(kb + 2 * KB);
    let coupling_tiles = |present: bool| if present { nc.div_ceil(2 * KB) as u32 } else { 0 };
    let (d_tiles, l_tiles) = (d_rows.div_ceil(2 * KB) as u32, coupling_tiles(has_l));
    let row_tiles = d_tiles + l_tiles + coupling_tiles(has_r);
    let col_items = col_tiles.div_ceil(W as u32);
    let by_item = FastDiv::new(col_items);
    // The strip's columns: both factors of every tile's product.
    let strip = unsafe { p.add(kb) } as *const T;
    let mut e = warp as u32;
    while e < row_tiles * col_items {
        let (rt, c) = by_item.div_rem(e);
        e += ahead as u32;
        let cj = kt + 1 + W * c as usize;
        // The part's first row, this tile's offset in it, the part's rows.
        let (start, off, part_rows) = if rt < d_tiles {
            (kb + 2 * KB, rt as usize * 2 * KB, d_rows)
        } else if rt < d_tiles + l_tiles {
            (l0, (rt - d_tiles) as usize * 2 * KB, nc)
        } else {
            (rr0, (rt - d_tiles - l_tiles) as usize * 2 * KB, nc)
        };
        let r0 = start + off;
        let full = off + 2 * KB <= part_rows;
        let in_d = rt < d_tiles;
        // A D tile wholly above the diagonal is not updated.
        let keep: [bool; W] = core::array::from_fn(|w| cj + w < tiles && !(in_d && (cj + w) * KB > r0 + 2 * KB - 1));
        if !keep[0] {
            continue;
        }
        let cols: [usize; W] = core::array::from_fn(|w| (cj + w).min(tiles - 1) * KB);
        unsafe { update_tiles16((p, strip, strip), s, (r0, full), cols, KB, keep) };
    }
}

/// `C[r0.., c0[w]..] -= A[r0.., ..k] B[c0[w].., ..k]^T` for the `16 x 8` tiles at rows
/// `r0..r0 + 16` (`r0..r0 + 8` when not `full`) and columns `c0[w]..c0[w] + 8` of `C`, in
/// one pass of [`tiles16_minus_abt`]; `C`, `A` and `B` are row-major with row stride `s`.
/// Tile `w` is written back only where `keep[w]`; nothing past the tile's rows is read
/// or written.
///
/// # Safety
/// As [`update_tiles`] (a tile that is read but not kept is not written by another thread
/// meanwhile), for `T = f64` and `has_sm90_dmma()`.
#[inline(always)]
pub(crate) unsafe fn update_tiles16<T: Real, const W: usize>(
    (c, a, b): (*mut T, *const T, *const T),
    s: usize,
    (r0, full): (usize, bool),
    c0: [usize; W],
    k: usize,
    keep: [bool; W],
) {
    let lane = lane_id() as usize;
    let (g, t) = (lane / 4, lane % 4);
    let r_hi = if full { r0 + KB } else { r0 };
    let cells: [[*mut T; 2]; W] = c0.map(|col| unsafe { [c.add((r0 + g) * s + col + 2 * t), c.add((r_hi + g) * s + col + 2 * t)] });
    let acc = cells.map(|[lo, hi]| unsafe { [*lo, *lo.add(1), *hi, *hi.add(1)] });
    let a_rows = unsafe { [a.add(r0 * s), a.add(r_hi * s)] };
    let d = unsafe { tiles16_minus_abt(acc, a_rows, s, c0.map(|col| b.add(col * s)), s, k) };
    for w in 0..W {
        if keep[w] {
            let [lo, hi] = cells[w];
            unsafe {
                *lo = d[w][0];
                *lo.add(1) = d[w][1];
                if full {
                    *hi = d[w][2];
                    *hi.add(1) = d[w][3];
                }
            }
        }
    }
}

/// The row tiles below a strip `kt` that its trailing update covers: `D`'s on or below the
/// diagonal (from tile `kt + 1`), then each present coupling's `tiles`.
struct TrailingRows {
    kt: usize,
    tiles: usize,
    /// First row and presence of each coupling.
    l: (usize, bool),
    r: (usize, bool),
}

/// The trailing update of strip `kt` (columns `kb..kb + 8`) by the warps other than the
/// look-ahead warp `ahead` (it has the next diagonal tile, and tiles of its own after its
/// factor made the closing barrier wait longer, entry 22): items of one row tile and `W`
/// consecutive column tiles ([`update_tiles`]: one `A` fragment, `2 W` independent DMMA
/// chains). An item's columns past the last repeat the last tile, and on `D`'s diagonal
/// it reads its upper neighbours: neither is kept. An item that would read the look-ahead's
/// tile keeps nothing and is skipped. Index math in u32 with a multiply-high division:
/// `usize` is 64-bit on the device and its run-time divisions were half of the blocked
/// panel factor's instructions (`ncu`, entry 15). At `W = 1` this is the loop as it was
/// before the pairs (`f32` keeps it: the generic form of it compiled slower under its
/// register cap).
///
/// # Safety
/// As [`factor_strips`] between its barriers; called by every warp of the block (the
/// look-ahead warp then takes no item) or by every warp but `ahead`.
#[inline(always)]
unsafe fn update_trailing<T: Real, const W: usize>(p: *mut T, s: usize, kb: usize, rows: &TrailingRows, warp: usize, ahead: usize) {
    let TrailingRows { kt, tiles, l: (l0, has_l), r: (rr0, has_r) } = *rows;
    let col_tiles = (tiles - kt - 1) as u32;
    let coupling_tiles = |present: bool| if present { tiles as u32 } else { 0 };
    let (d_tiles, l_tiles) = (col_tiles, coupling_tiles(has_l));
    let row_tiles = d_tiles + l_tiles + coupling_tiles(has_r);
    let col_items = col_tiles.div_ceil(W as u32);
    let by_item = FastDiv::new(col_items);
    let mut e = if warp == ahead { u32::MAX } else { warp as u32 };
    while e < row_tiles * col_items {
        let (rt, c) = by_item.div_rem(e);
        let cj = kt + 1 + W * c as usize;
        // Tile `w` of the item exists (`w = 0` always does).
        let exists = |w: usize| w == 0 || cj + w < tiles;
        let (r0, keep): (usize, [bool; W]) = if rt < d_tiles {
            // On or below the diagonal; the next diagonal tile is the look-ahead's.
            let ri = kt + 1 + rt as usize;
            (ri * KB, core::array::from_fn(|w| exists(w) && ri >= cj + w && ri != kt + 1))
        } else if rt < d_tiles + l_tiles {
            (l0 + (rt - d_tiles) as usize * KB, core::array::from_fn(exists))
        } else {
            (rr0 + (rt - d_tiles - l_tiles) as usize * KB, core::array::from_fn(exists))
        };
        if keep[0] {
            if W == 1 {
                unsafe { update_tile(p, s, r0, cj * KB, kb) };
            } else {
                let cols: [usize; W] = core::array::from_fn(|w| (cj + w).min(tiles - 1) * KB);
                unsafe { update_tiles(p, s, r0, cols, kb, keep) };
            }
        }
        e += ahead as u32;
    }
}
