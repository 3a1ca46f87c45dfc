/* cmd_options.c - the option tables of the commands: --help lines and the
 * getopt_long table, from one struct sp_cmd_option array each. */
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"

/* "-o, --outfile PATH" or "    --flat" into buf. */
static int option_left(char *buf, size_t len, const struct sp_cmd_option *o)
{
	if (o->opt.val < 256)
		return snprintf(buf, len, "-%c, --%s%s%s", o->opt.val, o->opt.name,
				o->arg ? " " : "", o->arg ? o->arg : "");
	return snprintf(buf, len, "    --%s%s%s", o->opt.name, o->arg ? " " : "",
			o->arg ? o->arg : "");
}

int sp_cmd_print_options(FILE *out, const struct sp_cmd_option *o, size_t n)
{
	char left[64];
	int width = 0;
	for (size_t i = 0; i < n; i++) {
		int w = option_left(left, sizeof left, &o[i]);
		if (o[i].help && w > width)
			width = w;
	}
	for (size_t i = 0; i < n; i++) {
		if (!o[i].help)
			continue;
		option_left(left, sizeof left, &o[i]);
		fprintf(out, "  %-*s  %s\n", width, left, o[i].help);
	}
	return width;
}

void sp_cmd_longopts(const struct sp_cmd_option *o, size_t n, struct option *longopts)
{
	for (size_t i = 0; i < n; i++)
		longopts[i] = o[i].opt;
	memset(&longopts[n], 0, sizeof longopts[n]);
}
