//! The fused factor kernel of one level (and its interlaced forward substitution).

use super::{INFO_OK, InfoCode, align_elems, info_key};
use crate::layout::{fill_slot, left_of, node_number, nodes_in_level, right_of};
use crate::team::{Block, Team};
use crate::tile::{self, MatRef, NO_FAILURE, copy_batched, for_each_index, for_each_rc, potrf_panel, product, trsm};
use blocktri_prims::memory::load_readonly;
use blocktri_prims::{Real, atomic, block_idx_x, shared};

/// Arguments of [`factor_level`]. Pointers are device addresses; see [`crate::layout`]
/// for the per-node storage and [`super`] for the batch layout.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FactorArgs<T> {
    /// Input diagonal blocks `D_i` (`nblocks` per system); never written.
    pub diag_in: *const T,
    /// Per block: the sum of the updates `-L_{i,c} L_{i,c}^T` from lower levels
    /// (accumulated with atomic adds; zeroed by [`factor_prep`] for every block above
    /// level 0), then `L_ii`.
    pub diag: *mut T,
    /// Left couplings in, `L_{left,i}` out.
    pub left: *mut T,
    /// Right couplings in, `L_{right,i}` out.
    pub right: *mut T,
    /// Input sub-diagonal blocks `A[b+1, b]` (`nblocks - 1` per system), read on level 0.
    pub sub: *const T,
    /// Per-system status words (see [`super::INFO_OK`]).
    pub info: *mut u64,
    /// Right-hand sides for the interlaced forward substitution (null: none).
    pub rhs: *mut T,
    /// Symmetry tolerance: `|a_pq - a_qp| <= tol * sqrt(|a_pp a_qq|)`.
    pub sym_tol: T,
    /// Leading dimension of every block.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// Systems in the batch.
    pub systems: u32,
    /// Level being eliminated.
    pub level: u32,
    /// Right-hand-side columns (0 without interlaced forward substitution).
    pub nrhs: u32,
    /// As [`super::SolveArgs::edge_from`] for the interlaced forward substitution (the rows
    /// kernels honour it).
    pub edge_from: u32,
    /// Null for the kernels launched once per level. For the single-launch sweeps
    /// ([`super::dataflow`]): their ticket counter and completion flags
    /// ([`super::dataflow::factor_flag_words`] words, zero before the launch); the node
    /// kernels then read what other blocks of the launch wrote through L2.
    pub flags: *mut u32,
}

/// Shared memory of [`factor_level`] in bytes: the `3n x n` panel, `2n` pivot values, the
/// status word and, with interlaced substitution, `n x nrhs` right-hand sides.
pub const fn factor_shared_bytes(n: usize, nrhs: usize, elem_bytes: usize) -> usize {
    let panel = align_elems(3 * n * n, elem_bytes);
    let piv = align_elems(2 * n, elem_bytes);
    let rhs = align_elems(n * nrhs, elem_bytes);
    (panel + piv + rhs) * elem_bytes + 16
}

/// Resets the per-system status words and zeroes the update accumulators of every block
/// above level 0 (the odd 0-based blocks), so that level 0 can add into them.
/// Grid `x`: `max(1, systems * floor(nblocks / 2))` thread blocks, one `n x n` block each.
///
/// # Safety
/// Arrays as in [`FactorArgs`]; any block size.
pub unsafe fn factor_prep<T: Real>(args: &FactorArgs<T>) {
    let a = *args;
    let half = (a.nblocks / 2) as usize;
    let bx = block_idx_x() as usize;
    let team = Block;
    if bx == 0 {
        for_each_index(team, a.systems as usize, |s| unsafe { *a.info.add(s) = INFO_OK });
    }
    if half == 0 {
        return;
    }
    let (s, q) = (bx / half, bx % half);
    let blk = a.ld as usize * a.n as usize;
    let dst = unsafe { a.diag.add((s * a.nblocks as usize + 2 * q + 1) * blk) };
    for_each_index(team, blk, |e| unsafe { *dst.add(e) = T::ZERO });
}

