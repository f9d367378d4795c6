//! A cache hint for the engine's per-flow state: with many flows a packet's source, links and
//! statistics are each a cache miss, and the engine often knows which flow comes next several
//! events ahead (see `engine::Engine::prefetch_source`).

/// Asks the processor to start loading the cache lines of the first `bytes` bytes of
/// `slice[index]` (nothing if `index` is out of range or off x86-64): a hint, which changes
/// no result, only when the data arrives.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], index: usize, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    if index < slice.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = slice.as_ptr().wrapping_add(index).cast::<i8>();
        let mut offset = 0;
        while offset < bytes {
            // SAFETY: a prefetch reads and writes no memory as far as the program can tell
            // and never faults, whatever the address; SSE is part of x86-64.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index, bytes);
}
