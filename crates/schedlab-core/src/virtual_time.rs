//! Fixed-point virtual time for the fair-queueing family (`wfq`, `scfq`, `stfq`,
//! `virtual_clock`, `wf2q_plus`).
//!
//! A [`VirtualTime`] is an unsigned binary fixed-point number: the raw `u128` counts units of
//! 2^-[`FRACTION_BITS`] (2^-32). What a unit of the integer part means is up to the discipline:
//! bytes per unit of weight for the weighted disciplines (a tag `F = S + L/w` with `L` in bytes
//! and `w` the flow's weight), nanoseconds for Virtual Clock's `auxVC`.
//!
//! Why fixed point: decisions compare tags, and floating-point tags (as in ns.py) make two tags
//! that are equal on paper compare unequal depending on the order of the additions. Here every
//! operation is an exact integer operation with one documented rounding:
//! * [`VirtualTime::ratio_ceil`] (`L/w`, `L/r`) rounds **up** to the next 2^-32, so a packet's
//!   tag increment is never smaller than its exact value; increments that are exact multiples
//!   of 2^-32 (any `L/w` with `w` a power of two, any integer) are exact;
//! * sums and comparisons are exact.
//!
//! Range: the integer part has 96 bits, so a virtual time cannot overflow in practice (2^96
//! bytes per unit weight); arithmetic saturates rather than wrapping or panicking.

use std::fmt;

use crate::time::{Rate, NANOS_PER_SECOND};

/// Number of fractional bits of [`VirtualTime`].
pub const FRACTION_BITS: u32 = 32;

/// One unit of the integer part, in raw units (2^32).
pub const ONE: u128 = 1 << FRACTION_BITS;

/// A virtual time or tag in unsigned fixed point with [`FRACTION_BITS`] fractional bits.
/// Ordered by value; ties between equal tags are broken by the disciplines with an arrival
/// sequence number, never by this type.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VirtualTime(u128);

impl VirtualTime {
    /// Zero.
    pub const ZERO: VirtualTime = VirtualTime(0);

    /// The value whose raw representation (in units of 2^-32) is `raw`.
    #[inline]
    pub const fn from_raw(raw: u128) -> VirtualTime {
        VirtualTime(raw)
    }

    /// The raw representation, in units of 2^-32.
    #[inline]
    pub const fn raw(self) -> u128 {
        self.0
    }

    /// The integer `value`.
    #[inline]
    pub const fn from_integer(value: u64) -> VirtualTime {
        VirtualTime((value as u128) << FRACTION_BITS)
    }

    /// `numerator / denominator` rounded up to the next 2^-32 (`L/w` of a tag increment).
    /// A zero denominator is treated as 1 (callers validate weights and rates to be positive).
    #[inline]
    pub fn ratio_ceil(numerator: u64, denominator: u64) -> VirtualTime {
        let denominator = denominator.max(1);
        if numerator < (1 << 32) {
            // numerator·2^32 fits in 64 bits: one 64-bit division.
            VirtualTime(((numerator << FRACTION_BITS).div_ceil(denominator)) as u128)
        } else {
            VirtualTime(((numerator as u128) << FRACTION_BITS).div_ceil(denominator as u128))
        }
    }

    /// The time to send `bytes` at `rate`, in nanoseconds (`8·10^9·bytes / rate`), rounded up to
    /// the next 2^-32 ns: Virtual Clock's `Vtick` for one packet. For many packets at one rate,
    /// [`ByteTime`] prepares the rate once.
    #[inline]
    pub fn transmission_time(bytes: u64, rate: Rate) -> VirtualTime {
        ByteTime::new(rate).of(bytes)
    }

    /// `self + other`, saturating at the largest value.
    #[inline]
    pub fn saturating_add(self, other: VirtualTime) -> VirtualTime {
        VirtualTime(self.0.saturating_add(other.0))
    }

    /// `self - other`, or zero if `other > self`.
    #[inline]
    pub fn saturating_sub(self, other: VirtualTime) -> VirtualTime {
        VirtualTime(self.0.saturating_sub(other.0))
    }

    /// The value as a float, for reports and test output only (never for decisions).
    pub fn to_f64(self) -> f64 {
        self.0 as f64 / ONE as f64
    }
}

impl fmt::Debug for VirtualTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self)
    }
}

impl fmt::Display for VirtualTime {
    /// The integer part and the fraction to nine decimals (rounded down), e.g. `1000.500000000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let integer = self.0 >> FRACTION_BITS;
        let fraction = self.0 & (ONE - 1);
        let decimals = (fraction * 1_000_000_000) >> FRACTION_BITS;
        write!(f, "{integer}.{decimals:09}")
    }
}

/// [`VirtualTime::transmission_time`] at one rate, prepared once, so that a packet's time
/// needs no 128-bit division and no branch on the rate: with `K = 8·10^9·2^32` (a byte's
/// time at 1 bit/s in raw units) split as `K = q·rate + r`, the time of `bytes` is
/// `bytes·q + ⌈bytes·r / rate⌉`, one 64-bit division (for rates from 2 to 2^32 − 1 bit/s;
/// others divide in 128 bits). A byte that takes whole nanoseconds has `r = 0`. 16 bytes;
/// the default is no rate (zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteTime {
    /// `q = ⌊K / rate⌋` when `rate_below_2_32` is not zero, else the rate in bits per second
    /// (zero: no rate).
    quotient_or_rate: u64,
    /// `r = K mod rate` (below the rate, so below 2^32).
    remainder: u32,
    /// The rate in bits per second when it lies in `[2, 2^32)`, else zero.
    rate_below_2_32: u32,
}

