//! `bc -l`'s math library: `s(x)` sine, `c(x)` cosine, `a(x)` arctangent, `l(x)` natural
//! logarithm, `e(x)` exponential and `j(n,x)` Bessel function, each truncated to `scale`.
//!
//! Each is computed in fixed point with guard digits beyond `scale` (more where reducing the
//! argument costs precision), then truncated, so the digits printed are the true ones.
//! GNU bc's library (bc code run at a few more digits) agrees but for the last digit or
//! two in a few per cent of sines and cosines, where it is the one that is off:
//! `scale=2; c(10)` is -.84 there, cos 10 being -0.8390...

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::number::{pow10, Fallible, Num, MAX_DIGITS};

/// Digits computed beyond those kept: rounding errors of the series stay below them.
const GUARD: u64 = 12;
/// `j(n, x)` needs about 0.43·|x| extra digits (its terms cancel); beyond this it is refused.
const MAX_BESSEL_ARG: i64 = 1000;
/// The most digits the library computes (scale, and the integer digits of a sine's
/// argument): its series take seconds past this.
const MAX_LIBRARY_DIGITS: u64 = 20_000;

/// The library's function `name` on `args`, or None when it has no such function.
pub fn call(name: &str, args: &[Num], scale: u64) -> Option<Fallible<Num>> {
    if scale > MAX_LIBRARY_DIGITS && matches!(name, "s" | "c" | "a" | "l" | "e" | "j") {
        return Some(Err(too_precise()));
    }
    let result = match (name, args) {
        ("s", [x]) => sine(x, scale, 0),
        ("c", [x]) => sine(x, scale, 1),
        ("a", [x]) => arctangent(x, scale),
        ("l", [x]) => logarithm(x, scale),
        ("e", [x]) => exponential(x, scale),
        ("j", [n, x]) => bessel(n, x, scale),
        ("s" | "c" | "a" | "l" | "e" | "j", _) => Err("Parameter number mismatch".into()),
        _ => return None,
    };
    Some(result)
}

fn too_precise() -> String {
    format!("the math library computes at most {MAX_LIBRARY_DIGITS} digits")
}

/// Binary fixed point: `v` stands for v / 2^bits, with `bits` enough for `digits`
/// decimals. Binary, so a product is rescaled by a shift, not a long division.
struct Fixed {
    digits: u64,
    bits: u64,
    one: BigInt,
}

impl Fixed {
    fn new(digits: u64) -> Fixed {
        // log2 10 < 3.3220; a few more bits for the truncations.
        let bits = digits * 3322 / 1000 + 8;
        Fixed {
            digits,
            bits,
            one: BigInt::one() << bits,
        }
    }

    fn of(&self, n: &Num) -> BigInt {
        let (int, scale) = n.parts();
        (int << self.bits) / pow10(scale)
    }

    fn mul(&self, a: &BigInt, b: &BigInt) -> BigInt {
        (a * b) >> self.bits
    }

    fn div(&self, a: &BigInt, b: &BigInt) -> BigInt {
        (a << self.bits) / b
    }

    fn sqrt(&self, a: &BigInt) -> BigInt {
        (a << self.bits).sqrt()
    }

    /// `v` in a Fixed with `from.bits` bits, as one of this one's (fewer) bits.
    fn narrow(&self, v: BigInt, from: &Fixed) -> BigInt {
        v >> (from.bits - self.bits)
    }

    /// The value truncated toward zero to `scale` decimals.
    fn to_num(&self, v: BigInt, scale: u64) -> Fallible<Num> {
        let scaled = (v.abs() * pow10(scale)) >> self.bits;
        Num::new(if v.is_negative() { -scaled } else { scaled }, scale)
    }

    /// Σ term_k from `first`, each term from the one before by `next`, until one is zero.
    fn series(&self, first: BigInt, mut next: impl FnMut(&BigInt, u64) -> BigInt) -> BigInt {
        let mut sum = first.clone();
        let mut term = first;
        for k in 1.. {
            term = next(&term, k);
            if term.is_zero() {
                break;
            }
            sum += &term;
        }
        sum
    }

