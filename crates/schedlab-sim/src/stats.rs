//! Per-flow and per-class accumulators updated as packets are delivered or dropped.
//!
//! Delays go into an HDR histogram (3 significant digits, 1 ns to 1 hour; larger values are
//! clamped in the histogram but the exact maximum is kept), besides an exact sum and maximum.
//! While a run records, the histogram is a [`DelayHistogram`]: the same buckets as the
//! `hdrhistogram` crate's, counted in a plain array of bytes with a carry (a record is an
//! index computation and an increment, where `Histogram::saturating_record` costs about 130
//! instructions). Its quantiles
//! and CDF points are read from those buckets as `hdrhistogram` would compute them
//! ([`DelayHistogram::values_at_quantiles`], [`DelayHistogram::for_each_recorded`]; a test
//! compares them), without the full-range histogram (a few hundred kB per flow, which with
//! 1,000 flows took about 18 % of the CPU time of a 2-million-packet run of the ns-2
//! scenario); [`DelayHistogram::to_hdr`] gives the identical `hdrhistogram::Histogram`.
//!
//! Jitter follows Yokota, Kato and Tominaga (paper 003, §5.2): "the difference in arrival
//! times between two consecutive packets within the same class", i.e. the gaps between
//! consecutive receptions of the same flow (or class). We report their mean, standard
//! deviation and maximum; the paper's "jitter increase" is the difference of these between a
//! run with competing traffic and one without. Because a long lossless run has a mean receive
//! gap equal to the mean send gap, we also report the mean instantaneous delay variation
//! |D_k − D_{k−1}| (RFC 3393 IPDV) as `ipdv_mean_s`.

use hdrhistogram::Histogram;
use schedlab_core::{DropReason, TimeNs};

/// Highest delay the histograms resolve (1 hour in ns).
pub const HISTOGRAM_MAX_NS: u64 = 3_600_000_000_000;

/// Raises `peak` to `value` if `value` is above it (a running maximum). A branch, not a
/// `max`: on the per-packet paths a peak seldom moves once a run is under way, so the usual
/// path is a load, a compare and a not-taken jump, without the store (one instruction and one
/// store fewer; the core's counters do the same).
#[inline(always)]
pub(crate) fn raise<T: PartialOrd>(peak: &mut T, value: T) {
    if value > *peak {
        *peak = value;
    }
}

/// Lowers `least` to `value` if `value` is below it (a running minimum), as [`raise`].
#[inline(always)]
pub(crate) fn lower<T: PartialOrd>(least: &mut T, value: T) {
    if value < *least {
        *least = value;
    }
}

/// A fresh delay histogram.
pub fn delay_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HISTOGRAM_MAX_NS, 3).expect("valid histogram bounds")
}

/// log2 of the sub-buckets per bucket of [`delay_histogram`]: 3 significant digits need
/// 2·10³ sub-buckets, rounded up to 2¹¹ (HDR's `sub_bucket_count_magnitude`; the unit
/// magnitude is 0 because the lowest discernible value is 1 ns).
const SUB_BUCKET_MAGNITUDE: u32 = 11;
/// Values below this share bucket 0 (HDR's `sub_bucket_mask`).
const SUB_BUCKET_MASK: u64 = (1 << SUB_BUCKET_MAGNITUDE) - 1;
/// HDR's `sub_bucket_half_count_magnitude`.
const HALF_MAGNITUDE: u32 = SUB_BUCKET_MAGNITUDE - 1;
/// HDR's `sub_bucket_half_count`.
const HALF_COUNT: u64 = 1 << HALF_MAGNITUDE;

/// The index of `value`'s bucket in the counts array of [`delay_histogram`] (HDR's
/// `index_for`: bucket = how many doublings `value` is above bucket 0, then the top
/// `SUB_BUCKET_MAGNITUDE` bits of `value` within it).
#[inline(always)]
const fn bucket_index(value: u64) -> usize {
    let bucket = (64 - SUB_BUCKET_MAGNITUDE) - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = value >> bucket;
    (((bucket as u64 + 1) << HALF_MAGNITUDE) + sub_bucket - HALF_COUNT) as usize
}

/// The highest value of bucket `index` (HDR's `highest_equivalent(value_for(index))`: bucket
/// `b ≥ 1` of the layout, from index `(b + 1)·2¹⁰`, holds values `2^b` apart).
fn bucket_highest(index: usize) -> u64 {
    let bucket = (index as u64 >> HALF_MAGNITUDE).saturating_sub(1);
    bucket_value(index) + (1 << bucket) - 1
}

/// The lowest value of bucket `index` (HDR's `value_for`).
fn bucket_value(index: usize) -> u64 {
    let index = index as u64;
    let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let sub_bucket = (index & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub_bucket - HALF_COUNT
    } else {
        sub_bucket << bucket
    }
}

/// What [`DelayHistogram::note`] returns for a value beyond the histogram's range (above every
/// bucket's index).
pub(crate) const NO_BUCKET: u32 = u32::MAX;

const _: () = assert!(bucket_index(HISTOGRAM_MAX_NS) < NO_BUCKET as usize);

/// Distinct buckets a [`DelayHistogram`] keeps as a sorted list before it switches to a
/// dense window of counts: 128 entries are 2 KiB, about what the dense window of a flow whose
/// delays span a factor of four costs (2,048 buckets of a byte).
const SPARSE_MAX: usize = 128;

/// Buckets of a dense window that the end-of-run scans pass over at once when none of them
/// matters (all empty, or too few values to reach the next quantile or CDF point).
const DENSE_RUN: usize = 8;

/// The sum of the 8 bytes of `word` (each 0 to 255): pairs of bytes added into four 16-bit
/// lanes (at most 510 each), then the lanes into the top one (at most 2,040, no carry).
#[inline(always)]
fn byte_sum(word: u64) -> u64 {
    const LOW_BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    let lanes = (word & LOW_BYTES) + ((word >> 8) & LOW_BYTES);
    lanes.wrapping_mul(0x0001_0001_0001_0001) >> 48
}

/// The counts of a dense window, a byte each where a count fits: the low 8 bits of each count
/// in `low`, the rest (`count >> 8`) in `high`, which stays empty until some count first
/// reaches 256 and from then on has `low`'s length. A record increments one byte, and a carry
/// out of it (one record in 256 of the same bucket at most) goes out of line into `high`.
///
/// A busy flow's window spans its delays at 3 significant digits (several thousand buckets,
/// mostly holding a few values each). With `u64` counts the 1,000 flows of the ns-2 scenario
/// held about 60 MB of windows (peak RSS 95 MB, 39 MB with bytes), beyond the last-level
/// cache and the reach of the TLB: the count a delivery adds to was a page walk and a memory
/// access, even prefetched (session 10 in `docs/performance.md`).
///
/// 24 bytes (a boxed slice and a thin pointer), so that a dense window's handle stays in the
/// 48 bytes a record touches (see [`DelayHistogram`]).
#[derive(Clone, Debug, Default)]
struct DenseCounts {
    low: Box<[u8]>,
    /// Boxed: a thin pointer (8 bytes where a `Vec` takes 24), allocated once at most.
    #[allow(clippy::box_collection)]
    high: Option<Box<Vec<u64>>>,
}

impl PartialEq for DenseCounts {
    /// The same counts (whether or not `high` was allocated).
    fn eq(&self, other: &DenseCounts) -> bool {
        self.len() == other.len() && (0..self.len()).all(|i| self.get(i) == other.get(i))
    }
}

impl Eq for DenseCounts {}

impl DenseCounts {
    /// `len` zero counts.
    fn zeros(len: usize) -> DenseCounts {
        DenseCounts {
            low: vec![0; len].into_boxed_slice(),
            high: None,
        }
    }

    /// Buckets in the window.
    #[inline]
    fn len(&self) -> usize {
        self.low.len()
    }

