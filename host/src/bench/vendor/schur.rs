//! The second paper's method on vendor kernels: recursive Schur complement with
//! cuSOLVER `potrfBatched` and cuBLAS `trsmBatched`/`gemmBatched` ("Batched (NVIDIA)"),
//! and, with one segment spanning the whole system, the sequential block Cholesky on the
//! same kernels ("Seq (NVIDIA)"). Every system of a batch joins the same batched calls.
//!
//! A level with `N` blocks places separators at `seg, 2 seg + 1, ...`; the segments between
//! them (at most `seg` blocks) are factored by the batched sequential algorithm, all at
//! once; `F = A_uu^-1 A_lu` (an `n x 2n` block per interior block: left and right separator
//! columns) by batched forward and backward substitution; the separators' Schur complement
//! `S = A_ll - A_lu^T F` is again block tridiagonal and is factored the same way. A level of
//! at most `seg + 1` blocks is one segment. Separators keep their diagonal blocks in place;
//! only the new couplings get storage. The whole launch sequence is captured into a CUDA
//! graph, as this project's own solver is.

use super::super::peaks::Peaks;
use super::super::timing::time_gpu;
use super::super::{Config, Row};
use super::{Problem, VendorScalar};
use crate::cuda::{DeviceBuffer, Gpu};
use crate::error::{Error, Result};
use crate::matrix::{BlockVec, Shape};
use crate::residual::accuracy;
use cudarc::driver::{CudaStream, result};
use std::sync::Arc;

/// One batched call, with pointer arrays as offsets into the plan's pointer table.
#[derive(Clone, Copy, Debug)]
enum Op {
    Potrf {
        a: usize,
        count: usize,
        info: usize,
    },
    Trsm {
        right: bool,
        trans: bool,
        m: usize,
        n: usize,
        a: usize,
        lda: usize,
        b: usize,
        ldb: usize,
        count: usize,
    },
    Gemm {
        ta: bool,
        tb: bool,
        m: usize,
        n: usize,
        k: usize,
        alpha: f64,
        a: usize,
        lda: usize,
        b: usize,
        ldb: usize,
        beta: f64,
        c: usize,
        ldc: usize,
        count: usize,
    },
    Zero {
        addr: u64,
        bytes: usize,
    },
}

/// A level of the recursion: block addresses per system (`d[s * nb + j]`, couplings
/// `c[s * (nb - 1) + j]`) and the original block index of each position.
struct Level {
    nb: usize,
    d: Vec<u64>,
    c: Vec<u64>,
    orig: Vec<usize>,
}

#[derive(Clone, Copy)]
struct Segment {
    start: usize,
    len: usize,
    left: Option<usize>,
    right: Option<usize>,
}

struct Builder {
    n: usize,
    batch: usize,
    elem: usize,
    table: Vec<u64>,
    factor: Vec<Op>,
    solve: Vec<Op>,
    potrfs: usize,
}

impl Builder {
    fn ptrs(&mut self, v: Vec<u64>) -> usize {
        let off = self.table.len();
        self.table.extend(v);
        off
    }

    fn potrf(&mut self, a: Vec<u64>) {
        if a.is_empty() {
            return;
        }
        let count = a.len();
        let a = self.ptrs(a);
        self.factor.push(Op::Potrf { a, count, info: self.potrfs });
        self.potrfs += count;
    }

    #[allow(clippy::too_many_arguments)]
    fn trsm(&mut self, solve: bool, right: bool, trans: bool, cols: usize, a: Vec<u64>, b: Vec<u64>, ldb: usize) {
        if a.is_empty() {
            return;
        }
        let count = a.len();
        let (m, n) = if right { (self.n, self.n) } else { (self.n, cols) };
        let (a, b) = (self.ptrs(a), self.ptrs(b));
        let op = Op::Trsm { right, trans, m, n, a, lda: self.n, b, ldb, count };
        if solve { self.solve.push(op) } else { self.factor.push(op) }
    }

