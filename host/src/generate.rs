//! Seeded problem generators: the papers' synthetic SPD sets and the Kalman-smoothing
//! system of the second paper (section 4.3).

use crate::error::{Result, shape_err};
use crate::matrix::{BlockTridiag, BlockVec, Shape};
use crate::scalar::{Scalar, cast};
use nalgebra::{DMatrix, DVector};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

fn uniform_matrix(rng: &mut ChaCha8Rng, rows: usize, cols: usize) -> DMatrix<f64> {
    DMatrix::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
}

/// A random orthogonal matrix (QR of a Gaussian matrix, signs fixed).
fn random_orthogonal(rng: &mut ChaCha8Rng, n: usize) -> DMatrix<f64> {
    let g = DMatrix::from_fn(n, n, |_, _| rng.sample::<f64, _>(StandardNormal));
    let qr = g.qr();
    let (mut q, r) = (qr.q(), qr.r());
    for j in 0..n {
        if r[(j, j)] < 0.0 {
            q.column_mut(j).neg_mut();
        }
    }
    q
}

/// One system's blocks, being filled by a generator.
struct SystemBlocks<'a, T> {
    diag: &'a mut [T],
    sub: &'a mut [T],
    n: usize,
    ld: usize,
}

impl<T: Scalar> SystemBlocks<'_, T> {
    /// Stores `D_i`, averaging the two triangles so that the block is exactly symmetric.
    fn set_diag(&mut self, i: usize, d: &DMatrix<f64>) {
        let (n, ld) = (self.n, self.ld);
        let blk = &mut self.diag[i * ld * n..(i + 1) * ld * n];
        for c in 0..n {
            for r in 0..n {
                blk[c * ld + r] = cast(0.5 * (d[(r, c)] + d[(c, r)]));
            }
        }
    }

    /// Stores `C_i = A[i+1, i]`.
    fn set_sub(&mut self, i: usize, b: &DMatrix<f64>) {
        let (n, ld) = (self.n, self.ld);
        let blk = &mut self.sub[i * ld * n..(i + 1) * ld * n];
        for c in 0..n {
            for r in 0..n {
                blk[c * ld + r] = cast(b[(r, c)]);
            }
        }
    }
}

