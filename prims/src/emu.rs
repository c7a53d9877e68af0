//! A CPU emulator of CUDA thread blocks, so kernels written against this crate run and
//! can be tested on a machine without a GPU.
//!
//! [`launch`] runs the blocks of the grid one after another; inside a block every thread
//! is an OS thread, so barriers, shared memory, warp shuffles, `mma` fragments and atomics
//! behave as on the device: a missing barrier shows up as a wrong or changing result. It is
//! meant for correctness tests on small grids, not for speed.
//!
//! Semantics kept from the hardware: threads that exit count as arrived at later barriers;
//! dynamic shared memory starts filled with `0xff` bytes (NaN for floats) so that reading
//! what no thread wrote poisons the result.
//!
//! The emulated device is an sm_90 (Hopper) by default: primitives with an
//! architecture-dependent path (see [`crate::mma::has_sm90_dmma`]) take the sm_90 one.
//! [`with_compute_capability`] runs launches as another architecture, so that both paths
//! of a kernel are tested on the CPU.

use std::boxed::Box;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::vec::Vec;

/// A 3-component extent or index (grid, block, thread).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    /// x extent or index.
    pub x: u32,
    /// y extent or index.
    pub y: u32,
    /// z extent or index.
    pub z: u32,
}

impl Dim3 {
    /// Number of elements `x * y * z`.
    pub fn count(&self) -> u32 {
        self.x * self.y * self.z
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3 { x, y: 1, z: 1 }
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3 { x, y, z: 1 }
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3 { x, y, z }
    }
}

/// A raw pointer that may be captured by the kernel closure of [`launch`] (which must be
/// `Sync`). Call [`SyncPtr::get`] inside the closure.
#[derive(Clone, Copy, Debug)]
pub struct SyncPtr<T>(pub *mut T);
// SAFETY: the emulator emulates a GPU: threads share raw memory and order their accesses
// with barriers and atomics, as kernels do on the device.
unsafe impl<T> Send for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// The wrapped pointer.
    pub fn get(&self) -> *mut T {
        self.0
    }
}

/// A barrier whose exiting threads count as arrived.
pub(crate) struct Barrier {
    state: Mutex<BarrierState>,
    cv: Condvar,
}

struct BarrierState {
    participants: usize,
    arrived: usize,
    generation: u64,
}

impl Barrier {
    fn new(participants: usize) -> Self {
        Barrier { state: Mutex::new(BarrierState { participants, arrived: 0, generation: 0 }), cv: Condvar::new() }
    }