    /// atan(1/n) (`sign` -1) or atanh(1/n) (`sign` 1) for an integer n > 1: each term
    /// comes from the last by a short division, so this is quick to any precision.
    fn inverse_series(&self, n: u64, sign: i8) -> BigInt {
        let mut power = &self.one / n;
        let mut sum = power.clone();
        for k in 1u64.. {
            power /= n * n;
            let term = &power / (2 * k + 1);
            if term.is_zero() {
                return sum;
            }
            if sign < 0 && k % 2 == 1 {
                sum -= term;
            } else {
                sum += term;
            }
        }
        unreachable!()
    }

    /// atanh z = z + z³/3 + z⁵/5 + ... (`sign` 1), or atan z = z - z³/3 + ... (-1), for
    /// a small |z|.
    fn odd_series(&self, z: &BigInt, sign: i8) -> BigInt {
        let z2 = self.mul(z, z);
        let mut power = z.clone();
        let mut sum = z.clone();
        for k in 1u64.. {
            power = self.mul(&power, &z2);
            if sign < 0 {
                power = -power;
            }
            let term = &power / (2 * k + 1);
            if term.is_zero() {
                return sum;
            }
            sum += term;
        }
        unreachable!()
    }

    /// π, by Machin's formula: 16·atan(1/5) - 4·atan(1/239).
    fn pi(&self) -> BigInt {
        self.inverse_series(5, -1) * 16u32 - self.inverse_series(239, -1) * 4u32
    }

    fn ln2(&self) -> BigInt {
        self.inverse_series(3, 1) * 2u32
    }
}

/// How many digits the integer part of |x| has (0 below one).
fn int_digits(x: &Num) -> u64 {
    let whole = x.trunc();
    if whole.is_zero() {
        0
    } else {
        whole.magnitude().to_string().len() as u64
    }
}

/// Roughly log2 |x| (x not zero), from its leading bits.
fn log2_estimate(x: &Num) -> f64 {
    let (int, scale) = x.parts();
    let bits = int.bits();
    let shift = bits.saturating_sub(60);
    let top = (int.magnitude() >> shift).to_f64().unwrap_or(1.0);
    top.log2() + shift as f64 - scale as f64 * std::f64::consts::LOG2_10
}

/// e^x.
fn exponential(x: &Num, scale: u64) -> Fallible<Num> {
    if x.is_negative() {
        // e^-y = 1/e^y; below 10^-(scale+1) it truncates to zero.
        let y = x.neg();
        if y.trunc() > BigInt::from((scale + 1) * 23 / 10 + 1) {
            return Num::zero().with_scale(scale);
        }
        let fixed = Fixed::new(scale + GUARD);
        let inverse = fixed.div(&fixed.one, &exp_fixed(&y, &fixed));
        return fixed.to_num(inverse, scale);
    }
    // The result has about 0.4343·x integer digits.
    let magnitude = x.trunc().to_u64().unwrap_or(u64::MAX);
    if magnitude > MAX_DIGITS * 23 / 10 {
        return Err("e(x): the result would be too long".into());
    }
    let fixed = Fixed::new(scale + GUARD + magnitude * 4343 / 10_000 + 1);
    let value = exp_fixed(x, &fixed);
    fixed.to_num(value, scale)
}

/// e^x for x ≥ 0 in `fixed`: the series for r = x / 2^h, then squared h times (with
/// h·0.31 more digits for what the squarings lose). x = p / 10^s stays a fraction of
/// short integers, so each term costs a short multiplication and division.
fn exp_fixed(x: &Num, fixed: &Fixed) -> BigInt {
    let halvings = (log2_estimate(x).max(-8.0) as i64 + 8).max(0) as u64;
    let work = Fixed::new(fixed.digits + halvings * 31 / 100 + 2);
    let (p, s) = x.parts();
    let q = pow10(s) << halvings;
    let mut value = work.series(work.one.clone(), |term, k| term * p / (&q * k));
    for _ in 0..halvings {
        value = work.mul(&value, &value);
    }
    fixed.narrow(value, &work)
}