/// A zero batch whose systems `fill` writes in parallel, system `s` from its own random
/// stream `s` of `seed` (so a system does not depend on the batch size or thread count).
fn batch_from_systems<T: Scalar>(
    shape: Shape,
    seed: u64,
    fill: impl Fn(&mut ChaCha8Rng, SystemBlocks<'_, T>) + Sync,
) -> Result<BlockTridiag<T>> {
    let mut a = BlockTridiag::zeros_padded(shape, shape.block)?;
    let (n, ld, nb) = (shape.block, a.ld(), shape.nblocks);
    let (diag, sub) = a.parts_mut();
    // With N = 1 there are no sub-diagonal blocks: every system gets an empty slice.
    let subs: Vec<&mut [T]> =
        if nb > 1 { sub.chunks_mut((nb - 1) * ld * n).collect() } else { (0..shape.batch).map(|_| &mut [][..]).collect() };
    diag.par_chunks_mut(nb * ld * n).zip(subs).enumerate().for_each(|(s, (diag, sub))| {
        let mut r = rng(seed);
        r.set_stream(s as u64);
        fill(&mut r, SystemBlocks { diag, sub, n, ld });
    });
    Ok(a)
}

/// A well-conditioned random SPD batch (the papers' synthetic set): sub-diagonal entries
/// uniform in `(-1, 1)`, diagonal blocks a symmetric uniform matrix plus `(3n + 1) I`, so
/// that every row is strictly diagonally dominant (condition number below about `6n`).
///
/// ```
/// let a = blocktri::generate::random_spd::<f64>(2, 10, 4, 7).unwrap();
/// assert_eq!(a.shape().batch, 2);
/// ```
pub fn random_spd<T: Scalar>(batch: usize, nblocks: usize, block: usize, seed: u64) -> Result<BlockTridiag<T>> {
    let shape = Shape::new(batch, nblocks, block)?;
    let shift = 3.0 * block as f64 + 1.0;
    batch_from_systems(shape, seed, |r, mut blocks| {
        for i in 0..nblocks {
            let m = uniform_matrix(r, block, block);
            blocks.set_diag(i, &((&m + m.transpose()) * 0.5 + DMatrix::identity(block, block) * shift));
        }
        for i in 0..nblocks - 1 {
            blocks.set_sub(i, &uniform_matrix(r, block, block));
        }
    })
}

/// A random SPD batch with 2-norm condition number `kappa >= 1` (exact up to rounding):
/// `A = Q^T (T (x) W + mu I) Q` with `T` the path-graph Laplacian of the `N` blocks
/// (singular, so `mu` sets the smallest eigenvalue), `W` SPD with eigenvalues spread over
/// `[1, 10]`, `mu = lambda_max / (kappa - 1)` and `Q` a random block-diagonal orthogonal
/// matrix (which keeps the block-tridiagonal structure and the spectrum). For `N = 1`
/// the single block has eigenvalues geometrically spaced from 1 to `kappa`.
pub fn random_spd_conditioned<T: Scalar>(batch: usize, nblocks: usize, block: usize, kappa: f64, seed: u64) -> Result<BlockTridiag<T>> {
    if !(kappa >= 1.0 && kappa.is_finite()) {
        shape_err!("condition number must be finite and >= 1, got {kappa}");
    }
    let shape = Shape::new(batch, nblocks, block)?;
    let n = block;
    let geom = |lo: f64, hi: f64, k: usize| if n == 1 { hi } else { lo * (hi / lo).powf(k as f64 / (n - 1) as f64) };
    batch_from_systems(shape, seed, |r, mut blocks| {
        let u = random_orthogonal(r, n);
        if nblocks == 1 {
            let d = DMatrix::from_diagonal(&DVector::from_fn(n, |k, _| geom(1.0, kappa, k)));
            blocks.set_diag(0, &(&u * d * u.transpose()));
            return;
        }
        let w = &u * DMatrix::from_diagonal(&DVector::from_fn(n, |k, _| geom(1.0, 10.0, k))) * u.transpose();
        let lap_max = 2.0 + 2.0 * (std::f64::consts::PI / nblocks as f64).cos();
        let mu = if kappa > 1.0 { lap_max * 10.0 / (kappa - 1.0) } else { 1e300 };
        let eye = DMatrix::<f64>::identity(n, n);
        // Q_i is drawn as block i is reached; C_{i-1} needs Q_i and Q_{i-1}.
        let mut previous: Option<DMatrix<f64>> = None;
        for i in 0..nblocks {
            let q = random_orthogonal(r, n);
            let degree = if i == 0 || i + 1 == nblocks { 1.0 } else { 2.0 };
            let d = if kappa > 1.0 { &w * degree + &eye * mu } else { eye.clone() };
            blocks.set_diag(i, &(q.transpose() * d * &q));
            if let Some(p) = &previous {
                let c = if kappa > 1.0 { -(q.transpose() * &w * p) } else { DMatrix::zeros(n, n) };
                blocks.set_sub(i - 1, &c);
            }
            previous = Some(q);
        }
    })
}

/// A random SPD batch with an arrowhead of width `width` ([`crate::arrow`]): the chain of
/// [`random_spd`] (whose smallest eigenvalue is above 1, by Gershgorin), border entries
/// uniform in `(-1, 1) / sqrt(N n)` (so `||B||_2^2 <= a`), and a tip `(a + 1) I` plus a
/// symmetric perturbation of norm below 1/2, so that the Schur complement
/// `C - B T^-1 B^T` has eigenvalues above 1/2.
///
/// ```
/// let m = blocktri::generate::random_spd_arrow::<f64>(1, 10, 4, 2, 7).unwrap();
/// assert_eq!((m.width(), m.to_dense(0).nrows()), (2, 42));
/// ```
pub fn random_spd_arrow<T: Scalar>(
    batch: usize,
    nblocks: usize,
    block: usize,
    width: usize,
    seed: u64,
) -> Result<crate::arrow::BlockTridiagArrow<T>> {
    let chain = random_spd::<T>(batch, nblocks, block, seed)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xa770_4ead);
    let scale = 1.0 / ((nblocks * block) as f64).sqrt();
    let arrow = (0..batch * nblocks * width * block).map(|_| cast(rng.random_range(-1.0..1.0) * scale)).collect();
    let mut tip = Vec::with_capacity(batch * width * width);
    for _ in 0..batch {
        let m = uniform_matrix(&mut rng, width, width) / (width.max(1) as f64);
        let c = (&m + m.transpose()) * 0.25 + DMatrix::identity(width, width) * (width as f64 + 1.0);
        tip.extend(c.iter().map(|&v| cast::<T>(v)));
    }
    crate::arrow::BlockTridiagArrow::new(chain, width, arrow, tip)
}

