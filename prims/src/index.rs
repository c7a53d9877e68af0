//! Thread, block and grid indices.
//!
//! On nvptx64 each function reads one PTX special register (`%tid`, `%ctaid`, `%ntid`,
//! `%nctaid`, `%laneid`); on the host it reads the emulator's per-thread context and
//! panics when called outside [`crate::emu::launch`].

macro_rules! special_register {
    ($(#[$doc:meta])* $name:ident, $nv:ident, $field:ident . $axis:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                // SAFETY: reading a special register has no preconditions.
                unsafe { core::arch::nvptx::$nv() }
            }
            #[cfg(not(target_arch = "nvptx64"))]
            {
                crate::emu::with_ctx(|c| c.$field.$axis)
            }
        }
    };
}

special_register!(/// Thread index in the block, x. PTX: `mov.u32 %r, %tid.x`.
    thread_idx_x, _thread_idx_x, tid.x);
special_register!(/// Thread index in the block, y. PTX: `mov.u32 %r, %tid.y`.
    thread_idx_y, _thread_idx_y, tid.y);
special_register!(/// Thread index in the block, z. PTX: `mov.u32 %r, %tid.z`.
    thread_idx_z, _thread_idx_z, tid.z);
special_register!(/// Block index in the grid, x. PTX: `mov.u32 %r, %ctaid.x`.
    block_idx_x, _block_idx_x, bid.x);
special_register!(/// Block index in the grid, y. PTX: `mov.u32 %r, %ctaid.y`.
    block_idx_y, _block_idx_y, bid.y);
special_register!(/// Block index in the grid, z. PTX: `mov.u32 %r, %ctaid.z`.
    block_idx_z, _block_idx_z, bid.z);
special_register!(/// Threads per block, x. PTX: `mov.u32 %r, %ntid.x`.
    block_dim_x, _block_dim_x, bdim.x);
special_register!(/// Threads per block, y. PTX: `mov.u32 %r, %ntid.y`.
    block_dim_y, _block_dim_y, bdim.y);
special_register!(/// Threads per block, z. PTX: `mov.u32 %r, %ntid.z`.
    block_dim_z, _block_dim_z, bdim.z);
special_register!(/// Blocks in the grid, x. PTX: `mov.u32 %r, %nctaid.x`.
    grid_dim_x, _grid_dim_x, gdim.x);
special_register!(/// Blocks in the grid, y. PTX: `mov.u32 %r, %nctaid.y`.
    grid_dim_y, _grid_dim_y, gdim.y);
special_register!(/// Blocks in the grid, z. PTX: `mov.u32 %r, %nctaid.z`.
    grid_dim_z, _grid_dim_z, gdim.z);

/// Linear thread index in the block: `x + y * dim.x + z * dim.x * dim.y`.
#[inline(always)]
pub fn thread_rank() -> u32 {
    thread_idx_x() + block_dim_x() * (thread_idx_y() + block_dim_y() * thread_idx_z())
}

/// Threads in the block: `dim.x * dim.y * dim.z`.
#[inline(always)]
pub fn block_size() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}

/// Global thread index along x: `block_idx_x * block_dim_x + thread_idx_x`.
#[inline(always)]
pub fn global_idx_x() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// Lane of this thread in its warp (0..32). PTX: `mov.u32 %r, %laneid`.
/// Equal to `thread_rank() % 32` for the block shapes this crate supports.
#[inline(always)]
pub fn lane_id() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let lane: u32;
        // SAFETY: reads a special register.
        unsafe {
            core::arch::asm!("mov.u32 {0}, %laneid;", out(reg32) lane, options(nomem, nostack, pure));
        }
        lane
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        thread_rank() % crate::warp::WARP_SIZE
    }
}

/// `x`, through a value the compiler cannot see into or move: computations from the result
/// stay where they are written. Inside a loop, code derived from loop-invariant values
/// (lane numbers, say) is otherwise hoisted out of it, and a fully unrolled sweep can
/// hoist hundreds of such values, more than fit in registers. PTX: a volatile `mov`.
///
/// ```
/// assert_eq!(blocktri_prims::index::opaque_u32(7), 7);
/// ```
#[inline(always)]
pub fn opaque_u32(x: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: a register move; not `pure`, so it is neither hoisted nor merged.
        unsafe {
            core::arch::asm!("mov.u32 {0}, {1};", out(reg32) out, in(reg32) x, options(nomem, nostack));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        core::hint::black_box(x)
    }
}

/// Warp index in the block: `thread_rank() / 32`.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_rank() / crate::warp::WARP_SIZE
}
