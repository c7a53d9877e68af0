//! Full inverse of diagonally dominant tridiagonal matrices (first paper): input checks,
//! CPU baselines, and the entry point that dispatches to the GPU.
//!
//! `A` has diagonal `a`, sub-diagonal `b` (`A[i+1][i] = b[i]`) and super-diagonal `c`
//! (`A[i][i+1] = c[i]`); the inverse is dense, `n x n`, column-major. The recursion is
//! described in `blocktri_device::tridiag`.

use crate::error::{Error, Result, zeroed_vec};
use crate::scalar::{Scalar, cast, wide};
use blocktri_device::tridiag::{junction, leaf_inverse, top_height};
use blocktri_prims::Real;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// A batch of `n x n` tridiagonal matrices of one size.
///
/// ```
/// use blocktri::tridiag::Tridiagonal;
/// let t = Tridiagonal::new(vec![4.0, 4.0, 4.0], vec![1.0, 1.0], vec![-1.0, 2.0]).unwrap();
/// assert_eq!(t.n(), 3);
/// assert_eq!(t.to_dense(0)[(1, 0)], 1.0); // b[0]
/// assert_eq!(t.to_dense(0)[(1, 2)], 2.0); // c[1]
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Tridiagonal<T> {
    n: usize,
    batch: usize,
    a: Vec<T>,
    b: Vec<T>,
    c: Vec<T>,
}

impl<T: Scalar> Tridiagonal<T> {
    /// One matrix: `a` (`n`), `b` and `c` (`n - 1` each).
    pub fn new(a: Vec<T>, b: Vec<T>, c: Vec<T>) -> Result<Self> {
        let n = a.len();
        Self::batch(n, a, b, c)
    }

    /// `batch = a.len() / n` matrices, stored one after another.
    pub fn batch(n: usize, a: Vec<T>, b: Vec<T>, c: Vec<T>) -> Result<Self> {
        if n == 0 || a.is_empty() || !a.len().is_multiple_of(n) {
            return Err(Error::Shape(format!("diagonal of length {} is not a positive multiple of n = {n}", a.len())));
        }
        let batch = a.len() / n;
        if b.len() != batch * (n - 1) || c.len() != batch * (n - 1) {
            return Err(Error::Shape(format!(
                "{batch} matrices of size {n} need sub- and super-diagonals of length {} each, got {} and {}",
                batch * (n - 1),
                b.len(),
                c.len()
            )));
        }
        Ok(Tridiagonal { n, batch, a, b, c })
    }

    /// Random strictly row diagonally dominant matrices: off-diagonals uniform in
    /// `(-1, 1)` (`c = b` shifted when `symmetric`), `|a_i| = |b| + |c| + margin` with a random
    /// sign, `margin` uniform in `(0.5, 1.5)`.
    pub fn random_dominant(n: usize, batch: usize, symmetric: bool, seed: u64) -> Result<Self> {
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let m = n.saturating_sub(1);
        let b: Vec<f64> = (0..batch * m).map(|_| r.random_range(-1.0..1.0)).collect();
        let c: Vec<f64> = if symmetric { b.clone() } else { (0..batch * m).map(|_| r.random_range(-1.0..1.0)).collect() };
        let mut a = Vec::with_capacity(batch * n);
        for k in 0..batch {
            for i in 0..n {
                let lo = if i > 0 { b[k * m + i - 1].abs() } else { 0.0 };
                let up = if i + 1 < n { c[k * m + i].abs() } else { 0.0 };
                let sign = if r.random_bool(0.5) { 1.0 } else { -1.0 };
                a.push(sign * (lo + up + r.random_range(0.5..1.5)));
            }
        }
        Self::batch(n, a.into_iter().map(cast).collect(), b.into_iter().map(cast).collect(), c.into_iter().map(cast).collect())
    }