/// Random right-hand sides with entries uniform in `(-1, 1)`.
pub fn random_rhs<T: Scalar>(shape: Shape, ncols: usize, seed: u64) -> Result<BlockVec<T>> {
    let mut r = rng(seed);
    let len = shape.batch * shape.dim() * ncols;
    BlockVec::from_vec(shape, ncols, (0..len).map(|_| cast(r.random_range(-1.0..1.0))).collect())
}

/// A linear-Gaussian state-space model `x_k = G x_{k-1} + w_k`, `z_k = H x_k + v_k`,
/// `w ~ N(0, Q)`, `v ~ N(0, R)`, with known `x_0` (time-invariant matrices).
#[derive(Clone, Debug)]
pub struct KalmanModel {
    /// State transition (`n x n`).
    pub g: DMatrix<f64>,
    /// Observation (`m x n`).
    pub h: DMatrix<f64>,
    /// Process noise covariance (`n x n`, SPD).
    pub q: DMatrix<f64>,
    /// Measurement noise covariance (`m x m`, SPD).
    pub r: DMatrix<f64>,
    /// Known initial state.
    pub x0: DVector<f64>,
}

impl KalmanModel {
    /// The MAP smoothing system `(H^T R^-1 H + G^T Q^-1 G) x = H^T R^-1 z + G^T Q^-1 zeta`
    /// for measurements `z_1..z_N` (second paper, eq. 4.4):
    /// `A_kk = Q^-1 + G^T Q^-1 G [k < N] + H^T R^-1 H`, `A_{k+1,k} = -Q^-1 G`,
    /// `b_k = H^T R^-1 z_k`, plus `Q^-1 G x_0` for `k = 1`.
    pub fn smoothing_system<T: Scalar>(&self, z: &[DVector<f64>]) -> Result<(BlockTridiag<T>, BlockVec<T>)> {
        let (n, m, nb) = (self.g.nrows(), self.h.nrows(), z.len());
        if self.g.ncols() != n || self.h.ncols() != n || self.q.shape() != (n, n) || self.r.shape() != (m, m) || self.x0.len() != n {
            shape_err!("inconsistent Kalman model dimensions (n = {n}, m = {m})");
        }
        if let Some(k) = z.iter().position(|zk| zk.len() != m) {
            shape_err!("measurement {k} has length {}, expected {m}", z[k].len());
        }
        let qi = self.q.clone().cholesky().map(|c| c.inverse());
        let ri = self.r.clone().cholesky().map(|c| c.inverse());
        let (Some(qi), Some(ri)) = (qi, ri) else {
            shape_err!("Q and R must be symmetric positive definite");
        };
        let shape = Shape::new(1, nb, n)?;
        let hrh = self.h.transpose() * &ri * &self.h;
        let gqg = self.g.transpose() * &qi * &self.g;
        let coupling = -(&qi * &self.g);
        let a = batch_from_systems(shape, 0, |_, mut blocks| {
            for k in 0..nb {
                blocks.set_diag(k, &(if k + 1 < nb { &qi + &gqg + &hrh } else { &qi + &hrh }));
            }
            for k in 0..nb.saturating_sub(1) {
                blocks.set_sub(k, &coupling);
            }
        })?;
        let mut b = BlockVec::zeros(shape, 1)?;
        let prior = &qi * &self.g * &self.x0;
        for (k, zk) in z.iter().enumerate() {
            let mut bk = self.h.transpose() * &ri * zk;
            if k == 0 {
                bk += &prior;
            }
            for r in 0..n {
                b.set(0, k * n + r, 0, cast(bk[r]));
            }
        }
        Ok((a, b))
    }

