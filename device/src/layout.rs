//! Nested-dissection numbering, shared by the kernels and the host plan.
//!
//! Blocks are numbered `1..=N` here (0-based block `b` is number `b + 1`). Level `m`
//! holds the numbers with exactly `m` trailing zero bits; there are
//! `levels(N) = floor(log2 N) + 1 = ceil(log2(N + 1))` levels. When level `m` is
//! eliminated, the remaining neighbours of number `i` are `i - 2^m` (left, if >= 1) and
//! `i + 2^m` (right, if <= N); both belong to higher levels, so all nodes of a level are
//! independent.
//!
//! Storage per node (three `n x n` blocks, column-major, leading dimension `ld`):
//! - `diag[b]`: the working diagonal block, updated by lower levels, then `L_ii`;
//! - `left[b]`: in: the coupling `A[i, i - 2^m]`; out: `L_{left,i} = A[left, i] L_ii^-T`;
//! - `right[b]`: in: the coupling `A[i + 2^m, i]`; out: `L_{right,i} = A[right, i] L_ii^-T`.
//!
//! The couplings of level 0 are the input sub-diagonal blocks; those of level `m + 1`
//! are the fill blocks `A[r, l] = -L_{r,i} L_{l,i}^T` produced by level `m`, each written
//! by exactly one node into the slot of the one node that consumes it ([`fill_slot`]).

/// Number of elimination levels for `nblocks` blocks (0 for 0 blocks).
#[inline(always)]
pub const fn levels(nblocks: u32) -> u32 {
    if nblocks == 0 { 0 } else { 32 - nblocks.leading_zeros() }
}

/// Level of block number `i >= 1`.
#[inline(always)]
pub const fn level_of(i: u32) -> u32 {
    i.trailing_zeros()
}

/// Number of nodes in level `m`: the odd multiples of `2^m` up to `nblocks`.
#[inline(always)]
pub const fn nodes_in_level(nblocks: u32, m: u32) -> u32 {
    (nblocks >> m).div_ceil(2)
}

/// Block number of the `t`-th node of level `m`: `(2t + 1) 2^m`.
#[inline(always)]
pub const fn node_number(m: u32, t: u32) -> u32 {
    (2 * t + 1) << m
}

/// Left neighbour number at elimination of `i` on level `m`, if any.
#[inline(always)]
pub const fn left_of(i: u32, m: u32) -> Option<u32> {
    let step = 1u32 << m;
    if i > step { Some(i - step) } else { None }
}

/// Right neighbour number at elimination of `i` on level `m`, if any.
#[inline(always)]
pub const fn right_of(i: u32, m: u32, nblocks: u32) -> Option<u32> {
    let r = i as u64 + (1u64 << m);
    if r <= nblocks as u64 { Some(r as u32) } else { None }
}

/// Where the fill `A[r, l]` created by eliminating a node on level `m` with neighbours
/// `l < r` is stored: `(block number, is_left_slot)`. It is the left coupling of `r` when
/// `r` is on level `m + 1`, otherwise the right coupling of `l` (exactly one of the two is
/// on level `m + 1`).
#[inline(always)]
pub const fn fill_slot(l: u32, r: u32, m: u32) -> (u32, bool) {
    if level_of(r) == m + 1 { (r, true) } else { (l, false) }
}

/// Round `n` up to a multiple of `align`.
#[inline(always)]
pub const fn round_up(n: u32, align: u32) -> u32 {
    n.div_ceil(align) * align
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_is_on_exactly_one_level() {
        for n in 1..200u32 {
            let mut seen = std::vec![0u32; n as usize + 1];
            for m in 0..levels(n) {
                for t in 0..nodes_in_level(n, m) {
                    let i = node_number(m, t);
                    assert!(i >= 1 && i <= n);
                    assert_eq!(level_of(i), m);
                    seen[i as usize] += 1;
                }
            }
            assert!(seen[1..].iter().all(|&c| c == 1), "N = {n}");
            assert_eq!(levels(n), (n as f64 + 1.0).log2().ceil() as u32);
        }
    }

    #[test]
    fn each_fill_is_consumed_by_one_node_of_the_next_level() {
        for n in 1..200u32 {
            for m in 0..levels(n) {
                for t in 0..nodes_in_level(n, m) {
                    let i = node_number(m, t);
                    if let (Some(l), Some(r)) = (left_of(i, m), right_of(i, m, n)) {
                        let (owner, is_left) = fill_slot(l, r, m);
                        assert_eq!(level_of(owner), m + 1);
                        if is_left {
                            assert_eq!(left_of(owner, m + 1), Some(l));
                        } else {
                            assert_eq!(right_of(owner, m + 1, n), Some(r));
                        }
                    }
                }
            }
        }
    }
}
