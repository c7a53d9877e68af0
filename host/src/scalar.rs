//! [`Scalar`]: the element types the solvers accept (`f32`, `f64`).

use blocktri_prims::Real;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Element precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    /// IEEE single.
    F32,
    /// IEEE double.
    F64,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        })
    }
}

/// `f32` or `f64`: the types every solver, kernel and file format of the crate supports.
pub trait Scalar:
    Real
    + nalgebra::RealField
    + faer::traits::RealField
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + crate::cuda::Plain
    + npyz::Deserialize
    + npyz::AutoSerialize
    + std::fmt::Display
    + std::fmt::LowerExp
    + std::iter::Sum
    + sealed::Sealed
{
    /// Which precision this is.
    const PRECISION: Precision;
    /// Default relative tolerance of the symmetry check of diagonal blocks,
    /// `sqrt(epsilon)`.
    fn symmetry_tolerance() -> Self;
}

impl Scalar for f32 {
    const PRECISION: Precision = Precision::F32;
    fn symmetry_tolerance() -> Self {
        f32::EPSILON.sqrt()
    }
}

impl Scalar for f64 {
    const PRECISION: Precision = Precision::F64;
    fn symmetry_tolerance() -> Self {
        f64::EPSILON.sqrt()
    }
}

/// `T` from an `f64` (rounding). Shorthand for [`Real::from_f64`] that avoids the
/// ambiguity with nalgebra's and faer's conversion traits.
#[inline(always)]
pub fn cast<T: Scalar>(x: f64) -> T {
    <T as Real>::from_f64(x)
}

/// `x` as `f64`.
#[inline(always)]
pub fn wide<T: Scalar>(x: T) -> f64 {
    <T as Real>::to_f64(x)
}
