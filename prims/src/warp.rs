//! Warp shuffles and reductions over all 32 lanes.
//!
//! Every function here must be called by all 32 lanes of the warp together (full mask
//! `0xffffffff`). 64-bit values move as two 32-bit shuffles.

/// Lanes per warp.
pub const WARP_SIZE: u32 = 32;

/// Value of `value` held by lane `src_lane` (0..32).
/// PTX: `shfl.sync.idx.b32 d, value, src_lane, 0x1f, 0xffffffff`.
#[inline(always)]
pub fn shfl_idx_u32(value: u32, src_lane: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: full-warp shuffle; all lanes participate (documented contract).
        unsafe {
            core::arch::asm!("shfl.sync.idx.b32 {0}, {1}, {2}, 0x1f, 0xffffffff;",
                out(reg32) out, in(reg32) value, in(reg32) src_lane, options(nostack));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::warp_exchange(value as u64, src_lane % WARP_SIZE) as u32
    }
}

/// Value of `value` held by lane `lane_id + delta`, or this lane's own value where that
/// lane is past 31. PTX: `shfl.sync.down.b32 d, value, delta, 0x1f, 0xffffffff`.
#[inline(always)]
pub fn shfl_down_u32(value: u32, delta: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: full-warp shuffle; all lanes participate (documented contract).
        unsafe {
            core::arch::asm!("shfl.sync.down.b32 {0}, {1}, {2}, 0x1f, 0xffffffff;",
                out(reg32) out, in(reg32) value, in(reg32) delta, options(nostack));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let lane = crate::lane_id();
        let src = if lane + delta < WARP_SIZE { lane + delta } else { lane };
        crate::emu::warp_exchange(value as u64, src) as u32
    }
}

/// Value of `value` held by lane `lane_id ^ mask`.
/// PTX: `shfl.sync.bfly.b32 d, value, mask, 0x1f, 0xffffffff`.
#[inline(always)]
pub fn shfl_xor_u32(value: u32, mask: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: full-warp shuffle; all lanes participate (documented contract).
        unsafe {
            core::arch::asm!("shfl.sync.bfly.b32 {0}, {1}, {2}, 0x1f, 0xffffffff;",
                out(reg32) out, in(reg32) value, in(reg32) mask, options(nostack));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::emu::warp_exchange(value as u64, (crate::lane_id() ^ mask) % WARP_SIZE) as u32
    }
}

/// 64-bit [`shfl_idx_u32`] (two shuffles).
#[inline(always)]
pub fn shfl_idx_u64(value: u64, src_lane: u32) -> u64 {
    let lo = shfl_idx_u32(value as u32, src_lane) as u64;
    let hi = shfl_idx_u32((value >> 32) as u32, src_lane) as u64;
    lo | (hi << 32)
}

/// 64-bit [`shfl_down_u32`] (two shuffles).
#[inline(always)]
pub fn shfl_down_u64(value: u64, delta: u32) -> u64 {
    let lo = shfl_down_u32(value as u32, delta) as u64;
    let hi = shfl_down_u32((value >> 32) as u32, delta) as u64;
    lo | (hi << 32)
}

/// 64-bit [`shfl_xor_u32`] (two shuffles).
#[inline(always)]
pub fn shfl_xor_u64(value: u64, mask: u32) -> u64 {
    let lo = shfl_xor_u32(value as u32, mask) as u64;
    let hi = shfl_xor_u32((value >> 32) as u32, mask) as u64;
    lo | (hi << 32)
}

/// Sum of `value` over the 32 lanes, returned to every lane (butterfly reduction,
/// five `shfl.sync.bfly` rounds per 32 bits).
#[inline(always)]
pub fn warp_sum<T: crate::Real>(value: T) -> T {
    let mut v = value;
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        v = v + v.shfl_xor(mask);
        mask /= 2;
    }
    v
}

/// Maximum of `value` over the 32 lanes, returned to every lane.
#[inline(always)]
pub fn warp_max<T: crate::Real>(value: T) -> T {
    let mut v = value;
    let mut mask = WARP_SIZE / 2;
    while mask > 0 {
        let other = v.shfl_xor(mask);
        if other > v {
            v = other;
        }
        mask /= 2;
    }
    v
}
