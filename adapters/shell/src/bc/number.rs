//! bc's numbers: exact decimals (an integer scaled down by a power of ten) and the POSIX
//! rules for how many fraction digits each operation keeps. bc truncates, it never rounds.

use std::cmp::Ordering;

use num_bigint::{BigInt, BigUint};
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// The most decimal digits a number may have: enough for any sensible calculation, small
/// enough that one operation on two such numbers stays quick and `2^99999999` fails at
/// once instead of filling the memory.
pub const MAX_DIGITS: u64 = 200_000;
/// The largest `scale` (fraction digits) a number or the `scale` variable may have.
pub const MAX_SCALE: u64 = 100_000;
/// A number with more bits than this has more than [`MAX_DIGITS`] digits (log2 10 < 3.3220).
const MAX_BITS: u64 = MAX_DIGITS * 33_220 / 10_000;
/// The largest `ibase` / `obase` (GNU bc's BC_BASE_MAX).
pub const MAX_OBASE: u64 = i32::MAX as u64;
pub const MAX_IBASE: u64 = 36;

/// Why an operation failed, as bc words it after `Runtime error (...): `.
pub type Fallible<T> = Result<T, String>;

/// `int / 10^scale`.
#[derive(Clone, Debug, Default)]
pub struct Num {
    int: BigInt,
    scale: u32,
}

/// `10^n`.
pub fn pow10(n: u64) -> BigInt {
    // n never exceeds a few times MAX_DIGITS, far below u32::MAX.
    BigInt::from(10u8).pow(n as u32)
}

fn too_long() -> String {
    format!("number too long (runbox's bc keeps at most {MAX_DIGITS} digits)")
}

impl Num {
    pub fn zero() -> Num {
        Num::default()
    }

    pub fn from_int(int: impl Into<BigInt>) -> Num {
        Num {
            int: int.into(),
            scale: 0,
        }
    }

    /// `int / 10^scale`, refused when it is too long.
    pub fn new(int: BigInt, scale: u64) -> Fallible<Num> {
        if scale > MAX_SCALE {
            return Err(format!("scale too large (at most {MAX_SCALE})"));
        }
        if int.bits() > MAX_BITS {
            return Err(too_long());
        }
        Ok(Num {
            int,
            scale: scale as u32,
        })
    }

    /// The scaled integer and the scale, for code that computes on them directly.
    pub fn parts(&self) -> (&BigInt, u64) {
        (&self.int, self.scale as u64)
    }

    pub fn scale(&self) -> u64 {
        self.scale as u64
    }

    pub fn is_zero(&self) -> bool {
        self.int.is_zero()
    }

    pub fn is_negative(&self) -> bool {
        self.int.is_negative()
    }

    pub fn neg(&self) -> Num {
        Num {
            int: -&self.int,
            scale: self.scale,
        }
    }

    pub fn abs(&self) -> Num {
        Num {
            int: self.int.abs(),
            scale: self.scale,
        }
    }

    /// The integer part, truncated toward zero.
    pub fn trunc(&self) -> BigInt {
        &self.int / pow10(self.scale())
    }

    /// The integer part as an i64, or None when it does not fit.
    pub fn to_i64(&self) -> Option<i64> {
        self.trunc().to_i64()
    }

    /// The same value with `scale` fraction digits: truncated, or padded with zeros.
    pub fn with_scale(&self, scale: u64) -> Fallible<Num> {
        match scale.cmp(&self.scale()) {
            Ordering::Equal => Ok(self.clone()),
            Ordering::Less => Num::new(&self.int / pow10(self.scale() - scale), scale),
            Ordering::Greater => Num::new(&self.int * pow10(scale - self.scale()), scale),
        }
    }

    /// Both integers at the larger of the two scales.
    fn aligned(&self, other: &Num) -> (BigInt, BigInt, u64) {
        let scale = self.scale.max(other.scale);
        let widen = |n: &Num| &n.int * pow10((scale - n.scale) as u64);
        (widen(self), widen(other), scale as u64)
    }

    /// `a + b`, with the larger of their scales.
    pub fn add(&self, other: &Num) -> Fallible<Num> {
        let (a, b, scale) = self.aligned(other);
        Num::new(a + b, scale)
    }

    /// `a - b`, with the larger of their scales.
    pub fn sub(&self, other: &Num) -> Fallible<Num> {
        let (a, b, scale) = self.aligned(other);
        Num::new(a - b, scale)
    }