    /// Matrix size.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Number of matrices.
    pub fn batch_size(&self) -> usize {
        self.batch
    }
    /// All diagonals.
    pub fn a(&self) -> &[T] {
        &self.a
    }
    /// All sub-diagonals.
    pub fn b(&self) -> &[T] {
        &self.b
    }
    /// All super-diagonals.
    pub fn c(&self) -> &[T] {
        &self.c
    }

    /// `(a, b, c)` of matrix `k`.
    pub fn matrix(&self, k: usize) -> (&[T], &[T], &[T]) {
        let (n, m) = (self.n, self.n - 1);
        (&self.a[k * n..(k + 1) * n], &self.b[k * m..(k + 1) * m], &self.c[k * m..(k + 1) * m])
    }

    /// Matrix `k` as a dense `f64` matrix.
    pub fn to_dense(&self, k: usize) -> nalgebra::DMatrix<f64> {
        let (a, b, c) = self.matrix(k);
        let n = self.n;
        nalgebra::DMatrix::from_fn(n, n, |i, j| {
            if i == j {
                wide(a[i])
            } else if i == j + 1 {
                wide(b[j])
            } else if j == i + 1 {
                wide(c[i])
            } else {
                0.0
            }
        })
    }

    /// Checks finiteness and, unless waived, row diagonal dominance
    /// `|a_i| >= |b_{i-1}| + |c_i|`; names the first offending matrix and row.
    pub fn validate(&self, check_dominance: bool) -> Result<()> {
        for (what, v) in [("diagonal", &self.a), ("sub-diagonal", &self.b), ("super-diagonal", &self.c)] {
            if let Some(p) = v.iter().position(|x| !x.is_finite()) {
                let len = if what == "diagonal" { self.n } else { self.n - 1 };
                return Err(Error::NonFinite { what: "tridiagonal matrix entry", system: p / len.max(1), block: p % len.max(1) });
            }
        }
        if check_dominance {
            for k in 0..self.batch {
                let (a, b, c) = self.matrix(k);
                for i in 0..self.n {
                    let off = if i > 0 { wide(b[i - 1]).abs() } else { 0.0 } + if i + 1 < self.n { wide(c[i]).abs() } else { 0.0 };
                    let diag = wide(a[i]).abs();
                    if diag < off {
                        return Err(Error::NotDiagonallyDominant { matrix: k, row: i, diag, off });
                    }
                }
            }
        }
        Ok(())
    }

    /// The same matrices in another precision.
    pub fn cast<U: Scalar>(&self) -> Tridiagonal<U> {
        let conv = |v: &[T]| v.iter().map(|&x| cast::<U>(wide(x))).collect();
        Tridiagonal { n: self.n, batch: self.batch, a: conv(&self.a), b: conv(&self.b), c: conv(&self.c) }
    }
}

/// Dense inverses of a batch, column-major, one after another.
#[derive(Clone, Debug, PartialEq)]
pub struct Inverse<T> {
    n: usize,
    data: Vec<T>,
}

impl<T: Scalar> Inverse<T> {
    /// Wraps `batch * n * n` values.
    pub fn from_vec(n: usize, data: Vec<T>) -> Result<Self> {
        if n == 0 || !data.len().is_multiple_of(n * n) {
            return Err(Error::Shape(format!("{} values are not a whole number of {n}x{n} matrices", data.len())));
        }
        Ok(Inverse { n, data })
    }
    /// Matrix size.
    pub fn n(&self) -> usize {
        self.n
    }
    /// Number of inverses.
    pub fn batch_size(&self) -> usize {
        self.data.len() / (self.n * self.n)
    }
    /// Inverse `k`, column-major.
    pub fn matrix(&self, k: usize) -> &[T] {
        let nn = self.n * self.n;
        &self.data[k * nn..(k + 1) * nn]
    }
    /// All values.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }
    /// Inverse `k` as a dense `f64` matrix.
    pub fn to_dense(&self, k: usize) -> nalgebra::DMatrix<f64> {
        nalgebra::DMatrix::from_iterator(self.n, self.n, self.matrix(k).iter().map(|&v| wide(v)))
    }
    /// Consumes into the values.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }
}

