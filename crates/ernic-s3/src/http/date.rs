//! HTTP dates (RFC 9110 §5.6.7): [`http_date`] writes the IMF-fixdate a
//! `Date` or `Last-Modified` header carries, [`parse_http_date`] reads the
//! three forms a client may send (`If-Modified-Since` and friends).
//!
//! Times are Unix seconds; the civil calendar is the proleptic Gregorian
//! one, converted by hand (Howard Hinnant's `days_from_civil` and
//! `civil_from_days`). Nothing here reads a clock and nothing panics, for any
//! `i64` or any text.

const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const WEEKDAYS_LONG: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// (year, month 1..=12, day 1..=31) of a day counted from 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
    let mp = (5 * doy + 2) / 153; // [0, 11]
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // [1, 31]
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // [1, 12]
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The day counted from 1970-01-01 of a civil date (month 1..=12, day
/// 1..=31; the year within ±2^40 so nothing overflows).
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400); // [0, 399]
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 }; // [0, 11]
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1; // [0, 365]
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; // [0, 146096]
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The IMF-fixdate of a Unix time: `Sun, 06 Nov 1994 08:49:37 GMT`.
///
/// Years past 9999 print with more digits and years before 1 as negative
/// numbers (no client sends those back; nothing panics).
pub fn http_date(unix_secs: i64) -> String {
    let days = unix_secs.div_euclid(86_400);
    let secs = unix_secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let wd = (days.rem_euclid(7) + 4) % 7;
    format!(
        "{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[wd as usize],
        d,
        MONTHS[(m - 1) as usize],
        y,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Reads an HTTP date in any of the three forms RFC 9110 §5.6.7 lets a
/// recipient accept, returning Unix seconds:
/// - IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`;
/// - RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year 70–99 is
///   19xx, 00–69 is 20xx: a fixed pivot, since nothing here reads a clock);
/// - asctime `Sun Nov  6 08:49:37 1994`.
///
/// The weekday must be a weekday's name but is not checked against the
/// date; the date and time must exist (second 60, a leap second, is
/// allowed). None for anything else.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() == 29 && b.get(3) == Some(&b',') {
        imf_fixdate(b)
    } else if b.len() == 24 && b.get(3) == Some(&b' ') {
        asctime(b)
    } else {
        rfc850(b)
    }
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`.
fn imf_fixdate(b: &[u8]) -> Option<i64> {
    weekday(b.get(..3)?, &WEEKDAYS)?;
    lit(b, 3, b", ")?;
    let d = num(b, 5, 2)?;
    lit(b, 7, b" ")?;
    let m = month(b.get(8..11)?)?;
    lit(b, 11, b" ")?;
    let y = num(b, 12, 4)?;
    lit(b, 16, b" ")?;
    let t = time(b, 17)?;
    lit(b, 25, b" GMT")?;
    assemble(i64::from(y), m, d, t)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`.
fn rfc850(b: &[u8]) -> Option<i64> {
    let comma = b.iter().position(|&c| c == b',')?;
    weekday(&b[..comma], &WEEKDAYS_LONG)?;
    let r = &b[comma..];
    if r.len() != 24 {
        return None;
    }
    lit(r, 0, b", ")?;
    let d = num(r, 2, 2)?;
    lit(r, 4, b"-")?;
    let m = month(r.get(5..8)?)?;
    lit(r, 8, b"-")?;
    let yy = num(r, 9, 2)?;
    lit(r, 11, b" ")?;
    let t = time(r, 12)?;
    lit(r, 20, b" GMT")?;
    let y = if yy >= 70 { 1900 + yy } else { 2000 + yy };
    assemble(i64::from(y), m, d, t)
}

/// `Sun Nov  6 08:49:37 1994`.
fn asctime(b: &[u8]) -> Option<i64> {
    weekday(b.get(..3)?, &WEEKDAYS)?;
    lit(b, 3, b" ")?;
    let m = month(b.get(4..7)?)?;
    lit(b, 7, b" ")?;
    let d = if b.get(8) == Some(&b' ') {
        num(b, 9, 1)?
    } else {
        num(b, 8, 2)?
    };
    lit(b, 10, b" ")?;
    let t = time(b, 11)?;
    lit(b, 19, b" ")?;
    let y = num(b, 20, 4)?;
    assemble(i64::from(y), m, d, t)
}

fn lit(b: &[u8], at: usize, want: &[u8]) -> Option<()> {
    (b.get(at..at + want.len())? == want).then_some(())
}

/// `len` decimal digits at `at`.
fn num(b: &[u8], at: usize, len: usize) -> Option<u32> {
    b.get(at..at + len)?.iter().try_fold(0u32, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
    })
}

