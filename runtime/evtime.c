/* runtime/evtime.c — event time values to milliseconds since the epoch.
 *
 * Owns the accepted time syntaxes and their conversion; no libc time functions, so the
 * result never depends on TZ or the platform's time_t.
 *
 * Decisions (documented here and in the header's contract):
 * - ISO-8601: `YYYY-MM-DD`, a time (`T`, `t` or one space as separator), `HH:MM:SS`
 *   or `HH:MM`, an optional fraction of any length (truncated to the millisecond, i.e.
 *   rounded toward the past), then a zone, which is required (LANGUAGE.md: "with `Z`
 *   or an offset"): `Z`/`z`, `+hh:mm`, `+hhmm`, `+hh` (or `-`). Without one the text
 *   could be local time, and reading it as UTC would shift every event silently; it
 *   is a dead letter instead. Second 60 (a leap second) is accepted and counts as the
 *   first second of the next minute.
 * - Epoch seconds/milliseconds: JSON numbers, or strings holding a decimal number when
 *   the format is given explicitly (epoch_s / epoch_ms). The decimal text is converted
 *   exactly (no binary floating point), sub-millisecond digits are floored. In the
 *   automatic format a string is always ISO-8601 and a number is epoch seconds.
 * - Accepted range: years 0000-9999 in UTC, after the offset (ms from
 *   EVTIME_MIN_MS to EVTIME_MAX_MS), for every format, so that an alert's time is
 *   always a valid four-digit-year timestamp. */
#include "runtime/evtime.h"

#include <string.h>

#include "runtime/digits.h"

/* A coarse |ms| bound that keeps the number parsers from overflowing: year 9999-12-31
 * is ~2.534e14 ms after the epoch. The exact range is checked last (in_range). */
#define EVTIME_MAX_ABS_MS 253402300800000LL

/* 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
#define EVTIME_MIN_MS (-62167219200000LL)
#define EVTIME_MAX_MS 253402300799999LL

static bool in_range(int64_t ms)
{
    return ms >= EVTIME_MIN_MS && ms <= EVTIME_MAX_MS;
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
    /* Count from 0000-03-01 so the leap day is the last day of the shifted year; eras
     * of 400 years repeat exactly (146097 days). */
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                              /* [0, 399] */
    int64_t mp = (m + 9) % 12;                                /* March = 0 */
    int64_t doy = (153 * mp + 2) / 5 + d - 1;                 /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;      /* [0, 146096] */
    return era * 146097 + doe - 719468;                       /* 719468: 0000-03-01 to 1970-01-01 */
}

static bool is_leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
    static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Reads exactly n digits at *p; false if any is not a digit. */