    /// Adds one to count `i`; false (nothing counted) if `i` is outside the window.
    #[inline(always)]
    fn increment(&mut self, i: usize) -> bool {
        let Some(low) = self.low.get_mut(i) else {
            return false;
        };
        *low = low.wrapping_add(1);
        if *low == 0 {
            self.carry(i);
        }
        true
    }

    /// Count `i`'s low byte went from 255 to 0: 256 more in `high`.
    #[cold]
    #[inline(never)]
    fn carry(&mut self, i: usize) {
        self.high_mut()[i] += 1;
    }

    /// `high`, allocated (zeros) if it was not.
    fn high_mut(&mut self) -> &mut Vec<u64> {
        let len = self.low.len();
        self.high.get_or_insert_with(|| Box::new(vec![0; len]))
    }

    /// `high` as a slice (empty while not allocated).
    #[inline]
    fn high(&self) -> &[u64] {
        self.high.as_deref().map_or(&[], Vec::as_slice)
    }

    /// Count `i`.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        let low = self.low[i] as u64;
        match &self.high {
            None => low,
            Some(high) => low + (high[i] << 8),
        }
    }

    /// Adds `count` to count `i`.
    fn add(&mut self, i: usize, count: u64) {
        let total = self.get(i) + count;
        self.low[i] = total as u8;
        let high = total >> 8;
        if high != 0 || self.high.is_some() {
            self.high_mut()[i] = high;
        }
    }

    /// Whether count `i` is not zero.
    #[inline]
    fn is_counted(&self, i: usize) -> bool {
        self.low[i] != 0 || self.high().get(i).is_some_and(|&high| high != 0)
    }

    /// The first index from `from` on (to the end) whose count is not zero.
    fn first_counted_from(&self, from: usize) -> Option<usize> {
        if self.high.is_none() {
            return self
                .low
                .get(from..)?
                .iter()
                .position(|&low| low != 0)
                .map(|at| from + at);
        }
        (from..self.len()).find(|&i| self.is_counted(i))
    }

    /// The last index whose count is not zero.
    fn last_counted(&self) -> Option<usize> {
        if self.high.is_none() {
            // Eight bytes at a time from the end (a window grows by doubling: often a long
            // empty end).
            let words = self.low.len() / 8;
            let tail = &self.low[words * 8..];
            if let Some(at) = tail.iter().rposition(|&low| low != 0) {
                return Some(words * 8 + at);
            }
            let (whole, _) = self.low.as_chunks::<8>();
            return whole
                .iter()
                .rposition(|&word| u64::from_ne_bytes(word) != 0)
                .map(|w| {
                    let at = (0..8).rev().find(|&i| whole[w][i] != 0).expect("a non-zero byte");
                    w * 8 + at
                });
        }
        (0..self.len()).rev().find(|&i| self.is_counted(i))
    }

    /// Runs of [`DENSE_RUN`] buckets in the window (the last one may be shorter).
    #[inline]
    fn runs(&self) -> usize {
        self.len().div_ceil(DENSE_RUN)
    }

    /// The indices of run `k`.
    #[inline]
    fn run(&self, k: usize) -> std::ops::Range<usize> {
        k * DENSE_RUN..((k + 1) * DENSE_RUN).min(self.len())
    }

    /// The last index of run `k` (whose sum is not zero) whose count is not zero (for a full
    /// run without high parts, from the run's bytes as one word, without a branch).
    #[inline(always)]
    fn last_counted_in_run(&self, k: usize) -> usize {
        let range = self.run(k);
        if self.high.is_none() {
            if let Ok(full) = <[u8; DENSE_RUN]>::try_from(&self.low[range.clone()]) {
                const LOW_7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
                let word = u64::from_le_bytes(full);
                // Bit 7 of each byte that is not zero.
                let counted = ((word & LOW_7).wrapping_add(LOW_7) | word) & !LOW_7;
                return range.start + (63 - counted.leading_zeros() as usize) / 8;
            }
        }
        range
            .rev()
            .find(|&i| self.is_counted(i))
            .expect("a run with a non-zero sum")
    }

    /// The sum of the counts of run `k` (a full run of bytes is one load and a few
    /// arithmetic instructions).
    #[inline(always)]
    fn run_sum(&self, k: usize) -> u64 {
        let range = self.run(k);
        let low = match <[u8; DENSE_RUN]>::try_from(&self.low[range.clone()]) {
            Ok(full) => byte_sum(u64::from_le_bytes(full)),
            Err(_) => self.low[range.clone()].iter().map(|&low| low as u64).sum(),
        };
        match &self.high {
            None => low,
            Some(high) => low + (high[range].iter().sum::<u64>() << 8),
        }
    }

    /// The sum of every count (the bytes summed in blocks whose sum fits 32 bits, which the
    /// compiler turns into a vector reduction).
    fn total(&self) -> u64 {
        let low: u64 = self
            .low
            .chunks(1 << 16)
            .map(|block| u64::from(block.iter().map(|&low| u32::from(low)).sum::<u32>()))
            .sum();
        low + (self.high().iter().sum::<u64>() << 8)
    }

    /// Adds the counts `other[from..from + n]` to `self[at..at + n]` (a merge of windows),
    /// a byte at a time, its carry and `other`'s high part (if any) into `high`.
    fn add_counts(&mut self, at: usize, other: &DenseCounts, from: usize, n: usize) {
        let len = self.low.len();
        let theirs_high = other.high.as_deref().map(|high| &high[from..from + n]);
        let DenseCounts { low, high } = self;
        let mut done = 0;
        if theirs_high.is_none() {
            // Eight bytes at a time: their sums modulo 256 in one word, and a carry's bit for
            // each byte that overflows (then added to `high` one by one).
            const LOW_7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
            let (own_words, _) = low[at..at + n].as_chunks_mut::<8>();
            let (their_words, _) = other.low[from..from + n].as_chunks::<8>();
            for (w, (own, theirs)) in own_words.iter_mut().zip(their_words).enumerate() {
                let (a, b) = (u64::from_le_bytes(*own), u64::from_le_bytes(*theirs));
                let sum = ((a & LOW_7) + (b & LOW_7)) ^ ((a ^ b) & !LOW_7);
                let mut carries = ((a & b) | ((a | b) & !sum)) & !LOW_7;
                *own = sum.to_le_bytes();
                while carries != 0 {
                    let k = w * 8 + carries.trailing_zeros() as usize / 8;
                    high.get_or_insert_with(|| Box::new(vec![0; len]))[at + k] += 1;
                    carries &= carries - 1;
                }
            }
            done = own_words.len() * 8;
        }
        let pairs = low[at + done..at + n]
            .iter_mut()
            .zip(&other.low[from + done..from + n]);
        for (k, (own, &theirs)) in pairs.enumerate() {
            let k = done + k;
            let (sum, carry) = own.overflowing_add(theirs);
            *own = sum;
            let add = theirs_high.map_or(0, |high| high[k]) + u64::from(carry);
            if add != 0 {
                high.get_or_insert_with(|| Box::new(vec![0; len]))[at + k] += add;
            }
        }
    }

    /// Extends the window by `added` zero counts at its end.
    fn extend_end(&mut self, added: usize) {
        let len = self.len() + added;
        let mut low = std::mem::take(&mut self.low).into_vec();
        low.resize(len, 0);
        self.low = low.into_boxed_slice();
        if let Some(high) = &mut self.high {
            high.resize(len, 0);
        }
    }

    /// Extends the window by `added` zero counts before its start.
    fn extend_start(&mut self, added: usize) {
        fn prepended<T: Copy + Default>(values: &[T], added: usize) -> Vec<T> {
            let mut grown = vec![T::default(); added + values.len()];
            grown[added..].copy_from_slice(values);
            grown
        }
        self.low = prepended(&self.low, added).into_boxed_slice();
        if let Some(high) = &mut self.high {
            **high = prepended(high, added);
        }
    }

    /// Heap memory held, bytes.
    fn heap_bytes(&self) -> usize {
        self.low.len()
            + self.high.as_ref().map_or(0, |high| {
                std::mem::size_of::<Vec<u64>>() + high.capacity() * std::mem::size_of::<u64>()
            })
    }
}