    /// The Rauch–Tung–Striebel smoother on the CPU in `f64` (information-form filter, so
    /// only `n x n` inverses even when `m > n`): the reference for the block-tridiagonal
    /// solution. Its means solve [`Self::smoothing_system`], its covariances are the
    /// diagonal blocks of that system's inverse and its lag-one cross-covariances
    /// `Cov(x_{k+1}, x_k)` the sub-diagonal blocks.
    ///
    /// ```
    /// let model = blocktri::generate::kalman_model(4, 6, 1).unwrap();
    /// let (_, z) = model.simulate(20, 2);
    /// let rts = model.rts_smoother(&z).unwrap();
    /// assert_eq!((rts.means.len(), rts.covariances.len(), rts.cross_covariances.len()), (20, 20, 19));
    /// ```
    pub fn rts_smoother(&self, z: &[DVector<f64>]) -> Result<RtsSmoothed> {
        let n = self.g.nrows();
        let inverse = |m: &DMatrix<f64>, what: &str| -> Result<DMatrix<f64>> {
            match m.clone().cholesky() {
                Some(c) => Ok(c.inverse()),
                None => shape_err!("RTS smoother: {what} is not positive definite"),
            }
        };
        let (ri, nb) = (inverse(&self.r, "R")?, z.len());
        let hrh = self.h.transpose() * &ri * &self.h;
        // Forward: predicted (mean, covariance) and filtered ones.
        let (mut predicted, mut filtered) = (Vec::with_capacity(nb), Vec::with_capacity(nb));
        let (mut mean, mut cov) = (self.x0.clone(), DMatrix::<f64>::zeros(n, n));
        for zk in z {
            let (mp, pp) = (&self.g * &mean, &self.g * &cov * self.g.transpose() + &self.q);
            let ppi = inverse(&pp, "a predicted covariance")?;
            cov = inverse(&(&ppi + &hrh), "a filtered information matrix")?;
            mean = &cov * (&ppi * &mp + self.h.transpose() * &ri * zk);
            predicted.push((mp, pp, ppi));
            filtered.push((mean.clone(), cov.clone()));
        }
        // Backward: smoothed means, covariances and lag-one cross-covariances.
        let mut out =
            RtsSmoothed { means: vec![DVector::zeros(0); nb], covariances: vec![DMatrix::zeros(0, 0); nb], cross_covariances: Vec::new() };
        let (mut ms, mut ps) = filtered[nb - 1].clone();
        out.means[nb - 1] = ms.clone();
        out.covariances[nb - 1] = ps.clone();
        let mut cross = Vec::with_capacity(nb.saturating_sub(1));
        for k in (0..nb.saturating_sub(1)).rev() {
            let (mf, pf) = &filtered[k];
            let (mp, pp, ppi) = &predicted[k + 1];
            let gain = pf * self.g.transpose() * ppi;
            cross.push(&ps * gain.transpose()); // Cov(x_{k+1}, x_k)
            ms = mf + &gain * (&ms - mp);
            ps = pf + &gain * (&ps - pp) * gain.transpose();
            out.means[k] = ms.clone();
            out.covariances[k] = ps.clone();
        }
        cross.reverse();
        out.cross_covariances = cross;
        Ok(out)
    }

