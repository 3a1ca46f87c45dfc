/* options.c - the one option parser of the commands: a table of struct
 * sp_opt rows, each pointing at the variable it sets, parsed with
 * getopt_long, and the --help text printed from the same table. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sp_cmd.h"
#include "sp_select.h"

static const struct sp_opt help_opt = {
	'h', "help", SP_OPT_FLAG, NULL, 0, NULL, "show this help and exit", NULL,
};

/* "-o, --outfile PATH" or "    --flat" into buf. */
static int option_left(char *buf, size_t len, const struct sp_opt *o)
{
	const char *sep = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
	if (o->short_name && o->long_name)
		return snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->long_name, sep, arg);
	if (o->short_name)
		return snprintf(buf, len, "-%c%s%s", o->short_name, sep, arg);
	return snprintf(buf, len, "    --%s%s%s", o->long_name, sep, arg);
}

void sp_opt_usage(FILE *out, const struct sp_cmd_help *h, const struct sp_opt *opts, size_t n)
{
	char left[80];
	int width = option_left(left, sizeof left, &help_opt);
	for (size_t i = 0; i < n; i++) {
		int w = option_left(left, sizeof left, &opts[i]);
		if (opts[i].help && w > width)
			width = w;
	}
	const char *u = h->usage;
	for (int first = 1; *u; first = 0) {
		size_t len = strcspn(u, "\n");
		fprintf(out, "%s%.*s\n", first ? "usage: " : "       ", (int)len, u);
		u += len + (u[len] == '\n');
	}
	fprintf(out, "\n%s\nOptions:\n", h->about);
	for (size_t i = 0; i <= n; i++) {
		const struct sp_opt *o = i < n ? &opts[i] : &help_opt;
		if (!o->help)
			continue;
		option_left(left, sizeof left, o);
		fprintf(out, "  %-*s  %s\n", width, left, o->help);
	}
	if (h->notes)
		fprintf(out, "\n%s", h->notes);
}

/* The table's row for getopt_long's answer c (index i in the long table). */
static const struct sp_opt *row_of(const struct sp_opt *opts, size_t n, int c)
{
	if (c >= 256 && (size_t)(c - 256) < n)
		return &opts[c - 256];
	for (size_t i = 0; c > 0 && i < n; i++)
		if (opts[i].short_name == c)
			return &opts[i];
	return NULL;
}

static int usage_error(const struct sp_cmd_help *h, const char *what)
{
	sp_cmd_error(h->name, "%s; see 'scope-profiler %s --help'", what, h->name);
	return -2;
}

/* getopt_long's tables for opts[0..n): *longopts (a row's value is 256 +
 * its index; --help last) and *shorts ("h" and the rows' letters, ':' after
 * those taking an argument). 0, or -1 out of memory (nothing allocated). */
static int getopt_tables(const struct sp_opt *opts, size_t n, unsigned flags, struct option **longopts,
			 char **shorts)
{
	struct option *l = calloc(n + 2, sizeof *l);
	char *s = malloc(2 * n + 5);
	if (!l || !s) {
		free(l);
		free(s);
		return -1;
	}
	size_t nl = 0, ns = 0;
	if (flags & SP_OPT_IN_ORDER)
		s[ns++] = '+';
	s[ns++] = ':';            /* a missing argument is ':', not '?' */
	s[ns++] = 'h';
	for (size_t i = 0; i < n; i++) {
		if (opts[i].long_name)
			l[nl++] = (struct option){ opts[i].long_name,
				opts[i].arg ? required_argument : no_argument, NULL, 256 + (int)i };
		if (opts[i].short_name) {
			s[ns++] = opts[i].short_name;
			if (opts[i].arg)
				s[ns++] = ':';
		}
	}
	l[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
	s[ns] = '\0';
	*longopts = l;
	*shorts = s;
	return 0;
}

/* Says what is wrong with the option getopt_long answered c for (':' a
 * missing argument, '?' an unknown option or an unwanted argument); -2. */
static int bad_option(const struct sp_cmd_help *h, const struct sp_opt *opts, size_t n, int c, char **argv)
{
	char what[256];
	const struct sp_opt *bad = row_of(opts, n, optopt);
	if (bad && bad->long_name)
		snprintf(what, sizeof what, "--%s %s", bad->long_name,
			 bad->arg ? "needs an argument" : "takes no argument");
	else if (optopt && optopt < 256)
		snprintf(what, sizeof what, c == ':' ? "option -%c needs an argument"
						   : "unknown option -%c", optopt);
	else
		snprintf(what, sizeof what, "unknown option '%s'", argv[optind - 1]);
	return usage_error(h, what);
}

/* Stores row o's value (its argument optarg, when it takes one). 0; 1 when
 * option parsing ends there (SP_OPT_STOP); -2 after saying what is wrong. */
static int set_option(const struct sp_cmd_help *h, const struct sp_opt *o, void *ctx)
{
	char what[256];
	switch (o->type) {
	case SP_OPT_FLAG:
		*(int *)o->value = o->set;
		break;
	case SP_OPT_STRING:
	case SP_OPT_STOP:
		if (!*optarg) {
			snprintf(what, sizeof what, "%s%s needs a non-empty argument",
				 o->long_name ? "--" : "-", o->long_name ? o->long_name : (char[]){o->short_name, 0});
			return usage_error(h, what);
		}
		*(const char **)o->value = optarg;
		if (o->type == SP_OPT_STOP)
			return 1;
		break;
	case SP_OPT_LIST: {
		struct sp_opt_list *l = o->value;
		const char **items = realloc(l->items, (l->n + 1) * sizeof *items);
		if (!items) {
			sp_cmd_error(h->name, "out of memory");
			return -2;
		}
		items[l->n++] = optarg;
		l->items = items;
		break;
	}
	case SP_OPT_CALL:
		what[0] = '\0';
		if (o->call(o, o->arg ? optarg : NULL, ctx, what, sizeof what) != 0) {
			sp_cmd_error(h->name, "%s", what[0] ? what : "bad option");
			return -2;
		}
		break;
	}
	return 0;
}

int sp_opt_parse(const struct sp_cmd_help *h, const struct sp_opt *opts, size_t n,
		 int argc, char **argv, unsigned flags, void *ctx)
{
	struct option *longopts;
	char *shorts;
	if (getopt_tables(opts, n, flags, &longopts, &shorts) != 0) {
		sp_cmd_error(h->name, "out of memory");
		return -2;
	}
	int result = -2, c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
		const struct sp_opt *o = row_of(opts, n, c);
		if (c == 'h' && !(o && o->short_name == 'h')) {
			sp_opt_usage(stdout, h, opts, n);
			result = -1;
			goto out;
		}
		if (c == ':' || c == '?' || !o) {
			result = bad_option(h, opts, n, c, argv);
			goto out;
		}
		int set = set_option(h, o, ctx);
		if (set != 0) {
			result = set > 0 ? optind : set;
			goto out;
		}
	}
	result = optind;
out:
	free(longopts);
	free(shorts);
	return result;
}

int sp_opt_select(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	struct sp_error e = {0};
	if (sp_select_option(ctx, o->set, arg, &e) == SP_OK)
		return 0;
	snprintf(err, len, "%s", e.msg);
	return -1;
}

int sp_cmd_not_stdout(const char *cmd, const char *path, const char *what)
{
	if (!path || strcmp(path, "-") != 0)
		return 0;
	sp_cmd_error(cmd, "-o -: %s cannot go to standard output; name it (./- for one called '-')", what);
	return -1;
}