/// The counts of a [`DelayHistogram`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Counts {
    /// Few distinct buckets: (bucket index, count), sorted by index.
    Sparse(Vec<(u32, u64)>),
    /// Many: the counts of buckets `offset .. offset + counts.len()`.
    Dense { offset: usize, counts: DenseCounts },
}

/// Delay histogram being recorded: the bucket counts of [`delay_histogram`], kept compact —
/// a sorted list of (bucket, count) while a flow has used few distinct buckets (a light flow
/// costs a few hundred bytes), then a dense window of counts from its smallest to its largest
/// bucket, grown on demand — plus the exact smallest and largest value. Values above
/// [`HISTOGRAM_MAX_NS`] are kept aside and given to `Histogram::saturating_record` at the
/// end, so that the result is exactly the histogram the values would have made one
/// `saturating_record` at a time.
///
/// What a value touches comes first, in 48 bytes (`repr(C)`): with the largest delay before
/// it, the third cache line of an [`Accumulator`]. (With many flows the engine prefetches the
/// count a value adds to, deliveries ahead: see [`DelayHistogram::note`].)
#[derive(Clone, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct DelayHistogram {
    counts: Counts,
    /// Smallest and largest value counted (`u64::MAX`, 0 while empty).
    min: u64,
    max: u64,
    /// Values above [`HISTOGRAM_MAX_NS`].
    beyond: Vec<u64>,
}

const _: () = assert!(std::mem::offset_of!(DelayHistogram, beyond) <= 48);

impl Default for DelayHistogram {
    fn default() -> Self {
        DelayHistogram::new()
    }
}

impl DelayHistogram {
    /// An empty histogram (no heap memory until the first value).
    pub fn new() -> DelayHistogram {
        DelayHistogram {
            counts: Counts::Sparse(Vec::new()),
            min: u64::MAX,
            max: 0,
            beyond: Vec::new(),
        }
    }

