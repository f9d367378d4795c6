//! A cache hint for the engine's per-flow state: with many flows a packet's source, links and
//! statistics are each a cache miss, and the engine often knows which flow comes next several
//! events ahead (see `engine::Engine::prefetch_source`). The instruction itself is the core's
//! [`schedlab_core::pool::prefetch_bytes`]; this adds the look-up by index.

/// Asks the processor to start loading the cache lines of the first `bytes` bytes of
/// `slice[index]` (nothing if `index` is out of range or off x86-64): a hint, which changes
/// no result, only when the data arrives.
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], index: usize, bytes: usize) {
    if let Some(value) = slice.get(index) {
        schedlab_core::pool::prefetch_bytes(value, bytes);
    }
}