    #[allow(clippy::too_many_arguments)]
    fn gemm(
        &mut self,
        solve: bool,
        ta: bool,
        cols: usize,
        alpha: f64,
        a: Vec<u64>,
        b: Vec<u64>,
        ldb: usize,
        beta: f64,
        c: Vec<u64>,
        ldc: usize,
    ) {
        if a.is_empty() {
            return;
        }
        let count = a.len();
        let n = self.n;
        let (a, b, c) = (self.ptrs(a), self.ptrs(b), self.ptrs(c));
        let op = Op::Gemm { ta, tb: false, m: n, n: cols, k: n, alpha, a, lda: n, b, ldb, beta, c, ldc, count };
        if solve { self.solve.push(op) } else { self.factor.push(op) }
    }
}

/// Buffers and launch lists of one problem shape.
pub struct SchurPlan<T> {
    shape: Shape,
    stream: Arc<CudaStream>,
    blas: cudarc::cublas::CudaBlas,
    solver: cudarc::cusolver::safe::DnHandle,
    d0: DeviceBuffer<T>,
    c0: DeviceBuffer<T>,
    d: DeviceBuffer<T>,
    c: DeviceBuffer<T>,
    _f: DeviceBuffer<T>,
    _cn: DeviceBuffer<T>,
    _eye: DeviceBuffer<T>,
    _table: DeviceBuffer<u64>,
    graphs: Option<(crate::cuda::Graph, crate::cuda::Graph)>,
    info: DeviceBuffer<i32>,
    rhs: DeviceBuffer<T>,
    factor: Vec<Op>,
    solve: Vec<Op>,
}

impl<T: VendorScalar> SchurPlan<T> {
    /// Device bytes of a plan (inputs, working copies, `F`, new couplings, right-hand sides).
    pub fn required_memory(shape: Shape, k: usize) -> usize {
        let blk = shape.block * shape.block * T::BYTES;
        shape.batch * (9 * shape.nblocks * blk + shape.dim() * k * T::BYTES) + shape.batch * shape.nblocks * 200
    }