    /// Counts `value` ns (at least 1: HDR's lowest discernible value).
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        let Some(index) = self.extremes_and_bucket(value) else {
            return;
        };
        if let Counts::Dense { offset, counts } = &mut self.counts {
            // The common case of a busy flow: inside the dense window.
            if counts.increment(index.wrapping_sub(*offset)) {
                return;
            }
        }
        self.add_one(index);
    }

    /// What [`DelayHistogram::record`] and [`DelayHistogram::note`] do before the count:
    /// records `value`'s extremes and returns its bucket, or keeps a value beyond the
    /// histogram's range aside and returns `None`.
    #[inline(always)]
    fn extremes_and_bucket(&mut self, value: u64) -> Option<usize> {
        if value > HISTOGRAM_MAX_NS {
            self.beyond.push(value);
            return None;
        }
        let value = value.max(1);
        lower(&mut self.min, value);
        raise(&mut self.max, value);
        Some(bucket_index(value))
    }

    /// [`DelayHistogram::add`] of one value outside the dense window (out of line: the
    /// per-value path stays small).
    #[cold]
    #[inline(never)]
    fn add_one(&mut self, index: usize) {
        self.add(index, 1);
    }

    /// [`DelayHistogram::record`] of `value` but for its count, which the caller adds later
    /// with [`DelayHistogram::count`] of the bucket returned (the extremes, and a value
    /// beyond the histogram's range, are recorded now); starts loading that count. A flow's
    /// counts must be added in the order of its values (the window grows as they come).
    #[inline(always)]
    pub fn note(&mut self, value: u64) -> u32 {
        let Some(index) = self.extremes_and_bucket(value) else {
            return NO_BUCKET;
        };
        if let Counts::Dense { offset, counts } = &self.counts {
            crate::prefetch::prefetch(&counts.low, index.wrapping_sub(*offset), 1);
        }
        index as u32
    }

    /// Adds the count of a value [`DelayHistogram::note`] returned `bucket` for.
    #[inline(always)]
    pub fn count(&mut self, bucket: u32) {
        if bucket == NO_BUCKET {
            return;
        }
        let index = bucket as usize;
        if let Counts::Dense { offset, counts } = &mut self.counts {
            if counts.increment(index.wrapping_sub(*offset)) {
                return;
            }
        }
        self.add_one(index);
    }

    /// Adds `count` to bucket `index`.
    #[inline]
    fn add(&mut self, index: usize, count: u64) {
        match &mut self.counts {
            Counts::Dense { offset, counts } if index >= *offset && index < *offset + counts.len() => {
                counts.add(index - *offset, count);
            }
            Counts::Dense { .. } => {
                self.grow(index);
                self.add(index, count);
            }
            Counts::Sparse(entries) => match entries.binary_search_by_key(&(index as u32), |e| e.0) {
                Ok(at) => entries[at].1 += count,
                Err(at) if entries.len() < SPARSE_MAX => entries.insert(at, (index as u32, count)),
                Err(_) => {
                    self.densify();
                    self.add(index, count);
                }
            },
        }
    }

    /// Turns the sorted list into a dense window over its buckets.
    #[cold]
    fn densify(&mut self) {
        let Counts::Sparse(entries) = &self.counts else {
            return;
        };
        let (first, last) = (entries[0].0 as usize, entries[entries.len() - 1].0 as usize);
        let mut counts = DenseCounts::zeros(last - first + 1);
        for &(index, count) in entries {
            counts.add(index as usize - first, count);
        }
        self.counts = Counts::Dense {
            offset: first,
            counts,
        };
    }

    /// Extends the dense window to cover `index` (at least doubling it, so that it grows a
    /// few times at most, and never beyond the range of [`delay_histogram`]).
    #[cold]
    fn grow(&mut self, index: usize) {
        let Counts::Dense { offset, counts } = &mut self.counts else {
            return;
        };
        let last = bucket_index(HISTOGRAM_MAX_NS);
        let len = counts.len();
        if index >= *offset + len {
            let new_len = (index + 1 - *offset).max(2 * len).min(last + 1 - *offset);
            counts.extend_end(new_len - len);
        } else {
            let new_offset = index.min(offset.saturating_sub(len));
            counts.extend_start(*offset - new_offset);
            *offset = new_offset;
        }
    }

    /// The non-zero buckets: (index, count) in increasing index order.
    fn buckets(&self) -> Box<dyn Iterator<Item = (usize, u64)> + '_> {
        match &self.counts {
            Counts::Sparse(entries) => Box::new(entries.iter().map(|&(i, c)| (i as usize, c))),
            Counts::Dense { offset, counts } => Box::new(
                (0..counts.len())
                    .filter(|&i| counts.is_counted(i))
                    .map(move |i| (offset + i, counts.get(i))),
            ),
        }
    }

    /// Heap memory held, bytes (for the memory estimate and its tests).
    pub fn heap_bytes(&self) -> usize {
        let counts = match &self.counts {
            Counts::Sparse(entries) => entries.capacity() * std::mem::size_of::<(u32, u64)>(),
            Counts::Dense { counts, .. } => counts.heap_bytes(),
        };
        counts + self.beyond.capacity() * std::mem::size_of::<u64>()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.max == 0 && self.beyond.is_empty()
    }

    /// [`DelayHistogram::merge`] of a histogram not needed after it (taken over when nothing
    /// was recorded here, without a copy).
    pub fn merge_owned(&mut self, other: DelayHistogram) {
        if self.is_empty() {
            *self = other;
        } else {
            self.merge(&other);
        }
    }

    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &DelayHistogram) {
        if self.is_empty() {
            // Nothing recorded here: a copy of `other`'s counts.
            *self = other.clone();
            return;
        }
        match (&self.counts, &other.counts) {
            (Counts::Dense { .. }, Counts::Dense { offset, counts }) => self.add_dense(*offset, counts),
            _ => self.add_bucket_by_bucket(other),
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.beyond.extend_from_slice(&other.beyond);
    }

    /// Adds `other`'s bucket counts one at a time, in increasing order.
    fn add_bucket_by_bucket(&mut self, other: &DelayHistogram) {
        other.for_each_bucket(|index, count| self.add(index, count));
    }

    /// Adds the counts of the dense window `counts` of buckets `offset ..` to this dense
    /// window in one pass (where [`DelayHistogram::add`] of each non-empty bucket took a test
    /// and a branch each): first the window grows as those adds, in increasing order, would
    /// have grown it (the same window, so the same histogram), then the counts from the first
    /// non-empty bucket to the last are added by [`DenseCounts::add_counts`] (bytes, their
    /// carries, and the other window's high parts).
    fn add_dense(&mut self, offset: usize, counts: &DenseCounts) {
        let Some(first) = counts.first_counted_from(0) else {
            return;
        };
        let last = counts.last_counted().expect("a non-empty bucket");
        if let Counts::Dense { offset: mine, .. } = &self.counts {
            if offset + first < *mine {
                self.grow(offset + first);
            }
        }
        loop {
            let Counts::Dense {
                offset: mine,
                counts: own,
            } = &self.counts
            else {
                unreachable!("a dense window stays dense");
            };
            let end = *mine + own.len();
            // The first non-empty bucket beyond the window, if any: where an add grows it.
            let beyond = end
                .checked_sub(offset)
                .map_or(Some(first), |from| counts.first_counted_from(from.max(first)));
            match beyond {
                Some(at) => self.grow(offset + at),
                None => break,
            }
        }
        let Counts::Dense {
            offset: mine,
            counts: own,
        } = &mut self.counts
        else {
            unreachable!("a dense window stays dense");
        };
        own.add_counts(offset + first - *mine, counts, first, last - first + 1);
    }

    /// Calls `f(index, count)` for every non-empty bucket, in increasing order.
    #[inline]
    fn for_each_bucket(&self, mut f: impl FnMut(usize, u64)) {
        match &self.counts {
            Counts::Sparse(entries) => entries
                .iter()
                .for_each(|&(index, count)| f(index as usize, count)),
            Counts::Dense { offset, counts } => {
                // A dense window is mostly empty buckets (it spans a flow's delays at 3
                // significant digits, and grows by doubling): runs of 8 empty ones are skipped
                // with one test of their sum.
                for k in 0..counts.runs() {
                    if counts.run_sum(k) != 0 {
                        for i in counts.run(k) {
                            if counts.is_counted(i) {
                                f(offset + i, counts.get(i));
                            }
                        }
                    }
                }
            }
        }
    }

    /// Values in the buckets (those beyond the range not included).
    fn bucket_total(&self) -> u64 {
        match &self.counts {
            Counts::Sparse(entries) => entries.iter().map(|&(_, count)| count).sum(),
            Counts::Dense { counts, .. } => counts.total(),
        }
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.bucket_total() + self.beyond.len() as u64
    }

    /// The values at `quantiles` (each 0 to 1, in any order): what `hdrhistogram`'s
    /// `value_at_quantile` gives for [`DelayHistogram::to_hdr`] (the highest value of the
    /// bucket where the count of values up to it first reaches ⌈quantile · total⌉, at least
    /// 1; the lowest at quantile 0; 0 when empty), in one pass over the buckets, without
    /// building the full-range histogram.
    pub fn values_at_quantiles<const N: usize>(&self, quantiles: [f64; N]) -> [u64; N] {
        if !self.beyond.is_empty() {
            // Values beyond the range go where `saturating_record` puts them.
            let histogram = self.to_hdr();
            return quantiles.map(|q| histogram.value_at_quantile(q));
        }
        let quantiles = quantiles.map(|q| q.min(1.0));
        let total = self.bucket_total();
        let targets = quantiles.map(|q| ((q * total as f64).ceil() as u64).max(1));
        let mut values = [0; N];
        let mut found = [false; N];
        // The smallest target not yet reached (`u64::MAX` once all are).
        let mut next = targets.iter().copied().min().unwrap_or(u64::MAX);
        let mut so_far = 0u64;
        // Bucket `index` took the count of values up to it to `so_far >= next`: it answers
        // every target not yet reached that `so_far` reaches.
        let mut reached = |index: usize, so_far: u64, next: &mut u64| {
            *next = u64::MAX;
            for j in 0..N {
                if found[j] {
                    continue;
                }
                if so_far >= targets[j] {
                    found[j] = true;
                    values[j] = if quantiles[j] == 0.0 {
                        bucket_value(index)
                    } else {
                        bucket_highest(index)
                    };
                } else {
                    *next = (*next).min(targets[j]);
                }
            }
        };
        match &self.counts {
            Counts::Sparse(entries) => {
                for &(index, count) in entries {
                    so_far += count;
                    if so_far >= next {
                        reached(index as usize, so_far, &mut next);
                    }
                }
            }
            Counts::Dense { offset, counts } => {
                // A run of buckets whose sum leaves the count below the next target is passed
                // with one test (only the few runs where a target is reached are looked into),
                // and the scan stops once every target is reached.
                for k in 0..counts.runs() {
                    let sum = counts.run_sum(k);
                    if so_far + sum < next {
                        so_far += sum;
                        continue;
                    }
                    for i in counts.run(k) {
                        let count = counts.get(i);
                        so_far += count;
                        if count > 0 && so_far >= next {
                            reached(offset + i, so_far, &mut next);
                        }
                    }
                    if next == u64::MAX {
                        break;
                    }
                }
            }
        }
        values
    }

    /// The value at `quantile`: [`DelayHistogram::values_at_quantiles`] of one.
    pub fn value_at_quantile(&self, quantile: f64) -> u64 {
        self.values_at_quantiles([quantile])[0]
    }

    /// Calls `point(value, cdf)` for every non-empty bucket in increasing order, with its
    /// highest value and the fraction of the values up to it: what `hdrhistogram`'s
    /// `iter_recorded` gives for [`DelayHistogram::to_hdr`] (`value_iterated_to`,
    /// `quantile_iterated_to`), without building the full-range histogram.
    pub fn for_each_recorded<E>(&self, mut point: impl FnMut(u64, f64) -> Result<(), E>) -> Result<(), E> {
        if !self.beyond.is_empty() {
            let histogram = self.to_hdr();
            for v in histogram.iter_recorded() {
                point(v.value_iterated_to(), v.quantile_iterated_to())?;
            }
            return Ok(());
        }
        let total = self.bucket_total();
        let mut so_far = 0u64;
        let mut result = Ok(());
        self.for_each_bucket(|index, count| {
            so_far += count;
            if result.is_ok() {
                result = point(bucket_highest(index), so_far as f64 / total as f64);
            }
        });
        result
    }

    /// The points of a CDF drawn in steps of at least `step`: calls `point(value, cdf)`, in
    /// increasing order, for every non-empty bucket but the last whose CDF (as
    /// [`DelayHistogram::for_each_recorded`] gives it) has risen by at least `step` since the
    /// last point given (from 0), and for the last bucket. The points are those of filtering
    /// [`DelayHistogram::for_each_recorded`] so; a dense window is scanned a run of buckets at
    /// a time, and a run whose CDF at its end has not risen by `step` is passed with one
    /// division instead of one per bucket (the CDF only rises, so none of its buckets is a
    /// point; its last non-empty bucket waits, as any bucket does, for the next one).
    pub fn for_each_cdf_step<E>(
        &self,
        step: f64,
        mut point: impl FnMut(u64, f64) -> Result<(), E>,
    ) -> Result<(), E> {
        let Counts::Dense { offset, counts } = &self.counts else {
            return self.cdf_steps_of_recorded(step, point);
        };
        if !self.beyond.is_empty() {
            return self.cdf_steps_of_recorded(step, point);
        }
        let values = self.bucket_total();
        let total = values as f64;
        let cdf = |up_to: u64| up_to as f64 / total;
        let mut last_written = 0.0;
        // The last non-empty bucket seen and the count up to it: a point if, when a later
        // non-empty bucket is seen, its CDF has risen by `step`; always if none is.
        let mut pending: Option<(usize, u64)> = None;
        let mut so_far = 0u64;
        for k in 0..counts.runs() {
            let sum = counts.run_sum(k);
            if sum == 0 {
                continue;
            }
            if let Some((index, up_to)) = pending.take() {
                if cdf(up_to) - last_written >= step {
                    last_written = cdf(up_to);
                    point(bucket_highest(index), last_written)?;
                }
            }
            let end = so_far + sum;
            if cdf(end) - last_written < step {
                pending = Some((offset + counts.last_counted_in_run(k), end));
                so_far = end;
                if so_far == values {
                    // Every value passed: the runs left are empty.
                    break;
                }
                continue;
            }
            for i in counts.run(k) {
                let count = counts.get(i);
                if count == 0 {
                    continue;
                }
                so_far += count;
                if let Some((index, up_to)) = pending.replace((offset + i, so_far)) {
                    if cdf(up_to) - last_written >= step {
                        last_written = cdf(up_to);
                        point(bucket_highest(index), last_written)?;
                    }
                }
            }
            if so_far == values {
                break;
            }
        }
        if let Some((index, up_to)) = pending {
            point(bucket_highest(index), cdf(up_to))?;
        }
        Ok(())
    }

    /// [`DelayHistogram::for_each_cdf_step`] by filtering every point of
    /// [`DelayHistogram::for_each_recorded`] (a sorted list, values beyond the range, and the
    /// tests' model).
    fn cdf_steps_of_recorded<E>(
        &self,
        step: f64,
        mut point: impl FnMut(u64, f64) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut last_written = 0.0;
        let mut last = None;
        self.for_each_recorded(|value, cdf| {
            // Each bucket is a point, or not, once the next is seen (the last one always).
            if let Some((value, cdf)) = last.replace((value, cdf)) {
                if cdf - last_written >= step {
                    last_written = cdf;
                    point(value, cdf)?;
                }
            }
            Ok(())
        })?;
        if let Some((value, cdf)) = last {
            point(value, cdf)?;
        }
        Ok(())
    }

    /// The `hdrhistogram` histogram of the same values (equal to recording each with
    /// `saturating_record` into [`delay_histogram`]: same counts, total, minimum and maximum).
    /// It holds the full range (a few hundred kB): make one at a time.
    pub fn to_hdr(&self) -> Histogram<u64> {
        let mut histogram = delay_histogram();
        let (min_index, max_index) = (bucket_index(self.min.max(1)), bucket_index(self.max.max(1)));
        for (index, count) in self.buckets() {
            // Any value of the bucket counts the same; the exact extremes keep the
            // histogram's minimum and maximum exact.
            let mut record = |value: u64, n: u64| {
                histogram
                    .record_n(value, n)
                    .expect("values up to HISTOGRAM_MAX_NS are in range");
            };
            if index == min_index && index == max_index && self.min != self.max {
                record(self.min, 1);
                record(self.max, count - 1);
            } else if index == min_index {
                record(self.min, count);
            } else if index == max_index {
                record(self.max, count);
            } else {
                record(bucket_value(index), count);
            }
        }
        for &value in &self.beyond {
            histogram.saturating_record(value);
        }
        histogram
    }
}