    /// `a * b`: POSIX keeps min(a+b, max(scale, a, b)) fraction digits.
    pub fn mul(&self, other: &Num, scale: u64) -> Fallible<Num> {
        let (sa, sb) = (self.scale(), other.scale());
        let exact = Num {
            int: &self.int * &other.int,
            scale: 0,
        };
        let kept = (sa + sb).min(scale.max(sa).max(sb));
        // The product's own scale is sa + sb; truncate it to `kept`.
        Num::new(exact.int / pow10(sa + sb - kept), kept)
    }

    /// `a / b` with `scale` fraction digits, truncated toward zero.
    pub fn div(&self, other: &Num, scale: u64) -> Fallible<Num> {
        if other.is_zero() {
            return Err("Divide by zero".into());
        }
        // a/b = (ia * 10^sb) / (ib * 10^sa); times 10^scale for the digits kept.
        let up = scale + other.scale();
        let down = self.scale();
        let quotient = if up >= down {
            (&self.int * pow10(up - down)) / &other.int
        } else {
            &self.int / (&other.int * pow10(down - up))
        };
        Num::new(quotient, scale)
    }

    /// `a % b`: `a - (a / b) * b`, the quotient taken at `scale`, the result at
    /// max(scale + b's scale, a's scale), as POSIX defines it.
    pub fn rem(&self, other: &Num, scale: u64) -> Fallible<Num> {
        if other.is_zero() {
            return Err("Modulo by zero".into());
        }
        let quotient = self.div(other, scale)?;
        let product = Num {
            int: &quotient.int * &other.int,
            scale: quotient.scale + other.scale,
        };
        let result_scale = (scale + other.scale()).max(self.scale());
        self.sub(&product)?.with_scale(result_scale)
    }

    /// `a ^ n` for an integer `n` (a fraction in `n` is dropped; the caller warns). For
    /// n > 0 POSIX keeps min(a's scale * n, max(scale, a's scale)) digits; for n < 0 the
    /// result is 1 / a^-n at `scale`.
    pub fn pow(&self, exponent: &Num, scale: u64) -> Fallible<Num> {
        let n = exponent
            .to_i64()
            .ok_or_else(|| "exponent too large in raise".to_string())?;
        if n == 0 {
            return Ok(Num::from_int(1));
        }
        let power = self.exact_pow(n.unsigned_abs())?;
        if n < 0 {
            return Num::from_int(1).div(&power, scale);
        }
        let sa = self.scale();
        let kept = (sa as u128 * n as u128).min(scale.max(sa) as u128) as u64;
        power.with_scale(kept)
    }

    /// `a ^ n` exactly, refused when the result would be too long. Trailing zeros of `a`
    /// are dropped first, so `1.0 ^ 99999999` is quick.
    fn exact_pow(&self, n: u64) -> Fallible<Num> {
        let (mut int, mut scale) = (self.int.clone(), self.scale());
        while scale > 0 && (&int % 10u8).is_zero() && !int.is_zero() {
            int /= 10u8;
            scale -= 1;
        }
        if int.is_zero() {
            return Ok(Num::zero());
        }
        let negative = int.is_negative() && n % 2 == 1;
        let exact_scale = scale as u128 * n as u128;
        if int.magnitude().is_one() {
            // ±10^-(scale*n): its digits are all zeros below MAX_SCALE.
            if exact_scale > MAX_SCALE as u128 {
                return Ok(Num::zero());
            }
            let one = Num::new(BigInt::one(), exact_scale as u64)?;
            return Ok(if negative { one.neg() } else { one });
        }
        // a^n has more than (bits(a) - 1) * n bits; an exact scale past this many digits
        // would take too long to truncate.
        if (int.bits() - 1) as u128 * n as u128 > MAX_BITS as u128
            || exact_scale > (MAX_DIGITS + MAX_SCALE) as u128
        {
            return Err(too_long());
        }
        let power = int.pow(n as u32);
        // Not `new`: the exact scale may exceed MAX_SCALE before it is truncated.
        if power.bits() > MAX_BITS {
            return Err(too_long());
        }
        Ok(Num {
            int: power,
            scale: exact_scale as u32,
        })
    }

    /// The square root with max(scale, a's scale) digits, truncated.
    pub fn sqrt(&self, scale: u64) -> Fallible<Num> {
        if self.is_negative() {
            return Err("Square root of a negative number".into());
        }
        // GNU bc answers 0 and 1 themselves, without a fraction.
        if self.is_zero() || *self == Num::from_int(1) {
            return Ok(Num::from_int(self.trunc()));
        }
        let kept = scale.max(self.scale());
        // sqrt(i / 10^s) * 10^k = sqrt(i * 10^(2k - s)).
        let radicand = &self.int * pow10(2 * kept - self.scale());
        Num::new(radicand.sqrt(), kept)
    }