    /// Builds the plan; `segment = None` is the sequential algorithm (one segment).
    pub fn new(gpu: &Arc<Gpu>, shape: Shape, k: usize, segment: Option<usize>) -> Result<Self> {
        let stream = gpu.new_stream()?;
        let (s, nb, n) = (shape.batch, shape.nblocks, shape.block);
        let blk = n * n;
        let seg = segment.unwrap_or(nb).max(1);
        let cuda = |e: String| Error::Cuda(e);
        let blas = cudarc::cublas::CudaBlas::new(stream.clone()).map_err(|e| cuda(format!("cuBLAS: {e:?}")))?;
        let solver = cudarc::cusolver::safe::DnHandle::new(stream.clone()).map_err(|e| cuda(format!("cuSOLVER: {e:?}")))?;
        let d0 = DeviceBuffer::<T>::poisoned(&stream, s * nb * blk)?;
        let c0 = DeviceBuffer::<T>::poisoned(&stream, (s * (nb - 1) * blk).max(1))?;
        let d = DeviceBuffer::<T>::poisoned(&stream, s * nb * blk)?;
        let c = DeviceBuffer::<T>::poisoned(&stream, (s * (nb - 1) * blk).max(1))?;
        let f = DeviceBuffer::<T>::poisoned(&stream, 2 * s * (2 * nb) * blk)?;
        let cn = DeviceBuffer::<T>::poisoned(&stream, (s * nb * blk).max(1))?;
        let mut eye_host = vec![T::zero(); blk];
        for i in 0..n {
            eye_host[i * n + i] = T::one();
        }
        let eye = DeviceBuffer::from_host(&stream, &eye_host)?;
        let rhs = DeviceBuffer::<T>::poisoned(&stream, s * shape.dim() * k)?;
        let bytes = T::BYTES as u64;
        let level0 = Level {
            nb,
            d: (0..s * nb).map(|i| d.ptr().addr() + (i * blk) as u64 * bytes).collect(),
            c: (0..s * (nb - 1)).map(|i| c.ptr().addr() + (i * blk) as u64 * bytes).collect(),
            orig: (0..nb).collect(),
        };
        let mut b = Builder { n, batch: s, elem: T::BYTES, table: Vec::new(), factor: Vec::new(), solve: Vec::new(), potrfs: 0 };
        let mut alloc =
            Alloc { f: f.ptr().addr(), f_end: f.ptr().addr() + (f.len() * T::BYTES) as u64, cn: cn.ptr().addr(), eye: eye.ptr().addr() };
        let rhs_at = |sys: usize, orig: usize| rhs.ptr().addr() + ((sys * shape.dim() * k + orig * n) * T::BYTES) as u64;
        build_level(&mut b, &mut alloc, level0, seg, k, shape.dim(), &rhs_at)?;
        let table = DeviceBuffer::from_host(&stream, &b.table)?;
        let info = DeviceBuffer::<i32>::poisoned(&stream, b.potrfs.max(1))?;
        let base = table.ptr().addr();
        let fix = |ops: Vec<Op>| ops.into_iter().map(|op| resolve(op, base)).collect();
        let _ = b.batch;
        let mut plan = SchurPlan {
            shape,
            stream,
            blas,
            solver,
            d0,
            c0,
            d,
            c,
            _f: f,
            _cn: cn,
            _eye: eye,
            _table: table,
            info,
            rhs,
            factor: fix(b.factor),
            solve: fix(b.solve),
            graphs: None,
        };
        // Capture both launch sequences into graphs when the libraries allow it.
        let factor_graph = crate::cuda::Graph::capture(&plan.stream, || plan.run(&plan.factor));
        let solve_graph = crate::cuda::Graph::capture(&plan.stream, || plan.run(&plan.solve));
        if let (Ok(f), Ok(s)) = (factor_graph, solve_graph) {
            plan.graphs = Some((f, s));
        }
        Ok(plan)
    }

    /// The plan's stream.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Copies the matrices (dense `n x n` blocks) to the pristine device copies.
    pub fn upload(&mut self, a: &crate::BlockTridiag<T>) -> Result<()> {
        let dense = a.repad(a.shape().block)?;
        self.d0.copy_from_host(dense.diag())?;
        if !dense.sub().is_empty() {
            self.c0.copy_from_host(dense.sub())?;
        }
        self.stream.synchronize()?;
        Ok(())
    }

    /// Restores the working copies from the pristine ones (the factorization is in place).
    pub fn restore(&self) -> Result<()> {
        let st = self.stream.cu_stream();
        // SAFETY: equally sized device buffers of this plan.
        unsafe {
            result::memcpy_dtod_async(self.d.ptr().addr(), self.d0.ptr().addr(), self.d.len() * T::BYTES, st)?;
            result::memcpy_dtod_async(self.c.ptr().addr(), self.c0.ptr().addr(), self.c.len() * T::BYTES, st)?;
        }
        Ok(())
    }

    /// Copies right-hand sides in.
    pub fn upload_rhs(&mut self, b: &BlockVec<T>) -> Result<()> {
        self.rhs.copy_from_host(b.as_slice())?;
        self.stream.synchronize()?;
        Ok(())
    }