/// A byte's transmission time at 1 bit/s, in raw units: `8·10^9·2^32`.
const BYTE_AT_ONE_BIT_PER_SECOND: u128 = (8 * NANOS_PER_SECOND as u128) << FRACTION_BITS;

impl ByteTime {
    /// The byte time at `rate`.
    #[inline]
    pub fn new(rate: Rate) -> ByteTime {
        let bits_per_second = rate.bits_per_second();
        match u32::try_from(bits_per_second) {
            Ok(rate_below_2_32) if rate_below_2_32 >= 2 => ByteTime {
                // q < 2^64: K < 2^65 and the rate is at least 2.
                quotient_or_rate: (BYTE_AT_ONE_BIT_PER_SECOND / bits_per_second as u128) as u64,
                remainder: (BYTE_AT_ONE_BIT_PER_SECOND % bits_per_second as u128) as u32,
                rate_below_2_32,
            },
            _ => ByteTime {
                quotient_or_rate: bits_per_second,
                remainder: 0,
                rate_below_2_32: 0,
            },
        }
    }

    /// The rate, `None` for the default (no rate).
    #[inline]
    pub fn rate(&self) -> Option<Rate> {
        let bits_per_second = if self.rate_below_2_32 != 0 {
            self.rate_below_2_32 as u64
        } else {
            self.quotient_or_rate
        };
        Rate::from_bits_per_second(bits_per_second)
    }

    /// The time to send `bytes` (below 2^32, a packet's size) at the rate, as
    /// [`VirtualTime::transmission_time`] (which this is; at 1 bit/s without a rate).
    #[inline]
    pub fn of(&self, bytes: u64) -> VirtualTime {
        if self.rate_below_2_32 != 0 && bytes < 1 << 32 {
            // bytes·K/rate = bytes·q + bytes·r/rate, and bytes·r < 2^64.
            let rest = (bytes * self.remainder as u64).div_ceil(self.rate_below_2_32 as u64);
            return VirtualTime(bytes as u128 * self.quotient_or_rate as u128 + rest as u128);
        }
        let rate = self.rate().map_or(1, Rate::bits_per_second);
        let numerator = bytes as u128 * 8 * NANOS_PER_SECOND as u128;
        VirtualTime((numerator << FRACTION_BITS).div_ceil(rate as u128))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    proptest! {
        /// A prepared byte time gives the exact `⌈8·10^9·bytes·2^32 / rate⌉`, whole or not.
        #[test]
        fn a_byte_time_is_the_exact_transmission_time(
            bytes in prop_oneof![0u64..1 << 20, 0u64..1 << 32, Just((1u64 << 32) - 1)],
            bits_per_second in prop_oneof![
                1u64..1 << 40,
                (1u64..64).prop_map(|d| 8 * NANOS_PER_SECOND / d),
                Just(1u64), Just(2), Just((1 << 32) - 1), Just(1 << 32), Just(u64::MAX),
            ],
        ) {
            let rate = Rate::from_bits_per_second(bits_per_second).unwrap();
            let exact = (bytes as u128 * 8 * NANOS_PER_SECOND as u128 * ONE).div_ceil(bits_per_second as u128);
            prop_assert_eq!(ByteTime::new(rate).of(bytes).raw(), exact);
            prop_assert_eq!(ByteTime::new(rate).rate(), Some(rate));
        }
    }

    #[test]
    fn ratios_round_up_and_are_exact_for_powers_of_two() {
        assert_eq!(VirtualTime::ratio_ceil(1500, 4), VirtualTime::from_integer(375));
        assert_eq!(VirtualTime::ratio_ceil(1, 2).raw(), ONE / 2);
        // 1000/3 = 333.333…: rounded up to the next 2^-32.
        let third = VirtualTime::ratio_ceil(1000, 3);
        assert_eq!(third.raw(), (1000 * ONE).div_ceil(3));
        assert!(third.raw() * 3 >= 1000 * ONE && third.raw() * 3 - 1000 * ONE < 3);
        // Large numerators take the 128-bit path and agree with it.
        assert_eq!(
            VirtualTime::ratio_ceil(u64::MAX, 7).raw(),
            ((u64::MAX as u128) << 32).div_ceil(7)
        );
        assert_eq!(VirtualTime::ratio_ceil(5, 0), VirtualTime::from_integer(5));
    }

    #[test]
    fn transmission_times_in_nanoseconds() {
        let rate = |bits| Rate::from_bits_per_second(bits).unwrap();
        // 1000 bytes at 4000 bit/s: 2 s.
        assert_eq!(
            VirtualTime::transmission_time(1000, rate(4000)),
            VirtualTime::from_integer(2_000_000_000)
        );
        // 1 byte at 3 bit/s: 8/3 s, rounded up to the next 2^-32 ns.
        let t = VirtualTime::transmission_time(1, rate(3));
        assert_eq!(t.raw(), (8_000_000_000u128 << 32).div_ceil(3));
        assert_eq!(
            VirtualTime::transmission_time(1500, rate(10_000_000_000)),
            VirtualTime::from_integer(1200)
        );
    }

    #[test]
    fn display_shows_nine_decimals() {
        assert_eq!(VirtualTime::from_integer(1000).to_string(), "1000.000000000");
        assert_eq!(VirtualTime::ratio_ceil(3, 2).to_string(), "1.500000000");
        assert_eq!(
            VirtualTime::from_raw(u128::MAX)
                .saturating_add(VirtualTime::from_integer(1))
                .raw(),
            u128::MAX
        );
        assert_eq!(
            VirtualTime::ZERO.saturating_sub(VirtualTime::from_integer(1)),
            VirtualTime::ZERO
        );
    }
}