/// Eliminates node `t` of level `args.level` of system `s` (block index `s * nodes + t`):
///
/// 1. loads `D_i` (input plus accumulated updates), the left coupling transposed and the right coupling into
///    the panel `[D_i; A[l,i]; A[r,i]]` and checks them (finite; `D_i` symmetric);
/// 2. factors the panel ([`potrf_panel`]): `L_ii`, `L_li = A[l,i] L_ii^-T`, `L_ri`;
/// 3. stores the three factor blocks, subtracts `L_li L_li^T` from `D_l` and
///    `L_ri L_ri^T` from `D_r` with atomic adds (at most two writers per block per level),
///    and stores the fill `A[r,l] = -L_ri L_li^T` in the slot of its consumer;
/// 4. with `nrhs > 0`, also performs this node's forward substitution:
///    `y_i = L_ii^-1 b_i`, `b_l -= L_li y_i`, `b_r -= L_ri y_i` (atomic).
///
/// A node whose system already failed on a lower level returns at once; a failure is
/// recorded in `info[s]` with [`info_key`] and the node then writes nothing else.
///
/// # Safety
/// Launch with a 1-D block of a multiple of 32 threads, `x` grid `systems * nodes`, and
/// [`factor_shared_bytes`] of dynamic shared memory; the arrays must have the documented
/// sizes; levels below `args.level` must have completed (stream order).
pub unsafe fn factor_level<T: Real>(args: &FactorArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, ld, m) = (a.n as usize, a.ld as usize, a.level);
    let nodes = nodes_in_level(a.nblocks, m);
    let bx = block_idx_x();
    let (s, t) = ((bx / nodes) as usize, bx % nodes);
    let i = node_number(m, t);
    let b = (i - 1) as usize;
    let info = unsafe { a.info.add(s) };
    let blk = ld * n;
    let sys_blocks = s * a.nblocks as usize;
    let block = |base: *mut T, idx: usize| unsafe { base.add((sys_blocks + idx) * blk) };
    let left = left_of(i, m);
    let right = right_of(i, m, a.nblocks);

    // Shared memory: panel (rows = n * (1 + has_left + has_right), leading dim ldp),
    // pivots, status word, right-hand sides.
    let rows = n * (1 + left.is_some() as usize + right.is_some() as usize);
    let ldp = rows;
    let smem = shared::dynamic_shared::<T>();
    let p = smem;
    let piv = unsafe { smem.add(align_elems(3 * n * n, T::BYTES)) };
    let rhs_sh = unsafe { piv.add(align_elems(2 * n, T::BYTES)) };
    let status = unsafe { rhs_sh.add(align_elems(n * a.nrhs as usize, T::BYTES)) } as *mut u32;
    let left_row = n;
    let right_row = n * (1 + left.is_some() as usize);

    // 1. Load.
    let d_in = unsafe { a.diag_in.add((sys_blocks + b) * blk) };
    let d_acc = block(a.diag, b);
    // Level 0 reads the input sub-diagonal blocks: left coupling A[b, b-1] = sub[b-1],
    // right coupling A[b+1, b] = sub[b]. Pointers are formed only for existing neighbours.
    let sub_block = |idx: usize| unsafe { a.sub.add((s * (a.nblocks as usize - 1) + idx) * blk) };
    let l_src: *const T = match left {
        Some(_) if m == 0 => sub_block(b - 1),
        Some(_) => block(a.left, b),
        None => core::ptr::null(),
    };
    let r_src: *const T = match right {
        Some(_) if m == 0 => sub_block(b),
        Some(_) => block(a.right, b),
        None => core::ptr::null(),
    };
    if team.rank() == 0 {
        unsafe { *status = NO_FAILURE };
    }
    // The status of this system, read with the tiles so that its latency overlaps theirs.
    // A failure on a lower level was written by an earlier launch: every thread sees the
    // same value, so the exit below is uniform over the block.
    let recorded = unsafe { core::ptr::read_volatile(info) };
    // Every value read here is read-only during this launch (inputs; updates and fills of
    // lower levels), hence the non-coherent cache path.
    let (has_l, has_r) = (left.is_some(), right.is_some());
    copy_batched(
        team,
        n,
        n,
        |r, c| unsafe {
            let at = c * ld + r;
            let acc = if m == 0 { T::ZERO } else { load_readonly(d_acc.add(at)) };
            let l = if has_l { load_readonly(l_src.add(at)) } else { T::ZERO };
            let rv = if has_r { load_readonly(r_src.add(at)) } else { T::ZERO };
            (load_readonly(d_in.add(at)) + acc, l, rv)
        },
        |r, c, (d, l, rv)| unsafe {
            *p.add(c * ldp + r) = d;
            if has_l {
                // Stored A[i, l] (rows: this node); the panel needs A[l, i] = its transpose.
                *p.add(r * ldp + left_row + c) = l;
            }
            if has_r {
                *p.add(c * ldp + right_row + r) = rv;
            }
        },
    );
    team.sync();
    if recorded != INFO_OK && (recorded >> 40) < m as u64 {
        return;
    }
    // Checks. `status` collects the smallest failing code for this node.
    for_each_rc(team, n, n, |r, c| unsafe {
        let mut bad = None;
        let mut finite = (*p.add(c * ldp + r)).is_finite();
        if left.is_some() {
            finite &= (*p.add(c * ldp + left_row + r)).is_finite();
        }
        if right.is_some() {
            finite &= (*p.add(c * ldp + right_row + r)).is_finite();
        }
        if !finite {
            bad = Some(InfoCode::NonFinite);
        } else if r > c {
            // |lo - up| <= tol sqrt(|a_rr a_cc|), squared: no square root per entry.
            let (lo, up) = (*p.add(c * ldp + r), *p.add(r * ldp + c));
            let diff = lo - up;
            let scale = (*p.add(r * ldp + r) * *p.add(c * ldp + c)).abs();
            let symmetric = diff * diff <= a.sym_tol * a.sym_tol * scale; // false for NaN
            if !symmetric {
                bad = Some(InfoCode::NotSymmetric);
            }
        }
        if let Some(code) = bad {
            atomic::atomic_min_u32(status, code as u32);
        }
    });
    team.sync();
    let input_status = unsafe { *status };
    team.sync();
    if input_status != NO_FAILURE {
        if team.rank() == 0 {
            let code = InfoCode::from_u32(input_status).unwrap_or(InfoCode::NonFinite);
            unsafe { atomic::atomic_min_u64(info, info_key(m, code, b as u32)) };
        }
        return;
    }

    // 2. Factor.
    let failed = unsafe { potrf_panel(team, p, ldp, n, rows, piv, status) };
    if failed != NO_FAILURE {
        if team.rank() == 0 {
            unsafe { atomic::atomic_min_u64(info, info_key(m, InfoCode::NotPositiveDefinite, b as u32)) };
        }
        return;
    }

    // 3. Store factors, update neighbours, write the fill.
    let d_dst = block(a.diag, b);
    let (l_dst, r_dst) = (block(a.left, b), block(a.right, b));
    for_each_rc(team, n, n, |r, c| unsafe {
        *d_dst.add(c * ld + r) = if r >= c { *p.add(c * ldp + r) } else { T::ZERO };
        if left.is_some() {
            *l_dst.add(c * ld + r) = *p.add(c * ldp + left_row + r);
        }
        if right.is_some() {
            *r_dst.add(c * ld + r) = *p.add(c * ldp + right_row + r);
        }
    });
    let kl = MatRef::col_major(unsafe { p.add(left_row) } as *const T, ldp);
    let kr = MatRef::col_major(unsafe { p.add(right_row) } as *const T, ldp);
    if let Some(l) = left {
        let dl = block(a.diag, (l - 1) as usize);
        unsafe { product(team, n, n, n, kl, kl.t(), |r, c, v| T::atomic_add_global(dl.add(c * ld + r), -v)) };
    }
    if let Some(r) = right {
        let dr = block(a.diag, (r - 1) as usize);
        unsafe { product(team, n, n, n, kr, kr.t(), |rr, c, v| T::atomic_add_global(dr.add(c * ld + rr), -v)) };
    }
    if let (Some(l), Some(r)) = (left, right) {
        let (owner, is_left) = fill_slot(l, r, m);
        let fill = block(if is_left { a.left } else { a.right }, (owner - 1) as usize);
        unsafe { product(team, n, n, n, kr, kl.t(), |rr, c, v| *fill.add(c * ld + rr) = -v) };
    }

    // 4. Interlaced forward substitution.
    let k = a.nrhs as usize;
    if k == 0 {
        return;
    }
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(s * ldb * k) };
    let seg = |blk_idx: usize| unsafe { rhs_sys.add(blk_idx * n) };
    let bi = seg(b);
    tile::for_each_entry(team, n, k, |r, c| unsafe { *rhs_sh.add(c * n + r) = *bi.add(c * ldb + r) });
    team.sync();
    // L's diagonal is sqrt(d); its reciprocal is the pivot's 1/sqrt(d) in `piv`.
    unsafe { trsm::trsm_lower(team, p, ldp, n, rhs_sh, n, k, piv) };
    tile::for_each_entry(team, n, k, |r, c| unsafe { *bi.add(c * ldb + r) = *rhs_sh.add(c * n + r) });
    let y = MatRef::col_major(rhs_sh as *const T, n);
    if let Some(l) = left {
        let bl = seg((l - 1) as usize);
        unsafe { product(team, n, k, n, kl, y, |r, c, v| T::atomic_add_global(bl.add(c * ldb + r), -v)) };
    }
    if let Some(r) = right {
        let br = seg((r - 1) as usize);
        unsafe { product(team, n, k, n, kr, y, |rr, c, v| T::atomic_add_global(br.add(c * ldb + rr), -v)) };
    }
}