static bool read_digits(const char **p, const char *end, int n, int *out)
{
    int v = 0;
    if (end - *p < n)
        return false;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool read_zone(const char **p, const char *end, int *offset_min)
{
    const char *s = *p;
    *offset_min = 0;
    if (s == end)
        return false;                /* no zone: see the top of the file */
    if (*s == 'Z' || *s == 'z') {
        *p = s + 1;
        return true;
    }
    if (*s != '+' && *s != '-')
        return false;
    int sign = *s == '-' ? -1 : 1;
    s++;
    int hh, mm = 0;
    if (!read_digits(&s, end, 2, &hh) || hh > 23)
        return false;
    if (s < end && *s == ':') {
        s++;
        if (!read_digits(&s, end, 2, &mm))
            return false;
    } else if (s < end) {
        if (!read_digits(&s, end, 2, &mm))
            return false;
    }
    if (mm > 59)
        return false;
    *offset_min = sign * (hh * 60 + mm);
    *p = s;
    return true;
}

/* Time of day after the date separator, in ms since midnight, and the zone offset. */
static bool read_time_of_day(const char **p, const char *end, int64_t *ms, int *offset_min)
{
    const char *s = *p;
    int hh, mi, ss = 0, frac_ms = 0;
    if (!read_digits(&s, end, 2, &hh) || hh > 23)
        return false;
    if (s == end || *s++ != ':' || !read_digits(&s, end, 2, &mi) || mi > 59)
        return false;
    if (s < end && *s == ':') {
        s++;
        if (!read_digits(&s, end, 2, &ss) || ss > 60)
            return false;
        if (s < end && (*s == '.' || *s == ',')) {
            s++;
            const char *digits = s;
            int scale = 100;
            while (s < end && *s >= '0' && *s <= '9') {
                frac_ms += (*s - '0') * scale;
                scale /= 10;
                s++;
            }
            if (s == digits)
                return false;
        }
    }
    if (!read_zone(&s, end, offset_min))
        return false;
    *ms = ((int64_t)hh * 3600 + mi * 60 + ss) * 1000 + frac_ms;
    *p = s;
    return true;
}

bool evtime_parse_iso(const char *s, size_t len, int64_t *out_ms)
{
    const char *p = s, *end = s + len;
    int y, mo, d;
    if (!read_digits(&p, end, 4, &y) || p == end || *p++ != '-'
        || !read_digits(&p, end, 2, &mo) || mo < 1 || mo > 12 || p == end || *p++ != '-'
        || !read_digits(&p, end, 2, &d) || d < 1 || d > days_in_month(y, mo))
        return false;
    int64_t ms_of_day = 0;
    int offset_min = 0;
    if (p == end || (*p != 'T' && *p != 't' && *p != ' '))
        return false;   /* a date alone has no zone */
    p++;
    if (!read_time_of_day(&p, end, &ms_of_day, &offset_min) || p != end)
        return false;
    int64_t ms = days_from_civil(y, mo, d) * 86400000LL + ms_of_day
                 - (int64_t)offset_min * 60000;
    if (!in_range(ms))
        return false;
    *out_ms = ms;
    return true;
}

/* Exact decimal text (JSON number syntax, leading '+' not allowed) times 10^scale_exp,
 * floored to an integer. False on malformed text or magnitude beyond the time range. */
static bool decimal_to_int_scaled(const char *s, size_t len, int scale_exp, int64_t *out)
{
    const char *p = s, *end = s + len;
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    /* Significant digits as one string of digits with the decimal point at `point`. */
    char digits[40];
    size_t nd = 0;
    long point = 0;
    bool any = false, dropped_nonzero = false, seen_point = false;
    for (; p < end; p++) {
        char c = *p;
        if (c >= '0' && c <= '9') {
            any = true;
            if (nd == 0 && c == '0') {             /* leading zeros carry no digits */
                if (seen_point)
                    point--;
                continue;
            }
            if (nd < sizeof digits) {
                digits[nd++] = c;
                if (!seen_point)
                    point++;
            } else {
                if (!seen_point)
                    point++;
                if (c != '0')
                    dropped_nonzero = true;
            }
        } else if (c == '.' && !seen_point) {
            seen_point = true;
        } else {
            break;
        }
    }
    if (!any)
        return false;
    if (p < end) {
        if (*p != 'e' && *p != 'E')
            return false;
        p++;
        bool eneg = false;
        if (p < end && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        long e = 0;
        if (p == end)
            return false;
        for (; p < end; p++) {
            if (*p < '0' || *p > '9')
                return false;
            if (e < 100000)
                e = e * 10 + (*p - '0');
        }
        point += eneg ? -e : e;
    }
    point += scale_exp;
    if (nd == 0) {
        *out = 0;
        return true;
    }
    if (point > 16)
        return false;                               /* far beyond any representable time */
    int64_t v = 0;
    for (long i = 0; i < point; i++)
        v = v * 10 + (i < (long)nd ? digits[i] - '0' : 0);
    bool has_fraction = dropped_nonzero;
    for (long i = point < 0 ? 0 : point; i < (long)nd; i++)
        if (digits[i] != '0')
            has_fraction = true;
    if (neg)
        v = has_fraction ? -v - 1 : -v;
    if (v > EVTIME_MAX_ABS_MS || v < -EVTIME_MAX_ABS_MS)
        return false;
    *out = v;
    return true;
}

/* Most event times are integers of epoch milliseconds or seconds: those (an optional
 * '-' and 1..18 digits, so no overflow before the range check) skip the general
 * routine's digit string. FAST_NOT_PLAIN sends anything else to decimal_to_int_scaled,
 * which gives the same answer for these texts, only slower. */
#define PLAIN_INTEGER_MAX_DIGITS 18
typedef enum { FAST_NOT_PLAIN, FAST_OUT_OF_RANGE, FAST_OK } FastResult;

static FastResult plain_integer_scaled(const char *s, size_t len, int scale_exp, int64_t *out)
{
    bool neg = len > 0 && s[0] == '-';
    const char *digits = s + neg, *end = s + len;
    if (digits == end || end - digits > PLAIN_INTEGER_MAX_DIGITS)
        return FAST_NOT_PLAIN;
    uint64_t v;
    if (!digit_text_value(digits, end, &v))
        return FAST_NOT_PLAIN;
    /* EVTIME_MAX_ABS_MS is a whole number of seconds, so the bound scales exactly. */
    uint64_t scale = scale_exp == 3 ? 1000 : 1;
    if (v > (uint64_t)EVTIME_MAX_ABS_MS / scale)
        return FAST_OUT_OF_RANGE;
    int64_t ms = (int64_t)(v * scale);
    *out = neg ? -ms : ms;
    return FAST_OK;
}

/* Exact decimal text to ms: the fast path when it applies, else the general one. */
static bool text_to_ms(const char *s, size_t len, int scale_exp, int64_t *out_ms)
{
    FastResult fast = plain_integer_scaled(s, len, scale_exp, out_ms);
    if (fast != FAST_NOT_PLAIN)
        return fast == FAST_OK;
    return decimal_to_int_scaled(s, len, scale_exp, out_ms);
}

static bool number_to_ms(const Value *v, int scale_exp, int64_t *out_ms)
{
    if (v->type == V_NUM && v->raw != NULL)
        return text_to_ms(v->raw, v->raw_len, scale_exp, out_ms);
    if (v->type == V_NUM) {
        /* Computed numbers have no text: go through doubles, flooring like the text path. */
        double ms = v->num * (scale_exp == 3 ? 1000.0 : 1.0);
        if (!(ms <= (double)EVTIME_MAX_ABS_MS && ms >= -(double)EVTIME_MAX_ABS_MS))
            return false;
        int64_t whole = (int64_t)ms;
        *out_ms = (double)whole > ms ? whole - 1 : whole;
        return true;
    }
    if (v->type == V_STR)
        return text_to_ms(v->s, v->len, scale_exp, out_ms);
    return false;
}

static bool parse_in_format(const Value *v, TimeFormat fmt, int64_t *out_ms)
{
    switch (fmt) {
    case TIME_AUTO:
        if (v->type == V_STR)
            return evtime_parse_iso(v->s, v->len, out_ms);
        return v->type == V_NUM && number_to_ms(v, 3, out_ms);
    case TIME_ISO8601:
        return v->type == V_STR && evtime_parse_iso(v->s, v->len, out_ms);
    case TIME_EPOCH_S:
        return number_to_ms(v, 3, out_ms);
    case TIME_EPOCH_MS:
        return number_to_ms(v, 0, out_ms);
    }
    return false;
}

bool evtime_parse(const Value *v, TimeFormat fmt, int64_t *out_ms)
{
    if (v->type == V_TIME) {
        *out_ms = v->i;
        return true;
    }
    int64_t ms;
    if (!parse_in_format(v, fmt, &ms) || !in_range(ms))
        return false;
    *out_ms = ms;
    return true;
}
