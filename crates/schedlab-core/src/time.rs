//! Time, rate and size units and their parsers.
//!
//! Time is an integer count of nanoseconds ([`TimeNs`]), sizes are bytes and rates are bits
//! per second ([`Rate`]). The parsers accept the spellings used in schedlab's TOML files:
//! durations such as `"250us"`, `"1ms"`, `"2s"`; rates such as `"8Mbit"`, `8000000`;
//! sizes such as `"64KB"`, `1500`.

use std::fmt;

/// A point in time or a duration, in nanoseconds.
pub type TimeNs = u64;

/// Nanoseconds per second.
pub const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// The latest time a simulation's clock reaches: 2⁶³ − 1 ns, about 292 years. A duration in a
/// scenario is at most 2⁶³ ns (the parsers' "too large"), and a link's service time of the
/// largest packet that can reach it must not exceed this limit either, so that a time up to
/// the limit plus any one of them still fits in a [`TimeNs`].
pub const CLOCK_LIMIT: TimeNs = TimeNs::MAX / 2;

/// A link or reservation rate in bits per second (never zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate {
    bits_per_second: u64,
}

impl Rate {
    /// A rate of `bits_per_second`; `None` for zero.
    #[inline]
    pub fn from_bits_per_second(bits_per_second: u64) -> Option<Rate> {
        (bits_per_second > 0).then_some(Rate { bits_per_second })
    }

    /// The rate in bits per second.
    #[inline]
    pub fn bits_per_second(self) -> u64 {
        self.bits_per_second
    }

    /// Time to serialise `size_bytes` bytes at this rate, in nanoseconds, rounded up so that a
    /// packet never leaves earlier than its last bit could.
    #[inline]
    pub fn transmission_time(self, size_bytes: u64) -> TimeNs {
        // Fast path in 64-bit arithmetic for any size below 2 GB.
        if size_bytes < (1 << 31) {
            return (size_bytes * 8 * NANOS_PER_SECOND).div_ceil(self.bits_per_second);
        }
        let bits = size_bytes as u128 * 8 * NANOS_PER_SECOND as u128;
        // Saturates (beyond 584 years) rather than wrapping.
        bits.div_ceil(self.bits_per_second as u128)
            .min(TimeNs::MAX as u128) as TimeNs
    }

    /// Bytes this rate carries in `duration` nanoseconds, rounded down.
    #[inline]
    pub fn bytes_in(self, duration: TimeNs) -> u64 {
        // Fast path in 64-bit arithmetic (e.g. up to 1.8 s at 10 Gbit/s); a 128-bit division
        // is a library call several times slower than a 64-bit one.
        if let Some(bits_ns) = duration.checked_mul(self.bits_per_second) {
            return bits_ns / (8 * NANOS_PER_SECOND);
        }
        let bytes = duration as u128 * self.bits_per_second as u128 / (8 * NANOS_PER_SECOND as u128);
        bytes.min(u64::MAX as u128) as u64
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bit", self.bits_per_second)
    }
}

/// Why a unit string could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a valid {what}: {rule}")]
pub struct UnitError {
    /// The text that was given.
    pub value: String,
    /// What was expected ("rate", "duration", "size").
    pub what: &'static str,
    /// The rule that was broken.
    pub rule: String,
}

fn split_number(text: &str) -> (&str, &str) {
    let text = text.trim();
    let end = text
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == '_' || c == 'e' || c == 'E')
        })
        .unwrap_or(text.len());
    (text[..end].trim(), text[end..].trim())
}

fn scaled(text: &str, what: &'static str, units: &[(&str, f64)]) -> Result<f64, UnitError> {
    let error = |rule: String| UnitError {
        value: text.to_string(),
        what,
        rule,
    };
    let (number, unit) = split_number(text);
    if number.is_empty() {
        return Err(error("expected a number followed by a unit".into()));
    }
    let value: f64 = number
        .replace('_', "")
        .parse()
        .map_err(|_| error(format!("{number:?} is not a number")))?;
    let factor = units
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, factor)| *factor)
        .ok_or_else(|| {
            let names: Vec<&str> = units.iter().map(|(n, _)| *n).filter(|n| !n.is_empty()).collect();
            error(format!("unknown unit {unit:?}; use one of {}", names.join(", ")))
        })?;
    let scaled = value * factor;
    if !scaled.is_finite() || scaled < 0.0 {
        return Err(error("must be a finite, non-negative amount".into()));
    }
    if scaled > u64::MAX as f64 / 2.0 {
        return Err(error("is too large".into()));
    }
    Ok(scaled)
}

const RATE_UNITS: &[(&str, f64)] = &[
    ("", 1.0),
    ("bit", 1.0),
    ("bps", 1.0),
    ("kbit", 1e3),
    ("kbps", 1e3),
    ("Mbit", 1e6),
    ("Mbps", 1e6),
    ("Gbit", 1e9),
    ("Gbps", 1e9),
];