/// `||A X - I||_F / (||A||_F ||X||_F)`, worst over the batch, in `f64`.
pub fn inverse_error<T: Scalar>(t: &Tridiagonal<T>, x: &Inverse<T>) -> f64 {
    let n = t.n;
    (0..t.batch)
        .map(|k| {
            let (a, b, c) = t.matrix(k);
            let xk = x.matrix(k);
            let (mut res, mut na, mut nx) = (0.0, 0.0, 0.0);
            for i in 0..n {
                na += wide(a[i]).powi(2) + if i + 1 < n { wide(b[i]).powi(2) + wide(c[i]).powi(2) } else { 0.0 };
            }
            for j in 0..n {
                let col = &xk[j * n..(j + 1) * n];
                for i in 0..n {
                    let mut v = wide(a[i]) * wide(col[i]);
                    if i > 0 {
                        v += wide(b[i - 1]) * wide(col[i - 1]);
                    }
                    if i + 1 < n {
                        v += wide(c[i]) * wide(col[i + 1]);
                    }
                    let target = if i == j { 1.0 } else { 0.0 };
                    res += (v - target).powi(2);
                    nx += wide(col[i]).powi(2);
                }
            }
            res.sqrt() / (na.sqrt() * nx.sqrt()).max(f64::MIN_POSITIVE)
        })
        .fold(0.0, f64::max)
}

/// How to compute the inverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// CPU: LU of `A` (Thomas, no pivoting) then `n` solves with the unit vectors; `O(n^2)`,
    /// the cross-check.
    Direct,
    /// CPU, one thread: the Sherman–Morrison recursion (boundary vectors, then every entry).
    Sequential,
    /// CPU, rayon: the same recursion, columns of the assembly in parallel.
    Threaded,
    /// GPU: boundary-vector recursion, then one write of every entry.
    GpuFused,
    /// GPU: the paper's scheme, dense in-place merges, one launch per stage.
    GpuStagewise,
}

impl std::str::FromStr for Method {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "direct" => Method::Direct,
            "sequential" => Method::Sequential,
            "threaded" => Method::Threaded,
            "gpu" | "fused" | "gpu-fused" => Method::GpuFused,
            "stagewise" | "gpu-stagewise" => Method::GpuStagewise,
            _ => return Err(Error::Shape(format!("unknown method {s:?} (direct, sequential, threaded, fused, stagewise)"))),
        })
    }
}

/// Inverts every matrix of `t` with `method`. Validates first (finite values; diagonal
/// dominance unless `check_dominance` is false, for callers who know their matrix is
/// safely invertible by this recursion). The GPU methods share one
/// [`crate::cuda::GpuTridiagInverse`] per process, so that calls after the first do not
/// pin its host panels again (it keeps them, up to ~100 MB of page-locked memory, until
/// the process ends); use a `GpuTridiagInverse` of your own to control that.
///
/// ```
/// use blocktri::tridiag::{invert, inverse_error, Method, Tridiagonal};
/// let t = Tridiagonal::<f64>::random_dominant(100, 2, false, 1).unwrap();
/// let x = invert(&t, Method::Sequential, true).unwrap();
/// assert!(inverse_error(&t, &x) < 1e-14);
/// ```
pub fn invert<T: Scalar>(t: &Tridiagonal<T>, method: Method, check_dominance: bool) -> Result<Inverse<T>> {
    t.validate(check_dominance)?;
    match method {
        Method::Direct => direct(t),
        Method::Sequential => recursion(t, false),
        Method::Threaded => recursion(t, true),
        Method::GpuFused | Method::GpuStagewise => {
            let stagewise = method == Method::GpuStagewise;
            with_shared_inverter(|gpu| gpu.invert(t, stagewise, check_dominance))
        }
    }
}

