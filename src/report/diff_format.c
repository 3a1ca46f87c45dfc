/* diff_format.c - the cells and names that diff.c (the table, the JSON)
 * and diff_gate.c (the --fail-above lines) both print (diff_int.h): the
 * bottom of the diff, so that neither of the two calls the other's
 * helpers. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sp_render.h"
#include "diff_int.h"

/* Seconds from ns, without padding: "0.002191", "12345.7". */
char *sp_diff_secs(char *buf, double ns)
{
	const char *s = sp_render_seconds(buf, CELL, ns);
	memmove(buf, s + strspn(s, " "), strlen(s + strspn(s, " ")) + 1);
	return buf;
}

char *sp_diff_percent(char *buf, double pct)
{
	if (isnan(pct))
		snprintf(buf, CELL, "-");
	else
		snprintf(buf, CELL, fabs(pct) < 1e6 ? "%+.1f%%" : "%+.3g%%", pct);
	return buf;
}

/* A name for a one-line message: control characters as '?', cut at 80 bytes. */
const char *sp_diff_plain(char *buf, size_t len, const char *s)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len && i < 80; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}