fn weekday(name: &[u8], names: &[&str; 7]) -> Option<()> {
    names.iter().any(|n| n.as_bytes() == name).then_some(())
}

fn month(name: &[u8]) -> Option<u32> {
    MONTHS
        .iter()
        .position(|n| n.as_bytes() == name)
        .map(|i| i as u32 + 1)
}

/// `HH:MM:SS` at `at`, as seconds into the day.
fn time(b: &[u8], at: usize) -> Option<u32> {
    let h = num(b, at, 2)?;
    lit(b, at + 2, b":")?;
    let m = num(b, at + 3, 2)?;
    lit(b, at + 5, b":")?;
    let s = num(b, at + 6, 2)?;
    (h < 24 && m < 60 && s <= 60).then_some(h * 3600 + m * 60 + s)
}

fn assemble(y: i64, m: u32, d: u32, secs: u32) -> Option<i64> {
    if d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400 + i64::from(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 9110 §5.6.7's example, in its three forms.
    const EXAMPLE: i64 = 784_111_777;

    #[test]
    fn rfc_example_writes_byte_exact() {
        assert_eq!(http_date(EXAMPLE), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(http_date(-1), "Wed, 31 Dec 1969 23:59:59 GMT");
        assert_eq!(http_date(253_402_300_799), "Fri, 31 Dec 9999 23:59:59 GMT");
    }

    #[test]
    fn rfc_example_reads_in_every_form() {
        for s in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(s), Some(EXAMPLE), "{s}");
        }
        assert_eq!(
            parse_http_date("Thursday, 01-Jan-09 00:00:00 GMT"),
            Some(1_230_768_000)
        );
        assert_eq!(
            parse_http_date("Thu Jan 15 00:00:00 2009"),
            Some(1_231_977_600)
        );
    }

    #[test]
    fn refuses_what_is_not_a_date() {
        for s in [
            "",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT ",
            "Sun, 0x Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 06 08:49:37 94",
            "Sun Nov  0 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{e9}",
            "\u{e9}\u{e9}, 06 Nov 1994 08:49:37 GM",
        ] {
            assert_eq!(parse_http_date(s), None, "{s:?}");
        }
    }

    proptest! {
        #[test]
        fn round_trips(t in -62_135_596_800i64..=253_402_300_799) {
            let s = http_date(t);
            prop_assert_eq!(s.len(), 29);
            prop_assert_eq!(parse_http_date(&s), Some(t));
            // The same instant in the other two forms.
            let (wd, rest) = s.split_at(3);
            let long = WEEKDAYS_LONG[WEEKDAYS.iter().position(|w| *w == wd).unwrap()];
            let (d, mon, y, hms) = (&rest[2..4], &rest[5..8], &rest[9..13], &rest[14..22]);
            let asc = format!("{wd} {mon} {:>2} {hms} {y}", d.trim_start_matches('0'));
            prop_assert_eq!(parse_http_date(&asc), Some(t));
            let year: i64 = y.parse().unwrap();
            if (1970..2070).contains(&year) {
                let r850 = format!("{long}, {d}-{mon}-{} {hms} GMT", &y[2..]);
                prop_assert_eq!(parse_http_date(&r850), Some(t));
            }
        }

        #[test]
        fn never_panics(s in "\\PC{0,40}", t in any::<i64>()) {
            let _ = parse_http_date(&s);
            let _ = http_date(t);
        }
    }
}