    pub(crate) fn wait(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived >= s.participants {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
        } else {
            while s.generation == generation {
                s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    fn leave(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.participants -= 1;
        if s.arrived > 0 && s.arrived >= s.participants {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
        }
    }
}

pub(crate) struct WarpState {
    pub(crate) barrier: Barrier,
    slots: [AtomicU64; 32],
}

struct Arena {
    site: usize,
    words: Box<[u128]>,
}

pub(crate) struct BlockState {
    pub(crate) barrier: Barrier,
    shared: *mut u128,
    shared_words: usize,
    shared_len: usize,
    warps: Vec<WarpState>,
    statics: Mutex<Vec<Arena>>,
}

// SAFETY: `shared` is a heap buffer owned by the block for its lifetime; threads access it
// like GPU shared memory (ordered by barriers).
unsafe impl Sync for BlockState {}

const POISON: u128 = u128::MAX;

impl BlockState {
    fn new(threads: usize, shared_bytes: usize) -> Self {
        let shared_words = shared_bytes.div_ceil(16).max(1);
        let shared = Box::into_raw(std::vec![POISON; shared_words].into_boxed_slice()) as *mut u128;
        let warps = (0..threads.div_ceil(32))
            .map(|w| WarpState { barrier: Barrier::new((threads - 32 * w).min(32)), slots: core::array::from_fn(|_| AtomicU64::new(0)) })
            .collect();
        BlockState {
            barrier: Barrier::new(threads),
            shared,
            shared_words,
            shared_len: shared_bytes,
            warps,
            statics: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn shared_base(&self) -> *mut u8 {
        self.shared as *mut u8
    }

    pub(crate) fn shared_len(&self) -> usize {
        self.shared_len
    }
}

impl Drop for BlockState {
    fn drop(&mut self) {
        // SAFETY: `shared` came from Box::into_raw of a slice of `shared_words` elements.
        drop(unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(self.shared, self.shared_words)) });
    }
}

/// The per-thread view of the launch.
pub(crate) struct ThreadCtx {
    pub(crate) sm: u32,
    pub(crate) tid: Dim3,
    pub(crate) bid: Dim3,
    pub(crate) bdim: Dim3,
    pub(crate) gdim: Dim3,
    rank: usize,
    block: *const BlockState,
}

// SAFETY: `block` points to the BlockState that outlives the thread (scoped threads).
unsafe impl Send for ThreadCtx {}

impl ThreadCtx {
    pub(crate) fn block(&self) -> &BlockState {
        // SAFETY: the block outlives every thread of it (scoped threads).
        unsafe { &*self.block }
    }
    pub(crate) fn warp(&self) -> &WarpState {
        &self.block().warps[self.rank / 32]
    }
}

std::thread_local! {
    static CTX: Cell<*const ThreadCtx> = const { Cell::new(core::ptr::null()) };
    static LAUNCH_SM: Cell<u32> = const { Cell::new(DEFAULT_SM) };
}

/// The compute capability launches emulate unless told otherwise (`90`: sm_90).
pub const DEFAULT_SM: u32 = 90;

/// Runs `f` with every [`launch`] made by the calling thread emulating compute capability
/// `sm` (`80` for sm_80, `90` for sm_90), then restores the previous setting. The setting
/// is per calling thread, so tests running side by side do not see each other's.
///
/// ```
/// use blocktri_prims::{emu, mma::has_sm90_dmma};
/// let mut seen = [false; 2];
/// let p = emu::SyncPtr(seen.as_mut_ptr());
/// emu::with_compute_capability(80, || emu::launch(1, 1, 0, || unsafe { *p.get() = has_sm90_dmma() }));
/// emu::launch(1, 1, 0, || unsafe { *p.get().add(1) = has_sm90_dmma() });
/// assert_eq!(seen, [false, true]);
/// ```
pub fn with_compute_capability<R>(sm: u32, f: impl FnOnce() -> R) -> R {
    struct Restore(u32);
    impl Drop for Restore {
        fn drop(&mut self) {
            LAUNCH_SM.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(LAUNCH_SM.with(|c| c.replace(sm)));
    f()
}

/// The compute capability the calling kernel thread emulates (see
/// [`with_compute_capability`]).
///
/// # Panics
/// When called outside [`launch`].
pub fn compute_capability() -> u32 {
    with_ctx(|c| c.sm)
}

/// Runs `f` with the calling thread's launch context.
///
/// # Panics
/// When called outside [`launch`].
pub(crate) fn with_ctx<R>(f: impl FnOnce(&ThreadCtx) -> R) -> R {
    CTX.with(|c| {
        let p = c.get();
        assert!(!p.is_null(), "a device primitive was called outside blocktri_prims::emu::launch");
        // SAFETY: set by `launch` for the duration of the kernel call on this thread.
        f(unsafe { &*p })
    })
}

/// Restores the thread's context and leaves the barriers when a thread ends, also when
/// it panics, so that the other threads of the block do not wait forever.
struct ThreadGuard<'a> {
    ctx: &'a ThreadCtx,
}

impl Drop for ThreadGuard<'_> {
    fn drop(&mut self) {
        self.ctx.warp().barrier.leave();
        self.ctx.block().barrier.leave();
        CTX.with(|c| c.set(core::ptr::null()));
    }
}

/// Exchanges one 64-bit value per lane and returns the one of lane `src` (a shuffle).
pub(crate) fn warp_exchange(value: u64, src: u32) -> u64 {
    with_ctx(|c| {
        let w = c.warp();
        w.slots[c.rank % 32].store(value, Ordering::SeqCst);
        w.barrier.wait();
        let v = w.slots[src as usize].load(Ordering::SeqCst);
        w.barrier.wait();
        v
    })
}

/// Exchanges one 64-bit value per lane and returns all 32 of them.
pub(crate) fn warp_all(value: u64) -> [u64; 32] {
    with_ctx(|c| {
        let w = c.warp();
        w.slots[c.rank % 32].store(value, Ordering::SeqCst);
        w.barrier.wait();
        let all = core::array::from_fn(|i| w.slots[i].load(Ordering::SeqCst));
        w.barrier.wait();
        all
    })
}

/// The shared array of one `static_shared!` expansion site for the current block.
#[doc(hidden)]
pub fn static_shared_site(site: usize, bytes: usize) -> *mut u8 {
    with_ctx(|c| {
        let mut statics = c.block().statics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = statics.iter_mut().find(|a| a.site == site) {
            return a.words.as_mut_ptr() as *mut u8;
        }
        let mut words = std::vec![POISON; bytes.div_ceil(16).max(1)].into_boxed_slice();
        let p = words.as_mut_ptr() as *mut u8;
        statics.push(Arena { site, words });
        p
    })
}

/// Runs `kernel` for every thread of a `grid` of `block`-shaped blocks with
/// `shared_bytes` of dynamic shared memory per block.
///
/// Blocks run one after another; the threads of a block run concurrently, one OS thread
/// each. A panic in any thread is re-raised after the block ends.
///
/// # Panics
/// If the block has 0 or more than 1024 threads, or the kernel panics.
pub fn launch<F: Fn() + Sync>(grid: impl Into<Dim3>, block: impl Into<Dim3>, shared_bytes: usize, kernel: F) {
    // SAFETY: `F: Sync`, so sharing it between the block's threads is sound.
    unsafe { launch_unchecked(grid, block, shared_bytes, kernel) }
}

/// [`launch`] for kernels whose closure is not `Sync` because it captures raw pointers or
/// structs of them, as kernel arguments are.
///
/// # Safety
/// The closure is called from many threads at once: everything it captures must be used
/// the way a GPU kernel uses its arguments (memory behind raw pointers, ordered by
/// barriers and atomics), and it must capture no non-thread-safe host state such as
/// `Cell` or `Rc`.
pub unsafe fn launch_unchecked<F: Fn()>(grid: impl Into<Dim3>, block: impl Into<Dim3>, shared_bytes: usize, kernel: F) {
    struct AssertSync<F>(F);
    // SAFETY: the caller's contract above.
    unsafe impl<F> Sync for AssertSync<F> {}
    let kernel = AssertSync(kernel);
    let (grid, bdim) = (grid.into(), block.into());
    let sm = LAUNCH_SM.with(|c| c.get());
    let threads = bdim.count() as usize;
    assert!((1..=1024).contains(&threads), "a block has 1..=1024 threads, got {threads}");
    for bz in 0..grid.z {
        for by in 0..grid.y {
            for bx in 0..grid.x {
                let state = BlockState::new(threads, shared_bytes);
                let bid = Dim3 { x: bx, y: by, z: bz };
                std::thread::scope(|scope| {
                    for rank in 0..threads {
                        let r = rank as u32;
                        let tid = Dim3 { x: r % bdim.x, y: (r / bdim.x) % bdim.y, z: r / (bdim.x * bdim.y) };
                        let ctx = ThreadCtx { sm, tid, bid, bdim, gdim: grid, rank, block: &state };
                        let kernel = &kernel;
                        std::thread::Builder::new()
                            .stack_size(1 << 20)
                            .spawn_scoped(scope, move || {
                                CTX.with(|c| c.set(&ctx));
                                let _guard = ThreadGuard { ctx: &ctx };
                                (kernel.0)();
                            })
                            .expect("the emulator could not spawn a thread");
                    }
                });
            }
        }
    }
}