/// Runs `work` on the process's shared GPU inverter, created by the first call: later
/// calls reuse its streams and page-locked host panels (pinning them costs ~50 ms on the
/// H100 machine, `docs/perf-notes.md` entry 39). A call that finds it busy (another
/// thread inverting) uses a fresh one instead of waiting.
fn with_shared_inverter<R>(work: impl FnOnce(&mut crate::cuda::GpuTridiagInverse) -> Result<R>) -> Result<R> {
    use std::sync::{Mutex, TryLockError};
    static SHARED: Mutex<Option<crate::cuda::GpuTridiagInverse>> = Mutex::new(None);
    let mut slot = match SHARED.try_lock() {
        Ok(slot) => slot,
        // A panic inside an earlier call: start over with a new inverter.
        Err(TryLockError::Poisoned(poisoned)) => {
            let mut slot = poisoned.into_inner();
            *slot = None;
            SHARED.clear_poison();
            slot
        }
        Err(TryLockError::WouldBlock) => return work(&mut crate::cuda::GpuTridiagInverse::new()?),
    };
    if slot.is_none() {
        *slot = Some(crate::cuda::GpuTridiagInverse::new()?);
    }
    work(slot.as_mut().expect("created above"))
}

fn singular(matrix: usize, row: usize, merge: bool) -> Error {
    Error::SingularPivot { matrix, row, stage: if merge { "Sherman-Morrison merge" } else { "2x2 inversion" } }
}

/// Thomas LU without pivoting, then the unit-vector solves.
fn direct<T: Scalar>(t: &Tridiagonal<T>) -> Result<Inverse<T>> {
    let n = t.n;
    let mut out = zeroed_vec(t.batch.checked_mul(n).and_then(|l| l.checked_mul(n)))?;
    for k in 0..t.batch {
        let (a, b, c) = t.matrix(k);
        // A = L U, L unit lower with multipliers l, U upper with diagonal u and c.
        let mut u = vec![0.0f64; n];
        let mut l = vec![0.0f64; n];
        u[0] = wide(a[0]);
        for i in 1..n {
            if u[i - 1] == 0.0 {
                return Err(singular(k, i - 1, false));
            }
            l[i] = wide(b[i - 1]) / u[i - 1];
            u[i] = wide(a[i]) - l[i] * wide(c[i - 1]);
        }
        if u[n - 1] == 0.0 {
            return Err(singular(k, n - 1, false));
        }
        let col_out = &mut out[k * n * n..(k + 1) * n * n];
        col_out.par_chunks_mut(n).enumerate().for_each(|(j, col)| {
            let mut y = vec![0.0f64; n];
            for i in j..n {
                y[i] = if i == j { 1.0 } else { -l[i] * y[i - 1] };
            }
            let mut x = vec![0.0f64; n];
            for i in (0..n).rev() {
                let next = if i + 1 < n { wide(c[i]) * x[i + 1] } else { 0.0 };
                x[i] = (y[i] - next) / u[i];
            }
            for i in 0..n {
                col[i] = cast(x[i]);
            }
        });
    }
    Inverse::from_vec(n, out)
}

/// Per height `h`: `U_h`, `V_h`; plus the leaf columns (first and last column of each
/// leaf inverse). The same recursion as `blocktri_device::tridiag::fused`.
struct Boundaries<T> {
    leaf_first: Vec<T>,
    leaf_last: Vec<T>,
    u: Vec<Vec<T>>,
    v: Vec<Vec<T>>,
}