/// Delays delivered and not yet counted in their flows' histograms, the [`DEFERRED_DELAYS`]
/// latest, oldest first, as (flow, bucket): with many flows the count a delay adds to is a
/// cache miss (a byte of one of several MB of dense windows), so the engine starts loading it
/// at the delivery ([`DelayHistogram::note`]) and counts it ([`DelayHistogram::count`])
/// [`DEFERRED_DELAYS`] deliveries later. A ring of fixed length: each delivery takes the
/// place of the oldest waiting delay, which it hands back to be counted (each flow's delays
/// reach its histogram in their order).
#[derive(Debug)]
pub(crate) struct DeferredDelays {
    /// (flow, bucket), the oldest at `oldest` and the others after it round the ring;
    /// [`DeferredDelays::NO_FLOW`] marks a place not yet taken.
    waiting: [(u32, u32); DEFERRED_DELAYS],
    oldest: usize,
}

/// Deliveries between a delay and its count in the flow's histogram (a power of two).
pub(crate) const DEFERRED_DELAYS: usize = 8;

const _: () = assert!(DEFERRED_DELAYS.is_power_of_two());

impl Default for DeferredDelays {
    fn default() -> Self {
        DeferredDelays {
            waiting: [(DeferredDelays::NO_FLOW, 0); DEFERRED_DELAYS],
            oldest: 0,
        }
    }
}

impl DeferredDelays {
    /// The flow of a place not yet taken.
    pub const NO_FLOW: u32 = u32::MAX;

    /// Puts the delay of `flow` counted in `bucket` in the place of the oldest waiting one and
    /// returns that one (flow, bucket), its flow [`DeferredDelays::NO_FLOW`] in the first
    /// [`DEFERRED_DELAYS`] calls.
    #[inline(always)]
    pub fn replace_oldest(&mut self, flow: u32, bucket: u32) -> (u32, u32) {
        let oldest = self.oldest;
        // SAFETY: `oldest` is below `DEFERRED_DELAYS` (masked below, 0 at first).
        let place = unsafe { self.waiting.get_unchecked_mut(oldest) };
        let handed_back = *place;
        *place = (flow, bucket);
        self.oldest = (oldest + 1) & (DEFERRED_DELAYS - 1);
        handed_back
    }

    /// Takes every waiting delay, oldest first.
    pub fn drain(&mut self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let oldest = self.oldest;
        self.oldest = 0;
        let waiting = std::mem::replace(&mut self.waiting, [(DeferredDelays::NO_FLOW, 0); DEFERRED_DELAYS]);
        (0..DEFERRED_DELAYS)
            .map(move |i| waiting[(oldest + i) & (DEFERRED_DELAYS - 1)])
            .filter(|&(flow, _)| flow != DeferredDelays::NO_FLOW)
    }
}

/// Receive-gap (jitter) and delay-variation statistics of one flow or class. Updated in
/// reception order, so it cannot be merged after the fact.
///
/// 80 bytes: with the other fields a received packet touches, two cache lines of an
/// [`Accumulator`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Jitter {
    /// Sum of receive gaps, ns. A `u64` for any run: the gaps are differences of successive
    /// reception times, which come in time order, so the sum telescopes to the last
    /// reception's time less the first's, both [`TimeNs`] (`u64` ns): at most `u64::MAX`.
    pub gap_sum: u64,
    /// Sum of squared receive gaps, ns².
    pub gap_square_sum: u128,
    /// Sum of |D_k − D_{k−1}|, ns.
    pub ipdv_sum: u128,
    /// Largest receive gap, ns.
    pub gap_max: u64,
    /// Receptions so far (one more than the gaps, once there is one).
    receptions: u64,
    /// Time and delay of the previous reception (when `receptions > 0`).
    last_receive: TimeNs,
    last_delay: u64,
}

