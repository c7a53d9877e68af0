//! Forward and backward substitution of one level, `k` right-hand sides at a time.

use super::{InfoCode, align_elems, info_key};
use crate::layout::{left_of, node_number, nodes_in_level, right_of};
use crate::team::{Block, Team};
use crate::tile::{self, MatRef, copy_batched, product, trsm};
use blocktri_prims::memory::load_readonly;
use blocktri_prims::{Real, atomic, block_idx_x, shared};

/// Arguments of the solve kernels. The factor arrays are those written by
/// [`super::factor_level`]; the right-hand sides are overwritten by `y`, then by `x`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SolveArgs<T> {
    /// `L_ii` blocks.
    pub diag: *const T,
    /// `L_{left,i}` blocks.
    pub left: *const T,
    /// `L_{right,i}` blocks.
    pub right: *const T,
    /// Right-hand sides: per system `nblocks * n` rows by `nrhs` columns, column-major.
    pub rhs: *mut T,
    /// Per-system status of the solve (non-finite solution values), see
    /// [`super::INFO_OK`].
    pub info: *mut u64,
    /// Leading dimension of the factor blocks.
    pub ld: u32,
    /// Block size.
    pub n: u32,
    /// Blocks per system.
    pub nblocks: u32,
    /// Level.
    pub level: u32,
    /// Right-hand-side columns.
    pub nrhs: u32,
    /// Columns processed per pass (bounds shared memory).
    pub chunk: u32,
    /// Columns `edge_from..nrhs` are solved only on the nodes with no left or no right
    /// neighbour, the elimination-tree paths of each system's first and last block (the
    /// segment path's coupling columns: `docs/perf-notes.md`, entry 65). The caller
    /// guarantees that those columns are zero outside blocks of such nodes and reads
    /// their solution only there; elsewhere it is left unfinished. `nrhs` or more: every
    /// column on every node. The rows kernels honour it; the others solve every column
    /// everywhere, which is also correct (the panel solves did not take it for free:
    /// 8 more registers and 2-4 % slower, `docs/perf-notes.md` entry 65).
    pub edge_from: u32,
    /// Systems in the batch (the kernels with several systems per block stop there).
    pub systems: u32,
    /// Null for the kernels launched once per level. For the single-launch sweeps
    /// ([`super::dataflow`]): their ticket counter and completion flags
    /// ([`super::dataflow::solve_flag_words`] words, zero before the launch).
    pub flags: *mut u32,
    /// The sweeps of a single-launch solve: [`super::dataflow::SWEEP_FORWARD`] and/or
    /// [`super::dataflow::SWEEP_BACKWARD`] (ignored by the per-level kernels).
    pub sweeps: u32,
}

/// Shared memory of the solve kernels in bytes: `L_ii`, `L_li`, `L_ri` (`n x n` each,
/// leading dimension `n + 1` to spread transposed reads over banks), `n` reciprocal
/// pivots and an `n x chunk` right-hand-side tile.
pub const fn solve_shared_bytes(n: usize, chunk: usize, elem_bytes: usize) -> usize {
    let tile = align_elems((n + 1) * n, elem_bytes);
    (3 * tile + align_elems(n, elem_bytes) + align_elems(n * chunk, elem_bytes)) * elem_bytes
}

struct Node<T> {
    s: usize,
    b: usize,
    left: Option<u32>,
    right: Option<u32>,
    l: *mut T,
    kl: *mut T,
    kr: *mut T,
    inv: *mut T,
    z: *mut T,
    ldt: usize,
}

/// Decodes the block index and loads `L_ii` (and, when `with_couplings`, `L_li`, `L_ri`)
/// into shared memory, with the reciprocal pivots. Ends with a barrier.
unsafe fn load_node<T: Real, M: Team>(team: M, a: &SolveArgs<T>, with_couplings: bool) -> Node<T> {
    let (n, ld, m) = (a.n as usize, a.ld as usize, a.level);
    let nodes = nodes_in_level(a.nblocks, m);
    let bx = block_idx_x();
    let (s, t) = ((bx / nodes) as usize, bx % nodes);
    let i = node_number(m, t);
    let b = (i - 1) as usize;
    let (left, right) = (left_of(i, m), right_of(i, m, a.nblocks));
    let ldt = n + 1;
    let tile_elems = align_elems(ldt * n, T::BYTES);
    let smem = shared::dynamic_shared::<T>();
    let (l, kl, kr) = (smem, unsafe { smem.add(tile_elems) }, unsafe { smem.add(2 * tile_elems) });
    let inv = unsafe { smem.add(3 * tile_elems) };
    let z = unsafe { inv.add(align_elems(n, T::BYTES)) };
    let off = (s * a.nblocks as usize + b) * ld * n;
    let (gl, gkl, gkr) = unsafe { (a.diag.add(off), a.left.add(off), a.right.add(off)) };
    let (has_l, has_r) = (with_couplings && left.is_some(), with_couplings && right.is_some());
    // The factor is read-only here: non-coherent loads, batched before the stores.
    copy_batched(
        team,
        n,
        n,
        |r, c| unsafe {
            let at = c * ld + r;
            let lv = if has_l { load_readonly(gkl.add(at)) } else { T::ZERO };
            let rv = if has_r { load_readonly(gkr.add(at)) } else { T::ZERO };
            (load_readonly(gl.add(at)), lv, rv)
        },
        |r, c, (d, lv, rv)| unsafe {
            let at = c * ldt + r;
            *l.add(at) = d;
            if has_l {
                *kl.add(at) = lv;
            }
            if has_r {
                *kr.add(at) = rv;
            }
        },
    );
    team.sync();
    unsafe { trsm::invert_diagonal(team, l, ldt, n, inv) };
    Node { s, b, left, right, l, kl, kr, inv, z, ldt }
}