    /// bc's `length`: the significant digits, counting the whole fraction but not the
    /// zero before the point.
    pub fn length(&self) -> u64 {
        let digits = self.int.magnitude().to_string().len() as u64;
        if self.is_zero() {
            return self.scale().max(1);
        }
        // 0.0012 has int 12, scale 4: the fraction's leading zeros count.
        digits.max(self.scale())
    }

    /// A numeric literal as bc reads it in base `ibase`: a lone digit keeps its value
    /// (so `ibase=A` is always ten); in longer numbers a digit is at most ibase - 1.
    /// A fraction of k digits is kept to k decimal digits.
    pub fn parse(text: &str, ibase: u32) -> Fallible<Num> {
        let value = |c: u8| match c {
            b'0'..=b'9' => (c - b'0') as u32,
            _ => (c - b'A') as u32 + 10,
        };
        if text.len() == 1 {
            return Ok(Num::from_int(value(text.as_bytes()[0])));
        }
        if text.len() as u64 > MAX_DIGITS + MAX_SCALE {
            return Err(too_long());
        }
        let digit = |c: u8| value(c).min(ibase - 1);
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let int = digits_value(whole.bytes().map(digit), ibase);
        let k = fraction.len() as u64;
        if k > MAX_SCALE {
            return Err(format!("scale too large (at most {MAX_SCALE})"));
        }
        let numerator = digits_value(fraction.bytes().map(digit), ibase) * pow10(k);
        let frac = numerator / BigInt::from(ibase).pow(k as u32);
        Num::new(int * pow10(k) + frac, k)
    }

    /// The digits bc prints for this number in base `obase`, without line breaks: zero
    /// is `0`, a number below one has no `0` before its point.
    pub fn format(&self, obase: u64) -> String {
        if self.is_zero() {
            return "0".into();
        }
        let mut out = String::new();
        if self.is_negative() {
            out.push('-');
        }
        let magnitude = self.int.abs();
        let unit = pow10(self.scale());
        let (whole, fraction) = magnitude.div_rem(&unit);
        if obase == 10 {
            if !whole.is_zero() {
                out.push_str(&whole.to_string());
            }
            if self.scale > 0 {
                let digits = fraction.to_string();
                out.push('.');
                out.push_str(&"0".repeat(self.scale as usize - digits.len()));
                out.push_str(&digits);
            }
            return out;
        }
        let style = DigitStyle::new(obase);
        for &d in &base_digits(&whole, obase) {
            style.push(&mut out, d, true);
        }
        if self.scale > 0 {
            out.push('.');
            let base = BigInt::from(obase);
            let count = fraction_digits(self.scale(), &base);
            // floor(fraction * obase^count), written with exactly `count` digits.
            let scaled = fraction * base.pow(count as u32) / unit;
            let digits = base_digits(&scaled, obase);
            let padding = std::iter::repeat_n(0, count as usize - digits.len());
            for (i, d) in padding.chain(digits).enumerate() {
                style.push(&mut out, d, i > 0);
            }
        }
        out
    }
}

/// How digits of a base are written: one character up to base 16, else each digit as a
/// zero-padded decimal number after a space (GNU bc's "multi-character digits").
struct DigitStyle {
    width: usize,
}

impl DigitStyle {
    fn new(obase: u64) -> DigitStyle {
        let width = if obase <= 16 {
            0
        } else {
            (obase - 1).to_string().len()
        };
        DigitStyle { width }
    }

    fn push(&self, out: &mut String, d: u64, spaced: bool) {
        if self.width == 0 {
            out.push(b"0123456789ABCDEF"[d as usize] as char);
        } else {
            if spaced {
                out.push(' ');
            }
            out.push_str(&format!("{d:0width$}", width = self.width));
        }
    }
}