    fn run(&self, ops: &[Op]) -> Result<()> {
        let (h, sh) = (*self.blas.handle(), self.solver.cu());
        let check =
            |what: &str, status: i32| if status == 0 { Ok(()) } else { Err(Error::Cuda(format!("{what} returned status {status}"))) };
        for op in ops {
            // SAFETY: every address comes from this plan's buffers, sized by `new` for the
            // dimensions recorded in the op.
            unsafe {
                match *op {
                    Op::Potrf { a, count, info } => {
                        let info = self.info.ptr().addr() + (info * 4) as u64;
                        check(
                            "potrfBatched",
                            T::potrf_batched(sh, self.shape.block as i32, a as u64, self.shape.block as i32, info, count as i32),
                        )?
                    }
                    Op::Trsm { right, trans, m, n, a, lda, b, ldb, count } => check(
                        "trsmBatched",
                        T::trsm_batched(h, right, trans, m as i32, n as i32, a as u64, lda as i32, b as u64, ldb as i32, count as i32),
                    )?,
                    Op::Gemm { ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, count } => check(
                        "gemmBatched",
                        T::gemm_batched(
                            h,
                            ta,
                            tb,
                            m as i32,
                            n as i32,
                            k as i32,
                            crate::scalar::cast(alpha),
                            a as u64,
                            lda as i32,
                            b as u64,
                            ldb as i32,
                            crate::scalar::cast(beta),
                            c as u64,
                            ldc as i32,
                            count as i32,
                        ),
                    )?,
                    Op::Zero { addr, bytes } => result::memset_d8_async(addr, 0, bytes, self.stream.cu_stream())?,
                }
            }
        }
        Ok(())
    }

    /// Whether the launch sequences replay as CUDA graphs.
    pub fn uses_graphs(&self) -> bool {
        self.graphs.is_some()
    }

    /// Enqueues the factorization (of the working copies).
    pub fn launch_factor(&self) -> Result<()> {
        match &self.graphs {
            Some((f, _)) => f.launch(),
            None => self.run(&self.factor),
        }
    }

    /// Enqueues the solve (in place on the right-hand sides).
    pub fn launch_solve(&self) -> Result<()> {
        match &self.graphs {
            Some((_, s)) => s.launch(),
            None => self.run(&self.solve),
        }
    }

    /// Waits and checks the potrf status words.
    pub fn check(&self) -> Result<()> {
        let info = self.info.to_vec()?;
        match info.iter().position(|&v| v != 0) {
            None => Ok(()),
            Some(p) => Err(Error::Cuda(format!("potrfBatched reported info {} (matrix {p})", info[p]))),
        }
    }

    /// The solution after [`Self::launch_solve`].
    pub fn download(&self, x: &mut BlockVec<T>) -> Result<()> {
        self.rhs.copy_to_host(x.as_mut_slice())
    }
}

/// Replaces pointer-table offsets by device addresses.
fn resolve(op: Op, base: u64) -> Op {
    let at = |off: usize| (base + 8 * off as u64) as usize;
    match op {
        Op::Potrf { a, count, info } => Op::Potrf { a: at(a), count, info },
        Op::Trsm { right, trans, m, n, a, lda, b, ldb, count } => Op::Trsm { right, trans, m, n, a: at(a), lda, b: at(b), ldb, count },
        Op::Gemm { ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, count } => {
            Op::Gemm { ta, tb, m, n, k, alpha, a: at(a), lda, b: at(b), ldb, beta, c: at(c), ldc, count }
        }
        z @ Op::Zero { .. } => z,
    }
}

struct Alloc {
    f: u64,
    f_end: u64,
    cn: u64,
    eye: u64,
}

fn segments(nb: usize, seg: usize) -> (Vec<usize>, Vec<Segment>) {
    if nb <= seg + 1 {
        return (Vec::new(), vec![Segment { start: 0, len: nb, left: None, right: None }]);
    }
    let seps: Vec<usize> = (seg..nb).step_by(seg + 1).collect();
    let mut segs = Vec::new();
    let mut start = 0;
    let mut left = None;
    for &q in &seps {
        segs.push(Segment { start, len: q - start, left, right: Some(q) });
        start = q + 1;
        left = Some(q);
    }
    if start < nb {
        segs.push(Segment { start, len: nb - start, left, right: None });
    }
    (seps, segs)
}

/// `F` block address of position `j` of system `s` at this level.
fn f_addr(n: usize, elem: usize, f_base: u64, nb: usize, s: usize, j: usize) -> u64 {
    f_base + ((s * nb + j) * 2 * n * n * elem) as u64
}

