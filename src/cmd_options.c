/* cmd_options.c - the option tables of the commands: --help lines and the
 * getopt_long table, from one struct sp_cmd_option array each. */
#include <stdio.h>
#include <string.h>

#include "sp_cmd.h"

void sp_cmd_print_options(FILE *out, const struct sp_cmd_option *o, size_t n)
{
	for (size_t i = 0; i < n; i++, o++) {
		char left[64];
		if (!o->help)
			continue;
		if (o->opt.val < 256)
			snprintf(left, sizeof left, "-%c, --%s%s%s", o->opt.val, o->opt.name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(left, sizeof left, "    --%s%s%s", o->opt.name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(out, "  %-24s %s\n", left, o->help);
	}
}

void sp_cmd_longopts(const struct sp_cmd_option *o, size_t n, struct option *longopts)
{
	for (size_t i = 0; i < n; i++)
		longopts[i] = o[i].opt;
	memset(&longopts[n], 0, sizeof longopts[n]);
}
