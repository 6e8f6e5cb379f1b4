/* base/hostport.c — "HOST:PORT" splitting; see hostport.h. */
#include "base/hostport.h"

#include <stdbool.h>
#include <string.h>

/* A decimal number in [min, max] and nothing after it. */
static bool port_in(const char *text, unsigned min, unsigned max, unsigned *port)
{
    unsigned long value = 0;
    size_t digits = 0;
    for (; text[digits] >= '0' && text[digits] <= '9'; digits++) {
        value = value * 10 + (unsigned long)(text[digits] - '0');
        if (value > max)
            return false;
    }
    if (digits == 0 || text[digits] != '\0' || value < min)
        return false;
    *port = (unsigned)value;
    return true;
}

HostPortError hostport_parse(const char *text, unsigned min_port, unsigned max_port,
                             HostPort *out)
{
    const char *host = text, *colon;
    size_t host_len;
    if (text[0] == '[') {
        const char *bracket = strchr(text, ']');
        if (bracket == NULL || bracket[1] != ':')
            return HOSTPORT_BRACKETS;
        host = text + 1;
        host_len = (size_t)(bracket - host);
        colon = bracket + 1;
    } else {
        if ((colon = strrchr(text, ':')) == NULL)
            return HOSTPORT_NO_HOST;
        host_len = (size_t)(colon - text);
    }
    if (host_len == 0)
        return HOSTPORT_NO_HOST;
    out->host = host;
    out->host_len = host_len;
    if (colon[1] == '\0')
        return HOSTPORT_NO_PORT;
    return port_in(colon + 1, min_port, max_port, &out->port) ? HOSTPORT_OK
                                                              : HOSTPORT_BAD_PORT;
}