#[allow(clippy::too_many_arguments)]
fn build_level(
    b: &mut Builder,
    alloc: &mut Alloc,
    lv: Level,
    seg: usize,
    k: usize,
    ldb: usize,
    rhs_at: &dyn Fn(usize, usize) -> u64,
) -> Result<()> {
    let (s, nb, n) = (b.batch, lv.nb, b.n);
    let (seps, segs) = segments(nb, seg);
    let d = |sys: usize, j: usize| lv.d[sys * nb + j];
    let c = |sys: usize, j: usize| lv.c[sys * (nb - 1) + j];
    let rh = |sys: usize, j: usize| rhs_at(sys, lv.orig[j]);
    let max_len = segs.iter().map(|g| g.len).max().unwrap_or(0);
    let every = |pred: &dyn Fn(&Segment) -> bool| -> Vec<(usize, Segment)> {
        (0..s).flat_map(|sys| segs.iter().filter(|g| pred(g)).map(move |g| (sys, *g))).collect()
    };

    // Factor the segments: batched sequential block Cholesky.
    for j in 0..max_len {
        let live = every(&|g| g.len > j);
        b.potrf(live.iter().map(|&(sys, g)| d(sys, g.start + j)).collect());
        let next = every(&|g| g.len > j + 1);
        let a: Vec<u64> = next.iter().map(|&(sys, g)| d(sys, g.start + j)).collect();
        let cs: Vec<u64> = next.iter().map(|&(sys, g)| c(sys, g.start + j)).collect();
        b.trsm(false, true, true, n, a, cs.clone(), n);
        let dn: Vec<u64> = next.iter().map(|&(sys, g)| d(sys, g.start + j + 1)).collect();
        // D_{j+1} -= L_{j+1,j} L_{j+1,j}^T (transB through a second gemm view: B = C^T).
        b.gemm_nt(cs, dn);
    }
    // Segment solve with k columns (pushed into the solve list after the recursion below).
    let segment_solve = |b: &mut Builder| {
        for j in 0..max_len {
            let live = every(&|g| g.len > j);
            if j > 0 {
                let a = live.iter().map(|&(sys, g)| c(sys, g.start + j - 1)).collect();
                let bb = live.iter().map(|&(sys, g)| rh(sys, g.start + j - 1)).collect();
                let cc = live.iter().map(|&(sys, g)| rh(sys, g.start + j)).collect();
                b.gemm(true, false, k, -1.0, a, bb, ldb, 1.0, cc, ldb);
            }
            let a = live.iter().map(|&(sys, g)| d(sys, g.start + j)).collect();
            let bb = live.iter().map(|&(sys, g)| rh(sys, g.start + j)).collect();
            b.trsm(true, false, false, k, a, bb, ldb);
        }
        for t in 0..max_len {
            let live = every(&|g| g.len > t);
            let pos = |g: &Segment| g.start + g.len - 1 - t;
            if t > 0 {
                let a = live.iter().map(|&(sys, g)| c(sys, pos(&g))).collect();
                let bb = live.iter().map(|&(sys, g)| rh(sys, pos(&g) + 1)).collect();
                let cc = live.iter().map(|&(sys, g)| rh(sys, pos(&g))).collect();
                b.gemm(true, true, k, -1.0, a, bb, ldb, 1.0, cc, ldb);
            }
            let a = live.iter().map(|&(sys, g)| d(sys, pos(&g))).collect();
            let bb = live.iter().map(|&(sys, g)| rh(sys, pos(&g))).collect();
            b.trsm(true, false, true, k, a, bb, ldb);
        }
    };
    if seps.is_empty() {
        segment_solve(b);
        return Ok(());
    }

    // F = A_uu^-1 A_lu: zero, seed with the couplings, forward and backward substitution.
    let f_base = alloc.f;
    let f_bytes = (s * nb * 2 * n * n * b.elem) as u64;
    if f_base + f_bytes > alloc.f_end {
        return Err(Error::Shape("vendor Schur plan: F storage exhausted".into()));
    }
    alloc.f += f_bytes;
    b.factor.push(Op::Zero { addr: f_base, bytes: f_bytes as usize });
    let (bn, belem) = (b.n, b.elem);
    let fa = move |sys: usize, j: usize| f_addr(bn, belem, f_base, nb, sys, j);
    let right_half = (n * n * b.elem) as u64;
    let with_left = every(&|g| g.left.is_some());
    let with_right = every(&|g| g.right.is_some());
    // F_L[start] = I * C(left) ; F_R[last] = I * C(last)^T.
    let eye = alloc.eye;
    {
        let a = vec![eye; with_left.len()];
        let bb = with_left.iter().map(|&(sys, g)| c(sys, g.left.unwrap_or(0))).collect();
        let cc = with_left.iter().map(|&(sys, g)| fa(sys, g.start)).collect();
        b.gemm(false, false, n, 1.0, a, bb, n, 0.0, cc, n);
        let a = vec![eye; with_right.len()];
        let bb: Vec<u64> = with_right.iter().map(|&(sys, g)| c(sys, g.start + g.len - 1)).collect();
        let cc = with_right.iter().map(|&(sys, g)| fa(sys, g.start + g.len - 1) + right_half).collect();
        b.gemm_tb(a, bb, cc);
    }
    for j in 0..max_len {
        let live = every(&|g| g.len > j && (g.left.is_some() || g.right.is_some()));
        if j > 0 {
            let a = live.iter().map(|&(sys, g)| c(sys, g.start + j - 1)).collect();
            let bb = live.iter().map(|&(sys, g)| fa(sys, g.start + j - 1)).collect();
            let cc = live.iter().map(|&(sys, g)| fa(sys, g.start + j)).collect();
            b.gemm(false, false, 2 * n, -1.0, a, bb, n, 1.0, cc, n);
        }
        let a = live.iter().map(|&(sys, g)| d(sys, g.start + j)).collect();
        let bb = live.iter().map(|&(sys, g)| fa(sys, g.start + j)).collect();
        b.trsm(false, false, false, 2 * n, a, bb, n);
    }
    for t in 0..max_len {
        let live = every(&|g| g.len > t && (g.left.is_some() || g.right.is_some()));
        let pos = |g: &Segment| g.start + g.len - 1 - t;
        if t > 0 {
            let a = live.iter().map(|&(sys, g)| c(sys, pos(&g))).collect();
            let bb = live.iter().map(|&(sys, g)| fa(sys, pos(&g) + 1)).collect();
            let cc = live.iter().map(|&(sys, g)| fa(sys, pos(&g))).collect();
            b.gemm(false, true, 2 * n, -1.0, a, bb, n, 1.0, cc, n);
        }
        let a = live.iter().map(|&(sys, g)| d(sys, pos(&g))).collect();
        let bb = live.iter().map(|&(sys, g)| fa(sys, pos(&g))).collect();
        b.trsm(false, false, true, 2 * n, a, bb, n);
    }

    // Schur complement: D(L) -= C(L)^T F_L[start]; D(R) -= C(last) F_R[last];
    // new coupling C'(L -> R) = -C(last) F_L[last].
    let a = with_left.iter().map(|&(sys, g)| c(sys, g.left.unwrap_or(0))).collect();
    let bb = with_left.iter().map(|&(sys, g)| fa(sys, g.start)).collect();
    let cc = with_left.iter().map(|&(sys, g)| d(sys, g.left.unwrap_or(0))).collect();
    b.gemm(false, true, n, -1.0, a, bb, n, 1.0, cc, n);
    let a = with_right.iter().map(|&(sys, g)| c(sys, g.start + g.len - 1)).collect();
    let bb = with_right.iter().map(|&(sys, g)| fa(sys, g.start + g.len - 1) + right_half).collect();
    let cc = with_right.iter().map(|&(sys, g)| d(sys, g.right.unwrap_or(0))).collect();
    b.gemm(false, false, n, -1.0, a, bb, n, 1.0, cc, n);
    let inner = every(&|g| g.left.is_some() && g.right.is_some());
    let nseps = seps.len();
    let cn_base = alloc.cn;
    alloc.cn += (s * nseps.saturating_sub(1) * n * n * b.elem) as u64;
    let sep_index = |q: usize| seps.iter().position(|&x| x == q).unwrap_or(0);
    let cn_at = move |sys: usize, j: usize| cn_base + ((sys * (nseps - 1) + j) * n * n * belem) as u64;
    let a = inner.iter().map(|&(sys, g)| c(sys, g.start + g.len - 1)).collect();
    let bb = inner.iter().map(|&(sys, g)| fa(sys, g.start + g.len - 1)).collect();
    let cc = inner.iter().map(|&(sys, g)| cn_at(sys, sep_index(g.left.unwrap_or(0)))).collect();
    b.gemm(false, false, n, -1.0, a, bb, n, 0.0, cc, n);

    // Solve, descending: separators' right-hand sides -= F^T B_u.
    for t in 0..max_len {
        for (left_side, group) in [(true, &with_left), (false, &with_right)] {
            let live: Vec<_> = group.iter().filter(|(_, g)| g.len > t).copied().collect();
            let off = if left_side { 0 } else { right_half };
            let a = live.iter().map(|&(sys, g)| fa(sys, g.start + t) + off).collect();
            let bb = live.iter().map(|&(sys, g)| rh(sys, g.start + t)).collect();
            let cc = live.iter().map(|&(sys, g)| rh(sys, if left_side { g.left } else { g.right }.unwrap_or(0))).collect();
            b.gemm(true, true, k, -1.0, a, bb, ldb, 1.0, cc, ldb);
        }
    }
    let next = Level {
        nb: nseps,
        d: (0..s).flat_map(|sys| seps.iter().map(move |&q| (sys, q))).map(|(sys, q)| d(sys, q)).collect(),
        c: (0..s).flat_map(|sys| (0..nseps.saturating_sub(1)).map(move |j| cn_at(sys, j))).collect(),
        orig: seps.iter().map(|&q| lv.orig[q]).collect(),
    };
    build_level(b, alloc, next, seg, k, ldb, rhs_at)?;
    // Ascending: interior right-hand sides -= A_lu X_l, then the segment solves.
    let a = with_left.iter().map(|&(sys, g)| c(sys, g.left.unwrap_or(0))).collect();
    let bb = with_left.iter().map(|&(sys, g)| rh(sys, g.left.unwrap_or(0))).collect();
    let cc = with_left.iter().map(|&(sys, g)| rh(sys, g.start)).collect();
    b.gemm(true, false, k, -1.0, a, bb, ldb, 1.0, cc, ldb);
    let a = with_right.iter().map(|&(sys, g)| c(sys, g.start + g.len - 1)).collect();
    let bb = with_right.iter().map(|&(sys, g)| rh(sys, g.right.unwrap_or(0))).collect();
    let cc = with_right.iter().map(|&(sys, g)| rh(sys, g.start + g.len - 1)).collect();
    b.gemm(true, true, k, -1.0, a, bb, ldb, 1.0, cc, ldb);
    segment_solve(b);
    Ok(())
}