const DURATION_UNITS: &[(&str, f64)] = &[
    ("ns", 1.0),
    ("us", 1e3),
    ("µs", 1e3),
    ("ms", 1e6),
    ("s", 1e9),
    ("min", 60e9),
];

const SIZE_UNITS: &[(&str, f64)] = &[
    ("", 1.0),
    ("B", 1.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("KiB", 1024.0),
    ("MiB", 1048576.0),
];

/// Parses a rate: an integer number of bit/s, or a number with `bit`, `kbit`, `Mbit`, `Gbit`
/// (also `bps`, `kbps`, `Mbps`, `Gbps`). Zero is rejected.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let bits = scaled(text, "rate", RATE_UNITS)?.round() as u64;
    Rate::from_bits_per_second(bits).ok_or_else(|| UnitError {
        value: text.to_string(),
        what: "rate",
        rule: "must be greater than zero".into(),
    })
}

/// Parses a duration with a unit (`ns`, `us`, `ms`, `s`, `min`) into nanoseconds.
pub fn parse_duration(text: &str) -> Result<TimeNs, UnitError> {
    Ok(scaled(text, "duration", DURATION_UNITS)?.round() as TimeNs)
}

/// Parses a size in bytes: an integer, or a number with `B`, `KB`, `MB`, `KiB`, `MiB`.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    Ok(scaled(text, "size", SIZE_UNITS)?.round() as u64)
}

/// Converts seconds (as found in trace files) to nanoseconds, rounding to the nearest.
pub fn seconds_to_ns(seconds: f64) -> Option<TimeNs> {
    let ns = (seconds * NANOS_PER_SECOND as f64).round();
    (seconds.is_finite() && seconds >= 0.0 && ns <= u64::MAX as f64).then_some(ns as TimeNs)
}

/// Formats nanoseconds as seconds with nine decimals, exactly (no floating point).
pub fn format_seconds(ns: TimeNs) -> String {
    format!("{}.{:09}", ns / NANOS_PER_SECOND, ns % NANOS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_units() {
        assert_eq!(parse_rate("8Mbit").unwrap().bits_per_second(), 8_000_000);
        assert_eq!(parse_rate("125kbit").unwrap().bits_per_second(), 125_000);
        assert_eq!(parse_rate("1.2Mbit").unwrap().bits_per_second(), 1_200_000);
        assert_eq!(parse_rate("10Gbit").unwrap().bits_per_second(), 10_000_000_000);
        assert_eq!(parse_rate("2000000").unwrap().bits_per_second(), 2_000_000);
        assert!(parse_rate("0bit").is_err());
        assert!(parse_rate("-5Mbit").is_err());
        assert!(parse_rate("8Mb")
            .unwrap_err()
            .to_string()
            .contains("unknown unit"));
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("1ms").unwrap(), 1_000_000);
        assert_eq!(parse_duration("250us").unwrap(), 250_000);
        assert_eq!(parse_duration("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration("0.5s").unwrap(), 500_000_000);
        assert!(parse_duration("5").is_err(), "a duration needs a unit");
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("64KB").unwrap(), 64_000);
        assert_eq!(parse_size("1500").unwrap(), 1500);
        assert_eq!(parse_size("2KiB").unwrap(), 2048);
    }

    #[test]
    fn transmission_time_rounds_up() {
        let rate = parse_rate("8Mbit").unwrap();
        assert_eq!(rate.transmission_time(1000), 1_000_000);
        let rate = parse_rate("3bit").unwrap();
        assert_eq!(rate.transmission_time(1), 2_666_666_667);
        assert_eq!(parse_rate("8Mbit").unwrap().bytes_in(1_000_000), 1000);
    }

    proptest::proptest! {
        /// The 64-bit fast paths agree with exact 128-bit arithmetic.
        #[test]
        fn fast_paths_are_exact(bits in 1u64.., size in 0u64..(1 << 33), duration: u64) {
            let rate = Rate::from_bits_per_second(bits).unwrap();
            let exact_time = (size as u128 * 8 * NANOS_PER_SECOND as u128).div_ceil(bits as u128);
            proptest::prop_assert_eq!(rate.transmission_time(size) as u128, exact_time.min(u64::MAX as u128));
            let exact_bytes = duration as u128 * bits as u128 / (8 * NANOS_PER_SECOND as u128);
            proptest::prop_assert_eq!(rate.bytes_in(duration) as u128, exact_bytes.min(u64::MAX as u128));
            let small = duration % 10_000_000_000;
            let exact_small = small as u128 * bits as u128 / (8 * NANOS_PER_SECOND as u128);
            proptest::prop_assert_eq!(rate.bytes_in(small) as u128, exact_small.min(u64::MAX as u128));
        }
    }

    #[test]
    fn seconds_format_exactly() {
        assert_eq!(format_seconds(1_500_000_001), "1.500000001");
        assert_eq!(format_seconds(0), "0.000000000");
        assert_eq!(seconds_to_ns(0.000001), Some(1000));
        assert_eq!(seconds_to_ns(-1.0), None);
    }
}