    /// Simulates `N` steps: `(states x_1..x_N, measurements z_1..z_N)`.
    pub fn simulate(&self, nsteps: usize, seed: u64) -> (Vec<DVector<f64>>, Vec<DVector<f64>>) {
        let mut r = rng(seed);
        let (n, m) = (self.g.nrows(), self.h.nrows());
        let lq = self.q.clone().cholesky().map(|c| c.l()).unwrap_or_else(|| DMatrix::zeros(n, n));
        let lr = self.r.clone().cholesky().map(|c| c.l()).unwrap_or_else(|| DMatrix::zeros(m, m));
        let mut x = self.x0.clone();
        let (mut xs, mut zs) = (Vec::with_capacity(nsteps), Vec::with_capacity(nsteps));
        for _ in 0..nsteps {
            let w = DVector::from_fn(n, |_, _| r.sample::<f64, _>(StandardNormal));
            let v = DVector::from_fn(m, |_, _| r.sample::<f64, _>(StandardNormal));
            x = &self.g * &x + &lq * w;
            zs.push(&self.h * &x + &lr * v);
            xs.push(x.clone());
        }
        (xs, zs)
    }
}

/// The output of [`KalmanModel::rts_smoother`], per step `k = 1..N`.
#[derive(Clone, Debug)]
pub struct RtsSmoothed {
    /// `E[x_k | z_1..z_N]`.
    pub means: Vec<DVector<f64>>,
    /// `Cov(x_k | z_1..z_N)`.
    pub covariances: Vec<DMatrix<f64>>,
    /// `Cov(x_{k+1}, x_k | z_1..z_N)`, `N - 1` of them.
    pub cross_covariances: Vec<DMatrix<f64>>,
}

/// The neuroscience-style model of the second paper's experiment: latent dimension `n`
/// (rounded up to even) with damped 2-D rotations over `dt = 0.1`, a tall well-conditioned
/// observation matrix (`m x n`), dense SPD `Q` and a larger diagonal `R`.
pub fn kalman_model(n: usize, m: usize, seed: u64) -> Result<KalmanModel> {
    if n == 0 || m == 0 {
        shape_err!("Kalman model needs n >= 1 and m >= 1");
    }
    let mut r = rng(seed);
    let dt = 0.1;
    let mut g = DMatrix::zeros(n, n);
    for p in (0..n).step_by(2) {
        let omega: f64 = 2.0 * std::f64::consts::PI * r.random_range(0.2f64..2.0);
        let damp: f64 = (-dt * r.random_range(0.05f64..0.5)).exp();
        let (c, s) = ((omega * dt).cos() * damp, (omega * dt).sin() * damp);
        if p + 1 < n {
            g[(p, p)] = c;
            g[(p, p + 1)] = -s;
            g[(p + 1, p)] = s;
            g[(p + 1, p + 1)] = c;
        } else {
            g[(p, p)] = damp;
        }
    }
    let h = DMatrix::from_fn(m, n, |_, _| r.sample::<f64, _>(StandardNormal)) / (n as f64).sqrt();
    let a = uniform_matrix(&mut r, n, n);
    let q = (&a * a.transpose()) * (0.01 / n as f64) + DMatrix::identity(n, n) * 0.01;
    let rdiag = DMatrix::from_diagonal(&DVector::from_fn(m, |_, _| r.random_range(0.5..1.5)));
    let x0 = DVector::from_fn(n, |_, _| r.sample::<f64, _>(StandardNormal));
    Ok(KalmanModel { g, h, q, r: rdiag, x0 })
}

/// A Kalman-smoothing problem: `(A, b, true states stacked)`.
pub fn kalman_problem<T: Scalar>(n: usize, m: usize, nsteps: usize, seed: u64) -> Result<(BlockTridiag<T>, BlockVec<T>, Vec<f64>)> {
    let model = kalman_model(n, m, seed)?;
    let (xs, zs) = model.simulate(nsteps, seed ^ 0x5eed);
    let (a, b) = model.smoothing_system(&zs)?;
    Ok((a, b, xs.iter().flat_map(|x| x.iter().copied()).collect()))
}