fn boundaries<T: Scalar>(a: &[T], b: &[T], c: &[T], k: usize) -> Result<Boundaries<T>> {
    let n = a.len();
    let top = top_height(n as u32);
    let (mut fc, mut lc, mut fr, mut lr) = (vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n]);
    for q in 0..n.div_ceil(2) {
        let i = 2 * q;
        // SAFETY: slices of the documented lengths; 2q < n.
        let Some([w00, w01, w10, w11]) = (unsafe { leaf_inverse(a.as_ptr(), b.as_ptr(), c.as_ptr(), n, q) }) else {
            return Err(singular(k, i, false));
        };
        if i + 1 < n {
            (fc[i], lc[i], fr[i], lr[i]) = (w00, w01, w00, w10);
            (fc[i + 1], lc[i + 1], fr[i + 1], lr[i + 1]) = (w10, w11, w01, w11);
        } else {
            (fc[i], lc[i], fr[i], lr[i]) = (w00, w00, w00, w00);
        }
    }
    let (leaf_first, leaf_last) = (fc.clone(), lc.clone());
    let mut u = vec![Vec::new(); top as usize + 1];
    let mut v = vec![Vec::new(); top as usize + 1];
    for h in 2..=top {
        let (mut nfc, mut nlc, mut nfr, mut nlr) = (fc.clone(), lc.clone(), fr.clone(), lr.clone());
        let (mut uh, mut vh) = (vec![T::ZERO; n], vec![T::ZERO; n]);
        let mut lo = 0u32;
        while (lo as usize) < n {
            if let Some((lo, mid, hi)) = junction(lo, h, n as u32) {
                let (m, last) = ((mid - 1) as usize, (hi - 1) as usize);
                let (ct, bt) = (c[m], b[m]);
                let denom = T::ONE + ct * lc[m] + bt * fc[mid as usize];
                if !(denom != T::ZERO && Real::is_finite(denom)) {
                    return Err(singular(k, mid as usize, true));
                }
                let alpha = T::ONE / denom;
                let mid = mid as usize;
                let zu = |x: usize| if x < mid { ct * lc[x] } else { bt * fc[x] };
                let vz = |x: usize| if x < mid { lr[x] } else { fr[x] };
                let (zu_lo, zu_last, vz_lo, vz_last) = (zu(lo as usize), zu(last), vz(lo as usize), vz(last));
                for i in lo as usize..=last {
                    let left = i < mid;
                    let (zi, vi) = (alpha * zu(i), vz(i));
                    uh[i] = zi;
                    vh[i] = vi;
                    nfc[i] = if left { fc[i] } else { T::ZERO } - zi * vz_lo;
                    nlc[i] = if left { T::ZERO } else { lc[i] } - zi * vz_last;
                    nfr[i] = if left { fr[i] } else { T::ZERO } - alpha * zu_lo * vi;
                    nlr[i] = if left { T::ZERO } else { lr[i] } - alpha * zu_last * vi;
                }
            }
            lo += 1 << h;
        }
        (fc, lc, fr, lr) = (nfc, nlc, nfr, nlr);
        u[h as usize] = uh;
        v[h as usize] = vh;
    }
    Ok(Boundaries { leaf_first, leaf_last, u, v })
}

/// Column `j` of the inverse from the boundary data.
fn assemble_column<T: Scalar>(bd: &Boundaries<T>, j: usize, col: &mut [T]) {
    let top = bd.u.len() as u32 - 1;
    for (i, out) in col.iter_mut().enumerate() {
        let x = (i ^ j) as u32;
        let h0 = if x == 0 { 0 } else { 32 - x.leading_zeros() };
        let mut acc = if h0 <= 1 { if j.is_multiple_of(2) { bd.leaf_first[i] } else { bd.leaf_last[i] } } else { T::ZERO };
        for h in h0.max(2)..=top {
            acc -= bd.u[h as usize][i] * bd.v[h as usize][j];
        }
        *out = acc;
    }
}

fn recursion<T: Scalar>(t: &Tridiagonal<T>, threaded: bool) -> Result<Inverse<T>> {
    let n = t.n;
    let mut out = zeroed_vec(t.batch.checked_mul(n).and_then(|l| l.checked_mul(n)))?;
    for (k, dst) in out.chunks_mut(n * n).enumerate() {
        let (a, b, c) = t.matrix(k);
        let bd = boundaries(a, b, c, k)?;
        if threaded {
            dst.par_chunks_mut(n).enumerate().for_each(|(j, col)| assemble_column(&bd, j, col));
        } else {
            dst.chunks_mut(n).enumerate().for_each(|(j, col)| assemble_column(&bd, j, col));
        }
    }
    Inverse::from_vec(n, out)
}