/// Forward substitution of one level (levels in increasing order):
/// `y_i = L_ii^-1 b_i`, then `b_l -= L_li y_i` and `b_r -= L_ri y_i` (atomic adds; the
/// neighbours are on higher levels and read only by later launches).
///
/// # Safety
/// Launch as [`super::factor_level`] with [`solve_shared_bytes`]; the factor must be
/// complete and levels below must have completed.
pub unsafe fn solve_forward_level<T: Real>(args: &SolveArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, k, chunk) = (a.n as usize, a.nrhs as usize, a.chunk as usize);
    let node = unsafe { load_node(team, &a, false) };
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(node.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let (ld, off) = (a.ld as usize, (node.s * a.nblocks as usize + node.b) * a.ld as usize * n);
    let kl = MatRef::col_major(unsafe { a.left.add(off) }, ld);
    let kr = MatRef::col_major(unsafe { a.right.add(off) }, ld);
    let mut c0 = 0;
    while c0 < k {
        let kc = if k - c0 < chunk { k - c0 } else { chunk };
        let bi = unsafe { seg(node.b).add(c0 * ldb) };
        tile::for_each_entry(team, n, kc, |r, c| unsafe { *node.z.add(c * n + r) = *bi.add(c * ldb + r) });
        team.sync();
        unsafe { trsm::trsm_lower(team, node.l, node.ldt, n, node.z, n, kc, node.inv) };
        tile::for_each_entry(team, n, kc, |r, c| unsafe { *bi.add(c * ldb + r) = *node.z.add(c * n + r) });
        let y = MatRef::col_major(node.z as *const T, n);
        if let Some(l) = node.left {
            let bl = unsafe { seg((l - 1) as usize).add(c0 * ldb) };
            unsafe { product(team, n, kc, n, kl, y, |r, c, v| T::atomic_add_global(bl.add(c * ldb + r), -v)) };
        }
        if let Some(r) = node.right {
            let br = unsafe { seg((r - 1) as usize).add(c0 * ldb) };
            unsafe { product(team, n, kc, n, kr, y, |rr, c, v| T::atomic_add_global(br.add(c * ldb + rr), -v)) };
        }
        team.sync();
        c0 += kc;
    }
}

/// Backward substitution of one level (levels in decreasing order):
/// `x_i = L_ii^-T (y_i - L_li^T x_l - L_ri^T x_r)`; `x_l`, `x_r` were computed by
/// earlier launches. Records [`InfoCode::NonFiniteSolution`] if `x_i` is not finite.
///
/// # Safety
/// As [`solve_forward_level`], after the whole forward sweep.
pub unsafe fn solve_backward_level<T: Real>(args: &SolveArgs<T>) {
    let team = Block;
    let a = *args;
    let (n, k, chunk) = (a.n as usize, a.nrhs as usize, a.chunk as usize);
    let node = unsafe { load_node(team, &a, true) };
    let ldb = a.nblocks as usize * n;
    let rhs_sys = unsafe { a.rhs.add(node.s * ldb * k) };
    let seg = |idx: usize| unsafe { rhs_sys.add(idx * n) };
    let klt = MatRef::col_major(node.kl as *const T, node.ldt).t();
    let krt = MatRef::col_major(node.kr as *const T, node.ldt).t();
    let mut c0 = 0;
    while c0 < k {
        let kc = if k - c0 < chunk { k - c0 } else { chunk };
        let bi = unsafe { seg(node.b).add(c0 * ldb) };
        tile::for_each_entry(team, n, kc, |r, c| unsafe { *node.z.add(c * n + r) = *bi.add(c * ldb + r) });
        team.sync();
        if let Some(l) = node.left {
            let xl = MatRef::col_major(unsafe { seg((l - 1) as usize).add(c0 * ldb) } as *const T, ldb);
            unsafe { product(team, n, kc, n, klt, xl, |r, c, v| *node.z.add(c * n + r) -= v) };
        }
        if let Some(r) = node.right {
            let xr = MatRef::col_major(unsafe { seg((r - 1) as usize).add(c0 * ldb) } as *const T, ldb);
            unsafe { product(team, n, kc, n, krt, xr, |rr, c, v| *node.z.add(c * n + rr) -= v) };
        }
        team.sync();
        unsafe { trsm::trsm_lower_transposed(team, node.l, node.ldt, n, node.z, n, kc, node.inv) };
        let mut finite = true;
        tile::for_each_entry(team, n, kc, |r, c| unsafe {
            let v = *node.z.add(c * n + r);
            finite &= v.is_finite();
            *bi.add(c * ldb + r) = v;
        });
        if !finite {
            unsafe { atomic::atomic_min_u64(a.info.add(node.s), info_key(a.level, InfoCode::NonFiniteSolution, node.b as u32)) };
        }
        team.sync();
        c0 += kc;
    }
}