impl Jitter {
    /// A packet was received at `now` after `delay` ns.
    #[inline(always)]
    pub fn on_received(&mut self, now: TimeNs, delay: u64) {
        if self.receptions > 0 {
            let gap = now - self.last_receive;
            self.gap_sum += gap;
            self.gap_square_sum += gap as u128 * gap as u128;
            raise(&mut self.gap_max, gap);
            self.ipdv_sum += self.last_delay.abs_diff(delay) as u128;
        }
        self.receptions += 1;
        self.last_receive = now;
        self.last_delay = delay;
    }

    /// Number of receive gaps.
    #[inline]
    pub fn gap_count(&self) -> u64 {
        self.receptions.saturating_sub(1)
    }
}

/// Accumulated statistics of one flow or one class over the measurement window.
///
/// What a packet touches is in the first three cache lines (`align(64)` puts the first on a
/// line boundary): a sent packet the first line (`sent`, `sent_bytes`; the shaping delay sum,
/// after the three, only when it waited in a shaper), a received packet the first two lines
/// (the counts, sums and jitter) and the third (the largest delay and the delay histogram's
/// per-value fields). The engine prefetches [`Accumulator::RECEIVED_BYTES`] of a flow's
/// accumulator ahead of its deliveries and its first line ahead of its emissions; with many
/// flows each line is otherwise a miss.
#[derive(Clone, Debug, Default)]
#[repr(C, align(64))]
pub struct Accumulator {
    /// Of those sent, packets delivered.
    pub received: u64,
    /// Their bytes.
    pub received_bytes: u64,
    /// Sum of one-way delays, ns.
    pub delay_sum: u128,
    /// Packets that entered the network in the window.
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Receive gaps and delay variation.
    pub jitter: Jitter,
    /// Largest one-way delay, ns.
    pub delay_max: u64,
    /// Delay histogram, ns.
    pub delay: DelayHistogram,
    /// Sum of shaping delays of the packets sent, ns.
    pub shaper_delay_sum: u128,
    /// Of those, packets dropped, by [`DropReason`] order.
    pub dropped: [u64; DropReason::COUNT],
    /// Bytes dropped.
    pub dropped_bytes: u64,
    /// Of those, packets lost on a link (its `loss` probability), after transmission.
    pub lost: u64,
    /// Round trips of delivered packets whose echo came back (open-loop sources with a
    /// return path).
    pub rtt_samples: u64,
    /// Sum of their round-trip times, ns.
    pub rtt_sum: u128,
}

// The layout the comment above describes.
const _: () = {
    assert!(std::mem::offset_of!(Accumulator, sent_bytes) + 8 <= 64);
    assert!(std::mem::offset_of!(Accumulator, jitter) + std::mem::size_of::<Jitter>() <= 128);
    assert!(std::mem::offset_of!(Accumulator, delay_max) >= 128);
    assert!(std::mem::offset_of!(Accumulator, delay) + std::mem::offset_of!(DelayHistogram, beyond) <= 192);
};

impl Accumulator {
    /// Bytes from the start that [`Accumulator::on_received`] touches (besides the delay
    /// histogram's counts).
    pub const RECEIVED_BYTES: usize = 192;

    /// A measured packet entered the network after `shaping` ns in the shaper.
    #[inline]
    pub fn on_sent(&mut self, size: u32, shaping: TimeNs) {
        self.sent += 1;
        self.sent_bytes += size as u64;
        if shaping > 0 {
            // (Its line is not touched by the packets of a source without a shaper.)
            self.shaper_delay_sum += shaping as u128;
        }
    }

    /// A measured packet was delivered at `now` after `delay` ns.
    #[inline(always)]
    pub fn on_received(&mut self, size: u32, now: TimeNs, delay: u64) {
        self.on_received_except_histogram(size, now, delay);
        self.delay.record(delay);
    }

    /// [`Accumulator::on_received`] but for the delay histogram, which the caller records
    /// itself (later: the engine defers it to hide a cache miss).
    #[inline]
    pub fn on_received_except_histogram(&mut self, size: u32, now: TimeNs, delay: u64) {
        self.received += 1;
        self.received_bytes += size as u64;
        self.delay_sum += delay as u128;
        raise(&mut self.delay_max, delay);
        self.jitter.on_received(now, delay);
    }

    /// A measured packet was dropped.
    #[inline]
    pub fn on_dropped(&mut self, size: u32, reason: DropReason) {
        self.dropped[reason as usize] += 1;
        self.dropped_bytes += size as u64;
    }

    /// The echo of a measured packet came back `rtt` ns after the packet entered the network.
    #[inline]
    pub fn on_round_trip(&mut self, rtt: u64) {
        self.rtt_samples += 1;
        self.rtt_sum += rtt as u128;
    }

    /// A measured packet was lost on a link after its transmission.
    #[inline]
    pub fn on_lost(&mut self) {
        self.lost += 1;
    }