/// ln x; for x ≤ 0 GNU bc's library answers -(10^scale - 1), and so does this one.
fn logarithm(x: &Num, scale: u64) -> Fallible<Num> {
    if x.is_negative() || x.is_zero() {
        let marker = Num::new(BigInt::one() - pow10(scale), 0)?;
        return marker.with_scale(scale);
    }
    // x = m · 2^k with m near 1, then m's square root taken ROOTS times:
    // ln x = k·ln 2 + 2^ROOTS · 2·atanh((r-1)/(r+1)) with r = m^(1/2^ROOTS).
    const ROOTS: u32 = 8;
    let k = log2_estimate(x).round() as i64;
    let k_digits = k.unsigned_abs().to_string().len() as u64;
    let fixed = Fixed::new(scale + GUARD + k_digits + 3);
    let (int, s) = x.parts();
    let shifted = if k >= 0 {
        (int << fixed.bits) >> k as u64
    } else {
        (int << fixed.bits) << k.unsigned_abs()
    };
    let mut r = shifted / pow10(s);
    for _ in 0..ROOTS {
        r = fixed.sqrt(&r);
    }
    let z = fixed.div(&(&r - &fixed.one), &(&r + &fixed.one));
    let value = (fixed.odd_series(&z, 1) << (ROOTS + 1)) + fixed.ln2() * k;
    fixed.to_num(value, scale)
}

/// sin x (`quarter` 0) or cos x (`quarter` 1, as cos x = sin(x + π/2)).
fn sine(x: &Num, scale: u64, quarter: i64) -> Fallible<Num> {
    // r below is halved HALVINGS times for the series, then doubled back.
    const HALVINGS: u64 = 16;
    if scale + int_digits(x) > MAX_LIBRARY_DIGITS {
        return Err(too_precise());
    }
    let fixed = Fixed::new(scale + GUARD + int_digits(x) + HALVINGS * 31 / 100);
    let half_pi = fixed.pi() >> 1u32;
    let xf = fixed.of(x);
    // x = q·π/2 + r with |r| ≤ π/4; then sin x is ±sin r or ±cos r by q mod 4.
    let q = (&xf + (&half_pi >> 1u32)).div_floor(&half_pi);
    let r = &xf - &q * &half_pi;
    let turn = (q + quarter)
        .mod_floor(&BigInt::from(4))
        .to_u8()
        .unwrap_or(0);
    let (sin_r, cos_r) = sin_cos(&fixed, &(r >> HALVINGS), HALVINGS);
    let value = match turn {
        0 => sin_r,
        1 => cos_r,
        2 => -sin_r,
        _ => -cos_r,
    };
    fixed.to_num(value, scale)
}

/// (sin 2^h·a, cos 2^h·a) from the series for a small a, and the double-angle formulas
/// sin 2a = 2 sin a cos a, cos 2a = 1 - 2 sin² a.
fn sin_cos(fixed: &Fixed, a: &BigInt, h: u64) -> (BigInt, BigInt) {
    let a2 = fixed.mul(a, a);
    let mut sin = fixed.series(a.clone(), |t, k| {
        -fixed.mul(t, &a2) / ((2 * k) * (2 * k + 1))
    });
    let mut cos = fixed.series(fixed.one.clone(), |t, k| {
        -fixed.mul(t, &a2) / ((2 * k - 1) * (2 * k))
    });
    for _ in 0..h {
        let next_sin = fixed.mul(&sin, &cos) << 1;
        cos = &fixed.one - (fixed.mul(&sin, &sin) << 1);
        sin = next_sin;
    }
    (sin, cos)
}

/// atan x.
fn arctangent(x: &Num, scale: u64) -> Fallible<Num> {
    // atan z = 2·atan(z / (1 + sqrt(1 + z²))), REDUCTIONS times: |z| < 0.004.
    const REDUCTIONS: u32 = 8;
    let fixed = Fixed::new(scale + GUARD + 3);
    let mut z = fixed.of(&x.abs());
    // Past 1, atan z = π/2 - atan(1/z).
    let inverted = z > fixed.one;
    if inverted {
        z = fixed.div(&fixed.one, &z);
    }
    for _ in 0..REDUCTIONS {
        let root = fixed.sqrt(&(&fixed.one + fixed.mul(&z, &z)));
        z = fixed.div(&z, &(&fixed.one + root));
    }
    let mut value = fixed.odd_series(&z, -1) << REDUCTIONS;
    if inverted {
        value = (fixed.pi() >> 1u32) - value;
    }
    if x.is_negative() {
        value = -value;
    }
    fixed.to_num(value, scale)
}

