//! Stored times (milliseconds since the Unix epoch) as UTC calendar fields, for the dates
//! front-ends show; it must never read the clock's time zone.

/// A stored time (milliseconds since the Unix epoch) as UTC calendar fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub(crate) second: i64,
    pub(crate) millis: i64,
}

impl UtcTime {
    /// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm); avoids a date crate.
    pub fn of(ms: i64) -> UtcTime {
        let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        UtcTime {
            year: yoe + era * 400 + i64::from(month <= 2),
            month,
            day: doy - (153 * mp + 2) / 5 + 1,
            hour: rem / 3_600_000,
            minute: rem / 60_000 % 60,
            second: rem / 1000 % 60,
            millis: rem % 1000,
        }
    }

    /// RFC 3339 in UTC: `2026-01-02T03:04:05.678Z`.
    pub fn rfc3339(&self) -> String {
        let UtcTime {
            year,
            month,
            day,
            hour,
            minute,
            second,
            millis,
        } = self;
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
    }
}
