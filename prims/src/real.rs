//! [`Real`]: the floating-point operations kernels need, for `f32` and `f64`.

use core::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// A GPU floating-point type (`f32` or `f64`): arithmetic, IEEE square root and fused
/// multiply-add, atomics and warp shuffles.
///
/// On nvptx64: `sqrt` is `sqrt.rn.f{32,64}`, `mul_add` is `fma.rn.f{32,64}`, `atomic_add`
/// is `red.relaxed.gpu.add.f{32,64}`, the shuffles are `shfl.sync` (two for `f64`).
pub trait Real:
    Copy
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + core::fmt::Debug
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Machine epsilon.
    const EPSILON: Self;
    /// A quiet NaN (used to poison buffers).
    const NAN: Self;
    /// Size in bytes.
    const BYTES: usize;
    /// Short name, `"f32"` or `"f64"` (used for kernel names).
    const NAME: &'static str;

    /// Rounds an `f64` to this type.
    fn from_f64(value: f64) -> Self;
    /// Widens to `f64`.
    fn to_f64(self) -> f64;
    /// Correctly rounded square root.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// `self * a + b` with one rounding.
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `1 / sqrt(self)` for positive finite `self`, accurate to about one unit in the last
    /// place: the hardware approximation (`rsqrt.approx.f64`/`.f32`, about 23 bits) refined
    /// by Newton steps (two for `f64`, one for `f32`). Much shorter than
    /// `1 / sqrt(self)` with IEEE rounding, which matters on a serial critical path.
    /// Non-positive or non-finite input gives a non-finite or meaningless result; callers
    /// check the input first.
    fn rsqrt_fast(self) -> Self;
    /// `*ptr += value` atomically at device scope.
    ///
    /// # Safety
    /// As [`crate::atomic::atomic_add_f64`].
    unsafe fn atomic_add(ptr: *mut Self, value: Self);
    /// `*ptr += value` atomically at device scope on global memory (no address-space
    /// check).
    ///
    /// # Safety
    /// As [`crate::atomic::atomic_add_global_f64`]: `ptr` points to global memory.
    unsafe fn atomic_add_global(ptr: *mut Self, value: Self);
    /// `*ptr += value` atomically at block scope.
    ///
    /// # Safety
    /// As [`crate::atomic::atomic_add_f64_block`].
    unsafe fn atomic_add_block(ptr: *mut Self, value: Self);
    /// [`crate::warp::shfl_idx_u32`] for this type.
    fn shfl_idx(self, src_lane: u32) -> Self;
    /// [`crate::warp::shfl_down_u32`] for this type.
    fn shfl_down(self, delta: u32) -> Self;
    /// [`crate::warp::shfl_xor_u32`] for this type.
    fn shfl_xor(self, mask: u32) -> Self;
}

macro_rules! impl_real {
    ($t:ty, $name:literal, $fma:ident, $sqrt:ident, $add:ident, $add_global:ident, $add_block:ident,
     $idx:ident, $down:ident, $xor:ident, $bits:ty, $rsqrt:literal, $reg:ident, $newton:literal) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const EPSILON: Self = <$t>::EPSILON;
            const NAN: Self = <$t>::NAN;
            const BYTES: usize = core::mem::size_of::<$t>();
            const NAME: &'static str = $name;

            #[inline(always)]
            fn from_f64(value: f64) -> Self {
                value as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    core::intrinsics::$sqrt(self)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    <$t>::sqrt(self)
                }
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                {
                    core::intrinsics::$fma(self, a, b)
                }
                #[cfg(not(target_arch = "nvptx64"))]
                {
                    <$t>::mul_add(self, a, b)
                }
            }
            #[inline(always)]
            fn rsqrt_fast(self) -> Self {
                #[cfg(target_arch = "nvptx64")]
                let mut y: $t = {
                    let y: $t;
                    // SAFETY: an arithmetic instruction.
                    unsafe { core::arch::asm!($rsqrt, out($reg) y, in($reg) self, options(pure, nomem, nostack)) };
                    y
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let mut y: $t = 1.0 / <$t>::sqrt(self);
                // Newton: y <- y (3 - x y^2) / 2.
                let half_x = 0.5 * self;
                for _ in 0..$newton {
                    let e = (-half_x * y).mul_add(y, 1.5);
                    y *= e;
                }
                y
            }
            #[inline(always)]
            unsafe fn atomic_add(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { crate::atomic::$add(ptr, value) }
            }
            #[inline(always)]
            unsafe fn atomic_add_global(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { crate::atomic::$add_global(ptr, value) }
            }
            #[inline(always)]
            unsafe fn atomic_add_block(ptr: *mut Self, value: Self) {
                // SAFETY: forwarded from the caller.
                unsafe { crate::atomic::$add_block(ptr, value) }
            }
            #[inline(always)]
            fn shfl_idx(self, src_lane: u32) -> Self {
                <$t>::from_bits(crate::warp::$idx(self.to_bits(), src_lane))
            }
            #[inline(always)]
            fn shfl_down(self, delta: u32) -> Self {
                <$t>::from_bits(crate::warp::$down(self.to_bits(), delta))
            }
            #[inline(always)]
            fn shfl_xor(self, mask: u32) -> Self {
                <$t>::from_bits(crate::warp::$xor(self.to_bits(), mask))
            }
        }
    };
}

impl_real!(
    f64,
    "f64",
    fmaf64,
    sqrtf64,
    atomic_add_f64,
    atomic_add_global_f64,
    atomic_add_f64_block,
    shfl_idx_u64,
    shfl_down_u64,
    shfl_xor_u64,
    u64,
    "rsqrt.approx.ftz.f64 {0}, {1};",
    reg64,
    2
);
impl_real!(
    f32,
    "f32",
    fmaf32,
    sqrtf32,
    atomic_add_f32,
    atomic_add_global_f32,
    atomic_add_f32_block,
    shfl_idx_u32,
    shfl_down_u32,
    shfl_xor_u32,
    u32,
    "rsqrt.approx.ftz.f32 {0}, {1};",
    reg32,
    1
);