/// The Bessel function of the first kind of integer order n (its fraction dropped):
/// J_n(x) = Σ (-1)^k (x/2)^(2k+n) / (k! (k+n)!). x = p / 10^s stays a fraction of short
/// integers, so each term costs a short multiplication and division.
fn bessel(n: &Num, x: &Num, scale: u64) -> Fallible<Num> {
    let order = n.to_i64().filter(|n| n.abs() <= MAX_BESSEL_ARG);
    let size = x.to_i64().filter(|x| x.abs() <= MAX_BESSEL_ARG);
    let (Some(order), Some(size)) = (order, size) else {
        return Err(format!(
            "j(n,x): n and x must be between -{MAX_BESSEL_ARG} and {MAX_BESSEL_ARG}"
        ));
    };
    let m = order.unsigned_abs();
    // The terms grow to about e^|x| before they cancel out.
    let fixed = Fixed::new(scale + GUARD + size.unsigned_abs() * 4343 / 10_000 + 2);
    let (p, s) = x.parts();
    let two_q = pow10(s) * 2u32;
    let (p2, q2) = (p * p, &two_q * &two_q);
    let mut first = fixed.one.clone();
    for i in 1..=m {
        first = first * p / (&two_q * i);
    }
    // (x/2)² compared with k(k+m) tells when the terms have started to shrink.
    let quarter_sq = fixed.div(&p2, &q2);
    let mut sum = first.clone();
    let mut term = first;
    for k in 1u64.. {
        term = -(term * &p2) / (&q2 * (k * (k + m)));
        // Past the largest term, a zero term ends the sum.
        if term.is_zero() && BigInt::from(k * (k + m)) * &fixed.one > quarter_sq {
            break;
        }
        sum += &term;
    }
    // J_-n = (-1)^n J_n.
    if order < 0 && m % 2 == 1 {
        sum = -sum;
    }
    fixed.to_num(sum, scale)
}

#[cfg(test)]
mod tests {
    use super::super::number::tests::num;
    use super::*;

    fn run(name: &str, args: &[&str], scale: u64) -> String {
        let args: Vec<Num> = args.iter().map(|a| num(a)).collect();
        call(name, &args, scale).unwrap().unwrap().format(10)
    }

    #[test]
    fn true_digits_where_gnu_bc_is_off() {
        assert_eq!(run("c", &["10"], 2), "-.83");
        assert_eq!(
            run("s", &["645992319741912850060612"], 34),
            ".3077310884780098704648630911413235"
        );
        assert_eq!(run("j", &["-5", "3.380363"], 2), "-.07");
    }

    #[test]
    fn large_and_small_arguments() {
        assert_eq!(
            run(
                "l",
                &["100000000000000000000000000000000000000000000000000"],
                30
            ),
            "115.129254649702284200899572734218"
        );
        assert_eq!(run("e", &["-50"], 20), "0");
        assert_eq!(
            run("e", &["100"], 5),
            "26881171418161354484126255515800135873611118.77374"
        );
        assert_eq!(run("a", &["1.0001"], 30), ".785448160897531642948744199985");
        let huge = [num("1")];
        assert!(call("s", &huge, 20_001).unwrap().is_err());
        assert!(call("j", &[num("1"), num("1001")], 5).unwrap().is_err());
    }

    #[test]
    fn twenty_digits_as_gnu_bc_prints_them() {
        assert_eq!(run("e", &["1"], 20), "2.71828182845904523536");
        assert_eq!(run("s", &["1"], 20), ".84147098480789650665");
        assert_eq!(run("c", &["1"], 20), ".54030230586813971740");
        assert_eq!(run("a", &["1"], 20), ".78539816339744830961");
        assert_eq!(run("l", &["2"], 20), ".69314718055994530941");
        assert_eq!(run("j", &["1", "2"], 20), ".57672480775687338720");
        assert_eq!(
            run("l", &["0"], 20),
            "-99999999999999999999.00000000000000000000"
        );
        assert_eq!(run("c", &["0"], 20), "1.00000000000000000000");
    }
}
