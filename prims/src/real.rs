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
    /// place: the hardware approximation (`rsqrt.approx.f64`/`.f32`, about 20 and 23 bits)
    /// refined by one step, [`rsqrt_cubic_step`] for `f64` and [`rsqrt_newton_step`] for
    /// `f32`. Much shorter than
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

/// One Newton step for `1 / sqrt(x)` from `y`: `y (3 - x y^2) / 2`, which about doubles
/// the correct bits (`f32`: the approximation's ~23 bits to 24). Three dependent
/// operations.
#[inline(always)]
pub fn rsqrt_newton_step<R: Real>(x: R, y: R) -> R {
    let half_x = R::from_f64(0.5) * x;
    y * (-half_x * y).mul_add(y, R::from_f64(1.5))
}

/// One third-order step for `1 / sqrt(x)` from `y`: with `e = 1 - x y^2`,
/// `y (1 - e)^(-1/2) ~ y (1 + e / 2 + 3 e^2 / 8)`, which leaves a relative error near
/// `5 e^3 / 16`: from `rsqrt.approx.f64`'s ~20 bits to beyond `f64`'s 53 in one step. Four
/// dependent operations (`x y`, `e`, `y e` beside the polynomial, the final `fma`)
/// instead of the six of two Newton steps: a pivot's reciprocal square root is on the
/// serial chain of every Cholesky column (`docs/perf-notes.md`, entry 84).
#[inline(always)]
pub fn rsqrt_cubic_step<R: Real>(x: R, y: R) -> R {
    let e = (-(x * y)).mul_add(y, R::ONE);
    let p = e.mul_add(R::from_f64(0.375), R::from_f64(0.5));
    (y * e).mul_add(p, y)
}

macro_rules! impl_real {
    ($t:ty, $name:literal, $fma:ident, $sqrt:ident, $add:ident, $add_global:ident, $add_block:ident,
     $idx:ident, $down:ident, $xor:ident, $bits:ty, $rsqrt:literal, $reg:ident, $refine:ident) => {
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
                let y: $t = {
                    let y: $t;
                    // SAFETY: an arithmetic instruction.
                    unsafe { core::arch::asm!($rsqrt, out($reg) y, in($reg) self, options(pure, nomem, nostack)) };
                    y
                };
                #[cfg(not(target_arch = "nvptx64"))]
                let y: $t = 1.0 / <$t>::sqrt(self);
                $refine(self, y)
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
    rsqrt_cubic_step
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
    rsqrt_newton_step
);

#[cfg(test)]
mod tests {
    use super::{rsqrt_cubic_step, rsqrt_newton_step};

    /// Distance in units in the last place.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    /// The third-order step turns an approximation of ~20 correct bits (the hardware's
    /// `rsqrt.approx.f64`; libdevice's `rsqrt` refines it the same way) into `f64`'s 53:
    /// within two units in the last place of `1 / x.sqrt()` (itself rounded twice), as
    /// close as the two Newton steps it replaced.
    #[test]
    fn one_cubic_step_reaches_f64_accuracy_from_20_bits() {
        let two_newton = |x: f64, y: f64| rsqrt_newton_step(x, rsqrt_newton_step(x, y));
        for rel in [2f64.powi(-20), -(2f64.powi(-20)), 2f64.powi(-21), -(2f64.powi(-23)), 0.0] {
            let (mut cubic, mut newton) = (0, 0);
            for i in 0..20_000u64 {
                // Values over 600 binades, mantissas spread by a multiplicative hash.
                let m = 1.0 + ((i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) as f64) / (1u64 << 53) as f64;
                let x = m * 2f64.powi((i % 600) as i32 - 300);
                let exact = 1.0 / x.sqrt();
                cubic = cubic.max(ulps(rsqrt_cubic_step(x, exact * (1.0 + rel)), exact));
                newton = newton.max(ulps(two_newton(x, exact * (1.0 + rel)), exact));
            }
            assert!(cubic <= 2 && cubic <= newton.max(2), "start {rel:e}: cubic {cubic} ulp, two Newton steps {newton}");
        }
        // From 14 correct bits one step is not enough: the bound is the step's, not luck.
        let x = 3.0f64;
        let exact = 1.0 / x.sqrt();
        assert!(ulps(rsqrt_cubic_step(x, exact * (1.0 + 2f64.powi(-14))), exact) > 2);
    }

    /// The `f32` step from the ~23 bits of `rsqrt.approx.f32` stays within a unit or two.
    #[test]
    fn one_newton_step_reaches_f32_accuracy_from_22_bits() {
        for i in 1..5_000u32 {
            let x = i as f32 * 0.37;
            let exact = 1.0 / (x as f64).sqrt();
            for rel in [2f64.powi(-22), -(2f64.powi(-22))] {
                let y = rsqrt_newton_step(x, (exact * (1.0 + rel)) as f32) as f64;
                assert!(((y - exact) / exact).abs() < 2.5 * f32::EPSILON as f64, "x = {x}: {y} vs {exact}");
            }
        }
    }
}
