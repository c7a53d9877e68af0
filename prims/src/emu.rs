//! A CPU emulator of CUDA thread blocks, so kernels written against this crate run and
//! can be tested on a machine without a GPU.
//!
//! [`launch`] runs the blocks of the grid one after another; inside a block every thread
//! is a stackful coroutine on the calling OS thread, suspended at each barrier until the
//! barrier completes, so barriers, shared memory, warp shuffles, `mma` fragments and
//! atomics behave as on the device. Between barriers the threads run one after another,
//! in rank order and in reverse on alternate rounds: a missing barrier shows up as a wrong
//! result. It is meant for correctness tests on small grids, not for speed (a barrier
//! costs a few coroutine switches per thread, where OS threads cost a futex wake each).
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
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
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

pub(crate) struct WarpState {
    slots: [AtomicU64; 32],
}

struct Arena {
    site: usize,
    words: Box<[u128]>,
}

pub(crate) struct BlockState {
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
        let warps = (0..threads.div_ceil(32)).map(|_| WarpState { slots: core::array::from_fn(|_| AtomicU64::new(0)) }).collect();
        BlockState { shared, shared_words, shared_len: shared_bytes, warps, statics: Mutex::new(Vec::new()) }
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
    /// The thread's coroutine handle, set when the thread first runs.
    yielder: Cell<*const Yielder>,
}

impl ThreadCtx {
    pub(crate) fn block(&self) -> &BlockState {
        // SAFETY: the block outlives every thread of it (`run_block` drops the threads first).
        unsafe { &*self.block }
    }
    pub(crate) fn warp(&self) -> &WarpState {
        &self.block().warps[self.rank / 32]
    }
    /// Suspends the thread until the scheduler releases the barrier `at`.
    fn wait(&self, at: Barrier) {
        let y = self.yielder.get();
        debug_assert!(!y.is_null());
        // SAFETY: set at the start of this thread's coroutine, whose stack holds the
        // yielder until the thread returns; `wait` is only called by the thread itself.
        unsafe { (*y).suspend(at) }
    }
}

/// The barrier a suspended thread waits at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Barrier {
    Block,
    Warp,
}

type Yielder = corosensei::Yielder<(), Barrier>;

/// Waits at the block-wide barrier (`bar.sync 0`).
pub(crate) fn wait_block() {
    with_ctx(|c| c.wait(Barrier::Block))
}

