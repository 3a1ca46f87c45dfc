/* cmd_recover.c - `scope-profiler recover PARTIAL [-o OUT] [--force]`: the
 * profile of a run that was killed (or still goes), from what it streamed
 * into OUT.partial, written as a finished profile (format version 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_outpath.h"
#include "sp_render.h"
#include "sp_stream.h"
#include "sp_tree.h"

#define CMD "recover"
#define SUFFIX ".partial"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler recover [OPTIONS] PARTIAL",
	.about =
		"Writes the profile a run streamed into OUT.partial as a finished one:\n"
		"for a run that was killed (SIGKILL, the OOM killer, a batch system's time\n"
		"limit) or one still going. Every call up to the run's last flush is kept,\n"
		"a call still open then ending there; the file written is format version\n"
		"2 with a call tree, as a run that ends writes it, and /metadata\n"
		"partial_until_ns says where the calls stop. OUT is PARTIAL without its\n"
		"'.partial' suffix unless -o names it; PARTIAL is only read. A finished\n"
		"profile of format version 3 is written again as version 2 (with -o).\n",
	.notes =
		"Exit status: 0; 1 when PARTIAL cannot be read or OUT cannot be written\n"
		"(OUT is then left as it was); 2 for usage errors, among them an OUT that\n"
		"exists without --force.\n",
};

/* OUT when -o does not name it: PARTIAL less ".partial" (malloc'd), or NULL
 * after saying why. */
static char *default_output(const char *in)
{
	size_t n = strlen(in), k = strlen(SUFFIX);
	const char *base = strrchr(in, '/');
	base = base ? base + 1 : in;
	if (n <= k || strcmp(in + n - k, SUFFIX) != 0 || strlen(base) <= k) {
		sp_cmd_error(CMD, "'%s' does not end in '%s'; name the profile to write with -o OUT", in, SUFFIX);
		return NULL;
	}
	char *out = strndup(in, n - k);
	if (!out)
		sp_cmd_error(CMD, "out of memory");
	return out;
}

/* The calls and regions of p, for the line said at the end. */
static void count(const struct sp_profile *p, long long *calls, size_t *regions)
{
	*calls = 0;
	*regions = 0;
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t i = 0; i < p->ranks[r].nregions; i++) {
			const struct sp_region_data *rd = &p->ranks[r].regions[i];
			*calls += rd->aggregate ? 0 : rd->stats.num_calls;
			*regions += 1;
		}
}

/* /metadata partial_until_ns: where a recovered partial profile's calls
 * stop. SP_OK or SP_ENOMEM. */
static enum sp_err mark_partial(struct sp_profile *p)
{
	char value[32];
	snprintf(value, sizeof value, "%lld", (long long)p->partial_until_ns);
	struct sp_kv *meta = realloc(p->meta, (p->nmeta + 1) * sizeof *meta);
	if (!meta)
		return SP_ENOMEM;
	p->meta = meta;
	char *key = strdup("partial_until_ns"), *val = strdup(value);
	if (!key || !val) {
		free(key);
		free(val);
		return SP_ENOMEM;
	}
	p->meta[p->nmeta++] = (struct sp_kv){key, val, SP_KV_INT};
	return SP_OK;
}

/* Returns 0, 1 when PARTIAL cannot be read or OUT written, or SP_EXIT_USAGE. */
int cmd_recover(int argc, char **argv)
{
	const char *outpath = NULL;
	int force = 0, status = SP_EXIT_USAGE;
	char *out = NULL;
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	struct stat sb;
	const struct sp_opt options[] = {
		{'o', "output", SP_OPT_STRING, &outpath, 0, "OUT",
		 "write the profile to OUT (default: PARTIAL less '.partial')", NULL},
		{0, "outfile", SP_OPT_STRING, &outpath, 0, "OUT", NULL, NULL},
		{0, "force", SP_OPT_FLAG, &force, 1, NULL, "replace OUT when it exists", NULL},
	};
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, NULL);
	if (first < 0)
		return sp_opt_status(first);
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler recover PARTIAL [-o OUT]"
						 : "one file at a time; usage: scope-profiler recover PARTIAL [-o OUT]");
		goto out;
	}
	const char *in = argv[first];
	if (!(out = outpath ? strdup(outpath) : default_output(in))) {
		if (outpath)
			sp_cmd_error(CMD, "out of memory");
		goto out;
	}
	if (sp_outpath_same_file(out, in)) {
		sp_cmd_error(CMD, "'%s' is the file to recover itself; choose another output", out);
		goto out;
	}
	if (!force && lstat(out, &sb) == 0) {
		sp_cmd_error(CMD, "'%s' exists; --force replaces it", out);
		goto out;
	}
	status = 1;
	/* A run killed while it finished the file left it marked as open for
	 * writing: marked closed, it reads as any partial file. */
	if (sp_report_read(in, SP_READ_EVENTS, &p, &err) != SP_OK &&
	    (sp_stream_unmark_dead(in) != 1 || sp_report_read(in, SP_READ_EVENTS, &p, &err) != SP_OK)) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	int partial = p->partial;
	if (partial && mark_partial(p) != SP_OK) {
		sp_cmd_error(CMD, "out of memory");
		goto out;
	}
	p->format_version = 2;
	if (sp_h5_write(p, out, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	long long calls;
	size_t regions;
	char until[64];
	count(p, &calls, &regions);
	fprintf(stderr, "scope-profiler: %s: wrote %s: %lld call%s of %zu region%s%s%s\n", CMD, out, calls,
		calls == 1 ? "" : "s", regions, regions == 1 ? "" : "s", partial ? "; " : "",
		partial ? sp_render_partial_until(until, sizeof until, p) : "");
	status = 0;
out:
	sp_profile_free(p);
	free(out);
	return status;
}
