/* base/isotime.c — ISO-8601 times by hand; see isotime.h. */
#include "base/isotime.h"

#include <string.h>

#define MS_PER_DAY INT64_C(86400000)

/* Month and day of day `doe` of a 400-year era of the proleptic Gregorian calendar,
 * with years starting in March so the leap day is the last day of the year; returns
 * the year within the era, March-based. */
static unsigned date_in_era(unsigned doe, unsigned *month, unsigned *day)
{
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *day = doy - (153 * mp + 2) / 5 + 1;
    *month = mp < 10 ? mp + 3 : mp - 9;
    return yoe;
}

#define DAYS_PER_ERA 146097
#define ERA0_TO_EPOCH_DAYS 719468    /* 0000-03-01 to 1970-01-01 */

static const char two_digits[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static char *put2(char *p, unsigned v)
{
    memcpy(p, two_digits + 2 * v, 2);
    return p + 2;
}

/* printf's "%04d": at least four characters, the minus sign counting as one. */
static char *put_year(char *p, int year)
{
    unsigned mag = year < 0 ? 0u - (unsigned)year : (unsigned)year;
    size_t width = 4;
    if (year < 0) {
        *p++ = '-';
        width = 3;
    }
    char rev[12];
    size_t n = 0;
    do {
        rev[n++] = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag);
    while (n < width)
        rev[n++] = '0';
    while (n)
        *p++ = rev[--n];
    return p;
}

/* "-MM-DDTHH:MM:SS.mmmZ" and a NUL after the year. */
static size_t put_rest(char *out, char *p, unsigned month, unsigned day, unsigned ms_of_day)
{
    unsigned secs = ms_of_day / 1000, msec = ms_of_day % 1000;
    *p++ = '-';
    p = put2(p, month);
    *p++ = '-';
    p = put2(p, day);
    *p++ = 'T';
    p = put2(p, secs / 3600);
    *p++ = ':';
    p = put2(p, secs / 60 % 60);
    *p++ = ':';
    p = put2(p, secs % 60);
    *p++ = '.';
    *p++ = (char)('0' + msec / 100);
    p = put2(p, msec % 100);
    *p++ = 'Z';
    *p = '\0';
    return (size_t)(p - out);
}

/* 1970-01-01 to 9999-12-31, the times alerts have: unsigned 32-bit arithmetic after
 * the first division, and a year of exactly four digits. */
#define FAST_END_MS INT64_C(253402300800000)

static size_t format_usual(uint64_t ms, char out[32])
{
    uint32_t z = (uint32_t)(ms / (uint64_t)MS_PER_DAY) + ERA0_TO_EPOCH_DAYS;
    uint32_t era = z / DAYS_PER_ERA;
    unsigned month, day;
    unsigned yoe = date_in_era(z - era * DAYS_PER_ERA, &month, &day);
    unsigned year = yoe + era * 400 + (month <= 2);
    char *p = put2(out, year / 100);
    p = put2(p, year % 100);
    return put_rest(out, p, month, day, (unsigned)(ms % (uint64_t)MS_PER_DAY));
}

size_t time_format_iso(int64_t ms, char out[32])
{
    if (ms >= 0 && ms < FAST_END_MS)
        return format_usual((uint64_t)ms, out);
    int64_t days = ms / MS_PER_DAY;
    int64_t rem = ms % MS_PER_DAY;
    if (rem < 0) {
        rem += MS_PER_DAY;
        days--;
    }
    int64_t z = days + ERA0_TO_EPOCH_DAYS;
    int64_t era = (z >= 0 ? z : z - (DAYS_PER_ERA - 1)) / DAYS_PER_ERA;
    unsigned month, day;
    unsigned yoe = date_in_era((unsigned)(z - era * DAYS_PER_ERA), &month, &day);
    int64_t year = (int64_t)yoe + era * 400 + (month <= 2);
    /* int64 milliseconds span about +-292 million years: the year fits an int. */
    return put_rest(out, put_year(out, (int)year), month, day, (unsigned)rem);
}