/// Waits at the warp-wide barrier (`bar.warp.sync`).
pub(crate) fn wait_warp() {
    with_ctx(|c| c.wait(Barrier::Warp))
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

/// Exchanges one 64-bit value per lane and returns the one of lane `src` (a shuffle).
pub(crate) fn warp_exchange(value: u64, src: u32) -> u64 {
    with_ctx(|c| {
        let w = c.warp();
        w.slots[c.rank % 32].store(value, Ordering::SeqCst);
        c.wait(Barrier::Warp);
        let v = w.slots[src as usize].load(Ordering::SeqCst);
        c.wait(Barrier::Warp);
        v
    })
}

/// Exchanges one 64-bit value per lane and returns all 32 of them.
pub(crate) fn warp_all(value: u64) -> [u64; 32] {
    with_ctx(|c| {
        let w = c.warp();
        w.slots[c.rank % 32].store(value, Ordering::SeqCst);
        c.wait(Barrier::Warp);
        let all = core::array::from_fn(|i| w.slots[i].load(Ordering::SeqCst));
        c.wait(Barrier::Warp);
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
/// Blocks run one after another; the threads of a block run interleaved at barriers on
/// the calling thread (see the module's documentation). A panic in any thread is
/// re-raised after the block ends.
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
/// The closure is called by every emulated thread, interleaved at barriers: everything
/// it captures must be used the way a GPU kernel uses its arguments (memory behind raw pointers, ordered by
/// barriers and atomics), and it must capture no non-thread-safe host state such as
/// `Cell` or `Rc`.
pub unsafe fn launch_unchecked<F: Fn()>(grid: impl Into<Dim3>, block: impl Into<Dim3>, shared_bytes: usize, kernel: F) {
    let (grid, bdim) = (grid.into(), block.into());
    let sm = LAUNCH_SM.with(|c| c.get());
    let threads = bdim.count() as usize;
    assert!((1..=1024).contains(&threads), "a block has 1..=1024 threads, got {threads}");
    for bz in 0..grid.z {
        for by in 0..grid.y {
            for bx in 0..grid.x {
                let state = BlockState::new(threads, shared_bytes);
                let bid = Dim3 { x: bx, y: by, z: bz };
                let ctxs: Vec<ThreadCtx> = (0..threads)
                    .map(|rank| {
                        let r = rank as u32;
                        let tid = Dim3 { x: r % bdim.x, y: (r / bdim.x) % bdim.y, z: r / (bdim.x * bdim.y) };
                        ThreadCtx { sm, tid, bid, bdim, gdim: grid, rank, block: &state, yielder: Cell::new(core::ptr::null()) }
                    })
                    .collect();
                run_block(&ctxs, &kernel);
            }
        }
    }
}

/// Where a thread of the block stands between two scheduler rounds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Status {
    Ready,
    Waiting(Barrier),
    Done,
}

/// The stack of one emulated thread (as the OS threads the emulator used before had).
const THREAD_STACK_BYTES: usize = 1 << 20;

std::thread_local! {
    /// Thread stacks kept between blocks: mapping 1024 of them per block costs more than
    /// a small kernel runs.
    static STACKS: core::cell::RefCell<Vec<corosensei::stack::DefaultStack>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// Runs the threads of one block to completion, each a coroutine on the calling OS thread.
///
/// A round resumes every ready thread until it waits at a barrier or returns, in rank
/// order on even rounds and in reverse on odd ones (so that a missing barrier shows up
/// whichever side of it the writer is). Then a warp whose live lanes all wait at its
/// barrier, or a block whose live threads all wait at the block barrier, is released;
/// exited threads count as arrived. Threads that wait at barriers no release can meet
/// (a `sync_threads` in divergent code) end the launch with a panic instead of hanging.
fn run_block<F: Fn()>(ctxs: &[ThreadCtx], kernel: &F) {
    let threads = ctxs.len();
    let mut stacks = STACKS.with(|s| core::mem::take(&mut *s.borrow_mut()));
    let mut fibers: Vec<corosensei::Coroutine<(), Barrier, std::thread::Result<()>, corosensei::stack::DefaultStack>> = ctxs
        .iter()
        .map(|ctx| {
            let stack = stacks.pop().unwrap_or_else(|| {
                corosensei::stack::DefaultStack::new(THREAD_STACK_BYTES).expect("the emulator could not map a thread stack")
            });
            let body = move |yielder: &Yielder, ()| {
                ctx.yielder.set(yielder);
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(kernel))
            };
            // SAFETY: `body` borrows `ctx` and `kernel`, which outlive `fibers`: every
            // fiber is run to completion or dropped (unwound) before this function returns.
            unsafe { corosensei::Coroutine::with_stack_unchecked(stack, body) }
        })
        .collect();
    let mut status = std::vec![Status::Ready; threads];
    let count = |status: &[Status], of: Status| status.iter().filter(|&&s| s == of).count();
    let mut panic = None;
    for round in 0usize.. {
        for k in 0..threads {
            let i = if round % 2 == 0 { k } else { threads - 1 - k };
            if status[i] != Status::Ready {
                continue;
            }
            CTX.with(|c| c.set(&ctxs[i]));
            status[i] = match fibers[i].resume(()) {
                corosensei::CoroutineResult::Yield(at) => Status::Waiting(at),
                corosensei::CoroutineResult::Return(result) => {
                    if let Err(p) = result {
                        panic.get_or_insert(p);
                    }
                    Status::Done
                }
            };
            CTX.with(|c| c.set(core::ptr::null()));
        }
        let live = threads - count(&status, Status::Done);
        if live == 0 {
            break;
        }
        let mut released = false;
        let mut release = |range: core::ops::Range<usize>, at: Barrier, status: &mut [Status]| {
            for s in &mut status[range] {
                if *s == Status::Waiting(at) {
                    *s = Status::Ready;
                }
            }
            released = true;
        };
        if count(&status, Status::Waiting(Barrier::Block)) == live {
            release(0..threads, Barrier::Block, &mut status);
        }
        for w in 0..threads.div_ceil(32) {
            let range = 32 * w..(32 * w + 32).min(threads);
            let lanes = &status[range.clone()];
            let waiting = count(lanes, Status::Waiting(Barrier::Warp));
            if waiting > 0 && waiting + count(lanes, Status::Done) == range.len() {
                release(range, Barrier::Warp, &mut status);
            }
        }
        if !released {
            drop(fibers);
            panic!("the block's threads wait at barriers that cannot complete (a barrier in divergent code)");
        }
    }
    stacks.extend(fibers.into_iter().map(|f| f.into_stack()));
    STACKS.with(|s| *s.borrow_mut() = stacks);
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

#[cfg(test)]
mod tests {
    use super::{SyncPtr, launch};
    use crate::shared::dynamic_shared;
    use crate::{sync_threads, sync_warp, thread_idx_x, warp::shfl_xor_u32};
    use std::vec;

    /// Each thread writes its slot and reads its neighbour's, with or without a barrier
    /// between; returns how many threads read what the neighbour wrote.
    fn neighbour_reads(barrier: bool) -> usize {
        let threads = 96u32;
        let mut seen = vec![0u32; threads as usize];
        let out = SyncPtr(seen.as_mut_ptr());
        launch(1, threads, 4 * threads as usize, || {
            let (t, smem) = (thread_idx_x(), dynamic_shared::<u32>());
            // SAFETY: one slot per thread in `4 * threads` bytes.
            unsafe { *smem.add(t as usize) = t };
            if barrier {
                sync_threads();
            }
            let n = (t + 1) % threads;
            // SAFETY: as above; `out` has one slot per thread.
            unsafe { *out.get().add(t as usize) = *smem.add(n as usize) };
        });
        seen.iter().enumerate().filter(|&(t, &v)| v == (t as u32 + 1) % threads).count()
    }

    #[test]
    fn a_missing_barrier_shows_up_and_a_barrier_orders() {
        assert_eq!(neighbour_reads(true), 96);
        assert!(neighbour_reads(false) < 96, "reads across a missing barrier all saw the writes");
    }

    /// Threads that exit count as arrived: the others pass later barriers, block and warp.
    #[test]
    fn exited_threads_count_as_arrived() {
        let mut sums = vec![0u32; 64];
        let out = SyncPtr(sums.as_mut_ptr());
        launch(1, 64, 0, || {
            let t = thread_idx_x();
            if t % 2 == 1 {
                return;
            }
            sync_threads();
            sync_warp();
            sync_threads();
            // SAFETY: one slot per thread.
            unsafe { *out.get().add(t as usize) = t + 1 };
        });
        assert!(sums.iter().enumerate().all(|(t, &v)| v == if t % 2 == 0 { t as u32 + 1 } else { 0 }));
    }

    /// Warp exchanges stay within each warp of a block of several warps, the last partial.
    #[test]
    fn shuffles_stay_within_their_warp() {
        let mut got = vec![0u32; 80];
        let out = SyncPtr(got.as_mut_ptr());
        launch(2, (16, 5), 0, || {
            let t = thread_idx_x() + 16 * crate::thread_idx_y();
            let v = shfl_xor_u32(1000 + t, 1);
            if crate::block_idx_x() == 1 {
                // SAFETY: one slot per thread.
                unsafe { *out.get().add(t as usize) = v };
            }
        });
        assert!(got.iter().enumerate().all(|(t, &v)| v == 1000 + (t as u32 ^ 1)));
    }

    #[test]
    #[should_panic(expected = "cannot complete")]
    fn barriers_in_divergent_code_panic_instead_of_hanging() {
        launch(1, 32, 0, || if thread_idx_x() == 0 { sync_warp() } else { sync_threads() });
    }

    #[test]
    #[should_panic(expected = "thread 7 of 64")]
    fn a_panicking_thread_fails_the_launch_after_the_block() {
        launch(1, 64, 0, || {
            sync_threads();
            assert!(thread_idx_x() != 7, "thread 7 of 64");
            sync_threads();
        });
    }
}
