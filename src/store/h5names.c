/* h5names.c - region names as HDF5 link names and back: '%' and '/' (and
 * a name "."), which a link name cannot hold as they are, escaped. Used by
 * the writer for every region group and by the reader for a region without
 * a 'name' attribute. */
#include <stdlib.h>
#include <string.h>

#include "sp_h5.h"

/* The link name for a region name; NULL on out of memory. */
char *sp_h5_escape(const char *name)
{
	size_t n = 0;
	for (const char *s = name; *s; s++)
		n += (*s == '%' || *s == '/') ? 3 : 1;
	if (strcmp(name, ".") == 0)
		return strdup("%2E");
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *s = name; *s; s++) {
		if (*s == '%') {
			memcpy(o, "%25", 3);
			o += 3;
		} else if (*s == '/') {
			memcpy(o, "%2F", 3);
			o += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The region name for a link name (any %XX decoded, except %00); NULL on
 * out of memory. */
char *sp_h5_unescape(const char *link)
{
	char *out = malloc(strlen(link) + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *s = link; *s; s++) {
		int hi, lo;
		/* %00 would cut the name short: keep it literally, like any
		 * other sequence that does not decode. */
		if (s[0] == '%' && (hi = hexval(s[1])) >= 0 && (lo = hexval(s[2])) >= 0 &&
		    (hi | lo) != 0) {
			*o++ = (char)(hi * 16 + lo);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}