impl Builder {
    /// `C -= A A^T` for `n x n` blocks (the diagonal update after a trsm).
    fn gemm_nt(&mut self, a: Vec<u64>, c: Vec<u64>) {
        if a.is_empty() {
            return;
        }
        let count = a.len();
        let n = self.n;
        let (ao, bo, co) = (self.ptrs(a.clone()), self.ptrs(a), self.ptrs(c));
        self.factor.push(Op::Gemm {
            ta: false,
            tb: true,
            m: n,
            n,
            k: n,
            alpha: -1.0,
            a: ao,
            lda: n,
            b: bo,
            ldb: n,
            beta: 1.0,
            c: co,
            ldc: n,
            count,
        });
    }

    /// `C = A B^T` for `n x n` blocks (a transposing copy when `A = I`).
    fn gemm_tb(&mut self, a: Vec<u64>, b: Vec<u64>, c: Vec<u64>) {
        if a.is_empty() {
            return;
        }
        let count = a.len();
        let n = self.n;
        let (ao, bo, co) = (self.ptrs(a), self.ptrs(b), self.ptrs(c));
        self.factor.push(Op::Gemm {
            ta: false,
            tb: true,
            m: n,
            n,
            k: n,
            alpha: 1.0,
            a: ao,
            lda: n,
            b: bo,
            ldb: n,
            beta: 0.0,
            c: co,
            ldc: n,
            count,
        });
    }
}