/// The digits of `n` (not negative) in `base`, most significant first; none for zero.
/// It divides by the largest power of `base` that fits a u64, so a long number takes a
/// few thousand divisions, not one per digit.
fn base_digits(n: &BigInt, base: u64) -> Vec<u64> {
    let (mut chunk, mut per_chunk) = (base, 1);
    while let Some(next) = chunk.checked_mul(base) {
        chunk = next;
        per_chunk += 1;
    }
    let chunk_big = BigInt::from(chunk);
    let mut rest = n.clone();
    let mut digits = Vec::new();
    while !rest.is_zero() {
        let (quotient, remainder) = rest.div_rem(&chunk_big);
        let mut remainder = remainder.to_u64().unwrap_or(0);
        for _ in 0..per_chunk {
            digits.push(remainder % base);
            remainder /= base;
        }
        rest = quotient;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    digits.reverse();
    digits
}

/// How many digits of base `base` GNU bc prints after the point of a number with `scale`
/// decimals: one for each power base^i below 10^scale.
fn fraction_digits(scale: u64, base: &BigInt) -> u64 {
    let limit = pow10(scale);
    // A first guess from logarithms, then corrected exactly.
    let log = base.to_f64().unwrap_or(f64::MAX).log10();
    let mut count = ((scale as f64) / log).ceil().max(1.0) as u64;
    while count > 1 && base.pow(count as u32 - 1) >= limit {
        count -= 1;
    }
    while base.pow(count as u32) < limit {
        count += 1;
    }
    count
}

/// The value of digits (each below `base`) in `base`, most significant first.
fn digits_value(digits: impl Iterator<Item = u32>, base: u32) -> BigInt {
    let digits: Vec<u8> = digits.map(|d| d as u8).collect();
    BigUint::from_radix_be(&digits, base)
        .unwrap_or_default()
        .into()
}

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Num {}

impl PartialOrd for Num {
    fn partial_cmp(&self, other: &Num) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Num {
    fn cmp(&self, other: &Num) -> Ordering {
        let (a, b, _) = self.aligned(other);
        a.cmp(&b)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A number from decimal text with an optional `-` (bc's tests and mathlib's).
    pub(in crate::bc) fn num(text: &str) -> Num {
        match text.strip_prefix('-') {
            Some(rest) => Num::parse(rest, 10).unwrap().neg(),
            None => Num::parse(text, 10).unwrap(),
        }
    }

    #[test]
    fn division_truncates_to_scale() {
        assert_eq!(num("22").div(&num("7"), 3).unwrap().format(10), "3.142");
        assert_eq!(num("2").div(&num("3"), 4).unwrap().format(10), ".6666");
        assert_eq!(num("-1").div(&num("2"), 1).unwrap().format(10), "-.5");
        assert_eq!(num("-1").div(&num("100"), 1).unwrap().format(10), "0");
        assert_eq!(num("7").div(&num("2"), 0).unwrap().format(10), "3");
        assert!(num("1").div(&Num::zero(), 2).is_err());
    }

    #[test]
    fn multiplication_keeps_posix_digits() {
        assert_eq!(
            num("1.234").mul(&num("1.234"), 2).unwrap().format(10),
            "1.522"
        );
        assert_eq!(
            num("1.234").mul(&num("1.234"), 10).unwrap().format(10),
            "1.522756"
        );
        assert_eq!(num("1.999").mul(&num("1"), 2).unwrap().format(10), "1.999");
    }

    #[test]
    fn remainder_and_power_follow_posix() {
        assert_eq!(num("7").rem(&num("3"), 2).unwrap().format(10), ".01");
        assert_eq!(num("7.5").rem(&num("2"), 0).unwrap().format(10), "1.5");
        assert_eq!(num("1.5").pow(&num("3"), 0).unwrap().format(10), "3.3");
        assert_eq!(num("1.5").pow(&num("3"), 3).unwrap().format(10), "3.375");
        assert_eq!(num("2").pow(&num("-2"), 3).unwrap().format(10), ".250");
        assert_eq!(
            num("1.0").pow(&num("99999999"), 0).unwrap().format(10),
            "1.0"
        );
        assert!(num("2").pow(&num("99999999"), 0).is_err());
    }

    #[test]
    fn literals_and_bases() {
        assert_eq!(Num::parse("A", 10).unwrap().format(10), "10");
        assert_eq!(Num::parse("1A", 10).unwrap().format(10), "19");
        assert_eq!(Num::parse("A.8", 16).unwrap().format(10), "10.5");
        assert_eq!(Num::parse("1.50", 10).unwrap().format(10), "1.50");
        assert_eq!(num("255").format(16), "FF");
        assert_eq!(num("5.25").format(2), "101.0100000");
        assert_eq!(num(".1").format(2), ".0001");
        assert_eq!(num("12345.5").format(100), " 01 23 45.50");
    }

    #[test]
    fn length_counts_significant_digits() {
        for (text, length) in [
            ("123.45", 5),
            (".001", 3),
            (".0012", 4),
            ("0", 1),
            ("100", 3),
        ] {
            assert_eq!(num(text).length(), length, "{text}");
        }
    }
}