    /// Packets dropped for any reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Adds `other`'s counts, sums, maxima and histogram (not its jitter, which depends on
    /// the interleaving of receptions).
    pub fn merge_counts(&mut self, other: &Accumulator) {
        self.sent += other.sent;
        self.sent_bytes += other.sent_bytes;
        self.received += other.received;
        self.received_bytes += other.received_bytes;
        for (mine, theirs) in self.dropped.iter_mut().zip(other.dropped) {
            *mine += theirs;
        }
        self.dropped_bytes += other.dropped_bytes;
        self.lost += other.lost;
        self.delay_sum += other.delay_sum;
        self.delay_max = self.delay_max.max(other.delay_max);
        self.delay.merge(&other.delay);
        self.shaper_delay_sum += other.shaper_delay_sum;
        self.rtt_samples += other.rtt_samples;
        self.rtt_sum += other.rtt_sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The histogram `values` make when recorded one at a time, as the engine used to.
    fn recorded_one_by_one(values: &[u64]) -> Histogram<u64> {
        let mut histogram = delay_histogram();
        for &v in values {
            histogram.saturating_record(v.max(1));
        }
        histogram
    }

    fn via_delay_histogram(values: &[u64]) -> Histogram<u64> {
        let mut histogram = DelayHistogram::new();
        for &v in values {
            histogram.record(v);
        }
        histogram.to_hdr()
    }

    /// `Debug` shows every field of `hdrhistogram::Histogram`, including the exact minimum
    /// and maximum that `PartialEq` compares only up to bucket resolution.
    fn assert_identical(a: &Histogram<u64>, b: &Histogram<u64>) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn bucket_edges_match_hdr() {
        let hdr = delay_histogram();
        // Bucket 0 holds 0..2048 one value per sub-bucket; bucket k ≥ 1 holds
        // [1024·2^k, 2048·2^k) in sub-buckets 2^k wide.
        for value in [
            1,
            2,
            1023,
            1024,
            2047,
            2048,
            2049,
            4095,
            4096,
            1 << 20,
            (1 << 20) + 1,
            HISTOGRAM_MAX_NS,
        ] {
            let index = bucket_index(value);
            assert_eq!(bucket_value(index), hdr.lowest_equivalent(value), "value {value}");
            assert_eq!(
                bucket_index(hdr.highest_equivalent(value)),
                index,
                "value {value}"
            );
            assert_eq!(
                bucket_index(hdr.highest_equivalent(value) + 1),
                index + 1,
                "value {value}"
            );
        }
        assert_eq!(bucket_index(2047), 2047);
        assert_eq!(bucket_index(2048), 2048);
        assert_eq!(bucket_index(2050), 2049);
        assert_eq!(bucket_index(4096), 3072);
    }

    #[test]
    fn empty_and_extreme_values_match_hdr() {
        assert_identical(&via_delay_histogram(&[]), &recorded_one_by_one(&[]));
        let values = [0, 0, 5, HISTOGRAM_MAX_NS, HISTOGRAM_MAX_NS + 1, u64::MAX, 3];
        assert_identical(&via_delay_histogram(&values), &recorded_one_by_one(&values));
        let only_beyond = [HISTOGRAM_MAX_NS * 2];
        assert_identical(
            &via_delay_histogram(&only_beyond),
            &recorded_one_by_one(&only_beyond),
        );
        let same = [777_777; 5];
        assert_identical(&via_delay_histogram(&same), &recorded_one_by_one(&same));
    }

    #[test]
    fn a_light_flow_costs_little_memory_and_a_heavy_one_goes_dense() {
        let mut light = DelayHistogram::new();
        assert_eq!(light.heap_bytes(), 0);
        for k in 0..20 {
            light.record(1_000_000 + k * 250_000); // 20 packets, 1 to 6 ms
        }
        assert!(light.heap_bytes() <= 1024, "{} bytes", light.heap_bytes());
        let values: Vec<u64> = (0..5000).map(|k| 1_000 + k * 7_919).collect();
        let mut heavy = DelayHistogram::new();
        values.iter().for_each(|&v| heavy.record(v));
        assert!(matches!(heavy.counts, Counts::Dense { .. }));
        assert_identical(&heavy.to_hdr(), &recorded_one_by_one(&values));
        // Growing downwards keeps every count.
        let mut down = DelayHistogram::new();
        let falling: Vec<u64> = (0..3000).rev().map(|k| 50 + k * 31_337).collect();
        falling.iter().for_each(|&v| down.record(v));
        assert_identical(&down.to_hdr(), &recorded_one_by_one(&falling));
    }

    /// [`DelayHistogram::value_at_quantile`] and [`DelayHistogram::for_each_recorded`] give
    /// what `hdrhistogram` gives for the full-range histogram.
    fn assert_same_quantiles_and_cdf(histogram: &DelayHistogram) {
        let hdr = histogram.to_hdr();
        assert_eq!(histogram.len(), hdr.len());
        for q in [0.0, 1e-9, 0.1, 0.5, 0.95, 0.99, 0.999, 0.9999, 1.0, 1.5] {
            assert_eq!(
                histogram.value_at_quantile(q),
                hdr.value_at_quantile(q),
                "quantile {q}"
            );
        }
        let mut points = Vec::new();
        histogram
            .for_each_recorded(|value, cdf| {
                points.push((value, cdf));
                Ok::<(), ()>(())
            })
            .unwrap();
        let expected: Vec<(u64, f64)> = hdr
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.quantile_iterated_to()))
            .collect();
        assert_eq!(points, expected);
        for &(value, _) in &points {
            assert_eq!(hdr.highest_equivalent(value), value);
        }
        // Several quantiles at once, in any order, give each one's value.
        let quantiles = [0.999, 0.0, 0.5, 1.0, 0.95, 1e-9, 0.5, 0.99];
        let expected = quantiles.map(|q| hdr.value_at_quantile(q));
        assert_eq!(histogram.values_at_quantiles(quantiles), expected);
        // The CDF in steps: the points of filtering every recorded point.
        for step in [0.0, 1e-4, 0.005, 0.02, 0.3, 2.0] {
            let (mut fast, mut model) = (Vec::new(), Vec::new());
            histogram
                .for_each_cdf_step(step, |value, cdf| {
                    fast.push((value, cdf));
                    Ok::<(), ()>(())
                })
                .unwrap();
            histogram
                .cdf_steps_of_recorded(step, |value, cdf| {
                    model.push((value, cdf));
                    Ok::<(), ()>(())
                })
                .unwrap();
            assert_eq!(fast, model, "step {step}");
        }
    }

    #[test]
    fn quantiles_and_cdf_without_the_full_histogram() {
        assert_same_quantiles_and_cdf(&DelayHistogram::new());
        let values: Vec<u64> = (0..5000u64)
            .map(|k| (k * 7919) % 40_000_000 + (k % 3) * 1_000_000_000)
            .collect();
        let mut dense = DelayHistogram::new();
        values.iter().for_each(|&v| dense.record(v));
        assert_same_quantiles_and_cdf(&dense);
        let mut sparse = DelayHistogram::new();
        [0, 1, 2, 2047, 2048, 2049, 4095, 4096, 1_000_000]
            .iter()
            .for_each(|&v| sparse.record(v));
        assert_same_quantiles_and_cdf(&sparse);
        sparse.record(HISTOGRAM_MAX_NS + 12_345);
        assert_same_quantiles_and_cdf(&sparse);
        // Dense windows with long empty stretches, heavy buckets and many light ones (the
        // runs a scan passes over at once, and those where a quantile or a point falls).
        let mut lumpy = DelayHistogram::new();
        for k in 0..20_000u64 {
            let value = match k % 7 {
                0 => 5_000_000,
                1 | 2 => 2_000_000 + (k * 104_729) % 3_000_000,
                _ => 40_000 + (k * 7919) % 200_000,
            };
            lumpy.record(value);
        }
        assert_same_quantiles_and_cdf(&lumpy);
    }

    #[test]
    fn values_count_in_equality_merge_and_output() {
        let values: Vec<u64> = (0..13).map(|k| 1_000_000 + k * 40_000).collect();
        let mut recorded = DelayHistogram::new();
        values.iter().for_each(|&v| recorded.record(v));
        let mut merged = DelayHistogram::new();
        merged.merge(&recorded);
        assert_eq!(merged, recorded);
        let mut fewer = DelayHistogram::new();
        values[..12].iter().for_each(|&v| fewer.record(v));
        assert_ne!(fewer, recorded);
        assert_identical(&recorded.to_hdr(), &recorded_one_by_one(&values));
        assert_eq!(recorded.to_hdr().len(), 13);
    }

    /// Counts of 256 and more (a byte's carries into `high`), in one bucket and in several,
    /// recorded, merged in both orders and read back as `hdrhistogram` gives them.
    #[test]
    fn counts_beyond_a_byte_carry() {
        let mut values: Vec<u64> = (0..3_000u64)
            .map(|k| 2_000_000 + (k * 7919) % 5_000_000)
            .collect();
        values.extend(std::iter::repeat_n(2_808_000, 70_000));
        values.extend((0..1_000u64).flat_map(|k| std::iter::repeat_n(3_000_000 + k * 4_096, 300)));
        let mut heavy = DelayHistogram::new();
        values.iter().for_each(|&v| heavy.record(v));
        let Counts::Dense { offset, counts } = &heavy.counts else {
            panic!("a dense window");
        };
        assert!(counts.high.is_some());
        assert_eq!(counts.get(bucket_index(2_808_000) - offset), 70_000 + 1);
        assert_identical(&heavy.to_hdr(), &recorded_one_by_one(&values));
        assert_same_quantiles_and_cdf(&heavy);
        // Merged into a window without carries, and the reverse.
        let light_values: Vec<u64> = (0..2_000u64).map(|k| 1_500_000 + k * 3_331).collect();
        let mut light = DelayHistogram::new();
        light_values.iter().for_each(|&v| light.record(v));
        let all: Vec<u64> = values.iter().chain(&light_values).copied().collect();
        for (mut into, from) in [(heavy.clone(), &light), (light.clone(), &heavy)] {
            into.merge(from);
            assert_identical(&into.to_hdr(), &recorded_one_by_one(&all));
            assert_same_quantiles_and_cdf(&into);
        }
    }

    /// [`DenseCounts::add_counts`] of `n` counts of `theirs` from `from` at `at` of `own`
    /// (each index taken modulo what fits) reads as `u64` counts added one by one; with
    /// `bytes_only`, `theirs` must have made a window without high parts.
    fn check_add_counts(
        own: &[u64],
        theirs: &[u64],
        at: usize,
        from: usize,
        n: usize,
        bytes_only: bool,
    ) -> Result<(), TestCaseError> {
        let make = |values: &[u64]| {
            let mut counts = DenseCounts::zeros(values.len());
            values.iter().enumerate().for_each(|(i, &c)| counts.add(i, c));
            counts
        };
        let (mut counts, other) = (make(own), make(theirs));
        if bytes_only {
            prop_assert!(other.high.is_none());
        }
        let from = from % theirs.len();
        let at = at % own.len();
        let n = n % ((own.len() - at).min(theirs.len() - from) + 1);
        counts.add_counts(at, &other, from, n);
        let mut model = own.to_vec();
        for k in 0..n {
            model[at + k] += theirs[from + k];
        }
        let read: Vec<u64> = (0..counts.len()).map(|i| counts.get(i)).collect();
        prop_assert_eq!(read, model);
        Ok(())
    }

    proptest! {
        /// [`DenseCounts`] holds the counts a `u64` array would: after random increments
        /// (many of one bucket, so that bytes carry), adds of any size and growth at either
        /// end, every count, run sum, total and search agrees with the array's.
        #[test]
        fn dense_counts_as_u64_counts(
            len in 1usize..40,
            steps in prop::collection::vec((0u8..4, any::<u64>(), 0u32..700), 1..60),
        ) {
            let mut counts = DenseCounts::zeros(len);
            let mut model = vec![0u64; len];
            for (kind, at, n) in steps {
                let i = (at % model.len() as u64) as usize;
                match kind {
                    0 => {
                        for _ in 0..n {
                            prop_assert!(counts.increment(i));
                            model[i] += 1;
                        }
                    }
                    1 => {
                        let n = u64::from(n) << (at % 40);
                        counts.add(i, n);
                        model[i] += n;
                    }
                    2 => {
                        let added = n as usize % 9;
                        counts.extend_end(added);
                        model.resize(model.len() + added, 0);
                    }
                    _ => {
                        let added = n as usize % 9;
                        counts.extend_start(added);
                        model.splice(0..0, std::iter::repeat_n(0, added));
                    }
                }
                prop_assert!(!counts.increment(model.len()));
                prop_assert_eq!(counts.len(), model.len());
                let read: Vec<u64> = (0..counts.len()).map(|i| counts.get(i)).collect();
                prop_assert_eq!(&read, &model);
                for k in 0..counts.runs() {
                    prop_assert_eq!(counts.run_sum(k), model[counts.run(k)].iter().sum::<u64>());
                    if let Some(last) = counts.run(k).rev().find(|&i| model[i] > 0) {
                        prop_assert_eq!(counts.last_counted_in_run(k), last);
                    }
                }
                prop_assert_eq!(counts.runs(), model.len().div_ceil(DENSE_RUN));
                prop_assert_eq!(counts.total(), model.iter().sum::<u64>());
                prop_assert_eq!(counts.last_counted(), model.iter().rposition(|&c| c > 0));
                let from = (at % (model.len() as u64 + 2)) as usize;
                let first = model.get(from..).and_then(|rest| rest.iter().position(|&c| c > 0).map(|p| from + p));
                prop_assert_eq!(counts.first_counted_from(from), first);
                let mut same = DenseCounts::zeros(model.len());
                model.iter().enumerate().for_each(|(i, &c)| same.add(i, c));
                prop_assert_eq!(&same, &counts);
            }
        }

        /// [`DenseCounts::add_counts`] adds a range of another window's counts as `u64`
        /// counts would, with carries of the bytes and the other window's high parts.
        #[test]
        fn dense_counts_add_as_u64_counts(
            own in prop::collection::vec(prop_oneof![0u64..256, 0u64..1_000, Just(255)], 1..30),
            theirs in prop::collection::vec(prop_oneof![0u64..256, 0u64..100_000, Just(1)], 1..30),
            at in any::<usize>(),
            from in any::<usize>(),
            n in any::<usize>(),
        ) {
            check_add_counts(&own, &theirs, at, from, n, false)?;
        }

        /// [`DenseCounts::add_counts`] of a window without high parts (its eight-bytes-a-word
        /// path), over ranges of several words whose bytes carry, as `u64` counts would.
        #[test]
        fn dense_counts_add_bytes_as_u64_counts(
            own in prop::collection::vec(prop_oneof![0u64..256, 200u64..256, 0u64..2_000], 1..80),
            theirs in prop::collection::vec(prop_oneof![0u64..256, 128u64..256], 1..80),
            at in any::<usize>(),
            from in any::<usize>(),
            n in any::<usize>(),
        ) {
            check_add_counts(&own, &theirs, at, from, n, true)?;
        }

        /// Recording through `DelayHistogram` gives exactly the histogram of recording each
        /// value into `hdrhistogram` (counts, total, exact minimum and maximum), also after
        /// merging, whatever the spread of values.
        #[test]
        fn same_histogram_as_recording_one_by_one(
            a in prop::collection::vec(
                prop_oneof![0u64..4096, 0u64..10_000_000, 0u64..HISTOGRAM_MAX_NS * 2, Just(u64::MAX)],
                0..200,
            ),
            b in prop::collection::vec(0u64..100_000_000_000, 0..50),
        ) {
            assert_identical(&via_delay_histogram(&a), &recorded_one_by_one(&a));
            let mut left = DelayHistogram::new();
            a.iter().for_each(|&v| left.record(v));
            let mut right = DelayHistogram::new();
            b.iter().for_each(|&v| right.record(v));
            left.merge(&right);
            let all: Vec<u64> = a.iter().chain(&b).copied().collect();
            assert_identical(&left.to_hdr(), &recorded_one_by_one(&all));
            prop_assert_eq!(left.is_empty(), all.is_empty());
            assert_same_quantiles_and_cdf(&left);
            assert_same_quantiles_and_cdf(&right);
        }

        /// Merging two dense windows adds them as slices: the same histogram (window included)
        /// as adding the other's buckets one at a time.
        #[test]
        fn dense_merge_as_bucket_by_bucket(
            a in prop::collection::vec((1_000u64..20_000_000, 1u64..3_000_000), 1..4),
            b in prop::collection::vec((1_000u64..20_000_000, 1u64..3_000_000), 1..4),
            n in 130usize..1_500,
            m in 130usize..1_500,
            seed in any::<u64>(),
        ) {
            let mut x = seed | 1;
            let mut fill = |clusters: &[(u64, u64)], n: usize| {
                let mut histogram = DelayHistogram::new();
                for k in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let (centre, spread) = clusters[k % clusters.len()];
                    histogram.record(centre + x % spread);
                }
                histogram
            };
            let (left, right) = (fill(&a, n), fill(&b, m));
            // Sparse histograms merge bucket by bucket themselves: only dense ones test the
            // slice addition.
            prop_assume!(
                matches!(left.counts, Counts::Dense { .. }) && matches!(right.counts, Counts::Dense { .. })
            );
            for (into, from) in [(&left, &right), (&right, &left)] {
                let mut fast = into.clone();
                fast.merge(from);
                let mut model = into.clone();
                model.add_bucket_by_bucket(from);
                model.min = model.min.min(from.min);
                model.max = model.max.max(from.max);
                prop_assert_eq!(&fast, &model);
            }
        }

        /// Dense windows of a few thousand values clustered around a few delays (counts of
        /// several per bucket, empty stretches between): quantiles and CDF steps as
        /// `hdrhistogram` and the filter of every point give them.
        #[test]
        fn dense_quantiles_and_cdf_steps(
            centres in prop::collection::vec(1_000u64..50_000_000, 1..4),
            spread in 1u64..2_000_000,
            n in 200usize..3_000,
            seed in any::<u64>(),
        ) {
            let mut histogram = DelayHistogram::new();
            let mut x = seed | 1;
            for k in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                histogram.record(centres[k % centres.len()] + x % spread);
            }
            assert_same_quantiles_and_cdf(&histogram);
        }
    }
}