/// Rows `factor`, `solve` of the vendor method for one configuration.
#[allow(clippy::too_many_arguments)]
pub fn bench<T: VendorScalar>(
    config: &Config,
    suite: &str,
    name: &str,
    segment: Option<usize>,
    cfg: (usize, usize, usize, usize),
    gpu: &Arc<Gpu>,
    peaks: &Peaks,
    problem: Problem<'_, T>,
) -> Result<Vec<Row>> {
    let (s, nb, n, k) = cfg;
    let shape = Shape::new(s, nb, n)?;
    let row = |phase: &str| Row::new(suite, name, T::PRECISION, cfg, phase);
    let bytes = SchurPlan::<T>::required_memory(shape, k);
    let copies = super::super::ours::rotation(gpu, bytes);
    if bytes * copies > config.max_bytes {
        return Ok(vec![row("factor").skipped(format!("needs {:.1} GB", (bytes * copies) as f64 / 1e9))]);
    }
    if segment.is_none() && (s == 1 && nb > 20_000) {
        return Ok(vec![row("factor").skipped("sequential: too many dependent launches")]);
    }
    let plan_flops = crate::plan::Plan::new(shape, T::PRECISION)?;
    let mut plans = Vec::with_capacity(copies);
    let mut problems = Vec::with_capacity(copies);
    for i in 0..copies {
        let (a, b) = problem(i)?;
        let mut p = SchurPlan::<T>::new(gpu, shape, k, segment)?;
        p.upload(&a)?;
        p.upload_rhs(&b)?;
        plans.push(p);
        problems.push((a, b));
    }
    let stream = |i: usize| plans[i % copies].stream().clone();
    // The same warm-up per copy as this project's rows (`ours::bench`), so that both
    // rotations are timed alike; this plan captures its graphs in `new` already.
    let repeat = config.repeat.rotating(copies);
    let tf = time_gpu(repeat, stream, |i| plans[i % copies].restore(), |i| plans[i % copies].launch_factor())?;
    let mut rf = row("factor");
    rf.time = tf;
    rf.flops = (s * nb) as f64 * (7.0 / 3.0) * (n as f64).powi(3);
    rf.bytes = plan_flops.factor_bytes();
    rf.note = if plans[0].uses_graphs() { "CUDA graph".into() } else { "direct launches (graph capture failed)".into() };
    if let Err(e) = plans[0].check() {
        rf.note = format!("error: {e}");
    }
    let ts = time_gpu(
        repeat,
        stream,
        |i| {
            let p = &plans[i % copies];
            p.rhs.copy_from_host(problems[i % copies].1.as_slice())
        },
        |i| plans[i % copies].launch_solve(),
    )?;
    let (a, b) = &problems[0];
    plans[0].restore()?;
    plans[0].launch_factor()?;
    plans[0].rhs.copy_from_host(b.as_slice())?;
    plans[0].launch_solve()?;
    let mut x = b.clone();
    plans[0].download(&mut x)?;
    let mut rs = row("solve");
    rs.time = ts;
    let (flops, bytes) = super::super::ours::solve_cost(&plan_flops, shape, k, T::BYTES);
    rs.flops = flops;
    rs.bytes = bytes;
    rs.residual = Some(accuracy(a, &x, b)?.relative_residual);
    Ok(vec![rf.with_floor(peaks, T::PRECISION), rs.with_floor(peaks, T::PRECISION)])
}
