//! CPU backends: [`SequentialCholesky`] (the reference) and [`ThreadedCholesky`] (the
//! default when no GPU is found).

pub(crate) mod selinv;
mod sequential;
mod threaded;

pub use sequential::SequentialCholesky;
pub use threaded::ThreadedCholesky;

/// A mutable slice shared by parallel tasks that each write a disjoint part of it.
///
/// The nested-dissection schedule guarantees disjointness: within a phase, every block
/// (or right-hand-side segment) is written by exactly one task, and blocks written in a
/// phase are not read by other tasks of that phase. Each use states which invariant holds.
pub(crate) struct DisjointMut<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: access goes through the unsafe `range`/`range_mut`, whose callers guarantee that
// concurrent mutable ranges are disjoint and not read concurrently.
unsafe impl<T: Send> Send for DisjointMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for DisjointMut<'_, T> {}

impl<'a, T> DisjointMut<'a, T> {
    pub(crate) fn new(slice: &'a mut [T]) -> Self {
        DisjointMut { ptr: slice.as_mut_ptr(), len: slice.len(), _borrow: std::marker::PhantomData }
    }

    /// Pointer to `slice[offset]`, checked to have `count` elements behind it. Views built
    /// from it (faer's `from_raw_parts(_mut)`) must respect the disjointness contract of
    /// the type: no two tasks of a phase write the same element, and no task reads an
    /// element another task of the phase writes.
    pub(crate) fn at(&self, offset: usize, count: usize) -> *mut T {
        assert!(offset + count <= self.len, "range {offset}+{count} outside {}", self.len);
        // SAFETY: in bounds (asserted).
        unsafe { self.ptr.add(offset) }
    }
}
