/* cmd_recover.c - `scope-profiler recover PARTIAL [-o OUT] [--force]`: the
 * profile of a run that was killed (or still goes), from what it streamed
 * into OUT.partial, written as a finished profile (format version 2); for
 * an MPI job, from what its ranks left in OUT.rank{N} and
 * OUT.rank{N}.partial, merged into one (format version 3, sp_merge.h). */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sp_children.h"
#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_merge.h"
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
		"profile of format version 3 is written again as version 2 (with -o).\n"
		"\n"
		"An MPI job's ranks stream to files of their own, OUT.rank<N>.partial,\n"
		"each finished into OUT.rank<N>, which the end of the run merges into OUT.\n"
		"Given one of those files, or an OUT that is not there but has them beside\n"
		"it, recover merges every rank's file into OUT (format version 3): a\n"
		"rank's finished file whole, a partial one up to its last flush, with one\n"
		"line for each rank that did not finish or left no file. The rank files\n"
		"are only read.\n"
		"\n"
		"A run of --subprocesses that was killed: its OUT.partial names the folder\n"
		"its child processes streamed into, and recover merges their files there\n"
		"with the run's own calls into OUT (format version 3), as the end of the\n"
		"run would have; the folder is kept for this while a child runs and for a\n"
		"day after.\n",
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

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The calls (aggregated ones included) and regions (by name, as summary
 * counts them: one of every rank is one) of p, for the line said at the
 * end. */
static void count(const struct sp_profile *p, long long *calls, size_t *regions)
{
	size_t n = 0;
	*calls = 0;
	for (size_t r = 0; r < p->nranks; r++)
		n += p->ranks[r].nregions;
	const char **names = malloc((n ? n : 1) * sizeof *names);
	n = 0;
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t i = 0; i < p->ranks[r].nregions; i++) {
			const struct sp_region_data *rd = &p->ranks[r].regions[i];
			*calls += rd->stats.num_calls;
			if (names)
				names[n++] = rd->name ? rd->name : "";
		}
	if (!names) {   /* out of memory: the regions of every rank */
		for (size_t r = 0; r < p->nranks; r++)
			n += p->ranks[r].nregions;
		*regions = n;
		return;
	}
	qsort(names, n, sizeof *names, name_cmp);
	*regions = 0;
	for (size_t i = 0; i < n; i++)
		*regions += i == 0 || strcmp(names[i - 1], names[i]) != 0;
	free(names);
}

/* /metadata partial_until_ns: where a recovered partial profile's calls
 * stop. SP_OK or SP_ENOMEM. */
static enum sp_err mark_partial(struct sp_profile *p)
{
	char value[32];
	snprintf(value, sizeof value, "%lld", (long long)p->partial_until_ns);
	return sp_kv_set(&p->meta, &p->nmeta, "partial_until_ns", value, SP_KV_INT) == 0 ? SP_OK : SP_ENOMEM;
}

/* Says what a merge into out did (rc, *rep, *err; its parts are ranks, or
 * with procs processes), and frees *rep. Returns 0, or 1 when it failed. */
static int merged(const char *out, enum sp_err rc, struct sp_merge_report *rep, const struct sp_error *err,
		  int procs)
{
	for (int k = 0; k < rep->nranks; k++)
		if (rep->ranks[k].note[0])
			fprintf(stderr, "scope-profiler: %s: %s\n", CMD, rep->ranks[k].note);
	if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err->msg);
	} else {
		int partial = 0;
		for (int k = 0; k < rep->nranks; k++)
			partial += rep->ranks[k].state == SP_MERGE_PARTIAL;
		fprintf(stderr, "scope-profiler: %s: wrote %s: %lld call%s of %d %s of %d", CMD, out,
			(long long)rep->calls, rep->calls == 1 ? "" : "s", rep->in_out,
			procs ? (rep->in_out == 1 ? "process" : "processes") : (rep->in_out == 1 ? "rank" : "ranks"),
			rep->nranks);
		if (partial)
			fprintf(stderr, ", %d of them up to %s last flush", partial, partial == 1 ? "its" : "their");
		fputc('\n', stderr);
	}
	sp_merge_report_free(rep);
	return rc == SP_OK ? 0 : 1;
}

/* An MPI job's rank files merged into out (job: their OUT). Returns 0, or
 * 1 when no rank's file can be read or out cannot be written. */
static int recover_job(const char *job, const char *out)
{
	struct sp_merge_report rep = {0};
	struct sp_error err = {0};
	enum sp_err rc = sp_merge_ranks(job, out, 0, 0, NULL, 0, &rep, &err);
	return merged(out, rc, &rep, &err, 0);
}

/* A run under --subprocesses that was killed: its own partial file (in,
 * read into p) names the folder its child processes streamed into, and
 * their files there (finished, or partial: killed too, or still running)
 * are merged with it into out (format version 3). Returns 0, or 1 as
 * recover_job; -1 when there is nothing of theirs to merge (the run's own
 * calls alone are recovered then), after a line when the folder is gone. */
static int recover_processes(const char *in, const struct sp_profile *p, const char *out)
{
	const char *dir = p->nranks == 1 ? p->ranks[0].children_dir : NULL;
	size_t n = strlen(in), k = strlen(SUFFIX);
	struct stat sb;
	if (!dir || n <= k || strcmp(in + n - k, SUFFIX) != 0)
		return -1;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "scope-profiler: %s: warning: the run's child processes streamed into '%s', which "
			"is gone (runs on this host remove it a day after): only the run's own calls are "
			"recovered\n", CMD, dir);
		return -1;
	}
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "scope-profiler: %s: warning: cannot read '%s', where the run's child processes "
			"streamed: %s; only the run's own calls are recovered\n", CMD, dir, strerror(errno));
		return -1;
	}
	closedir(d);
	/* OUT among the files it is made of: refused, as for an MPI job. */
	const char *slash = strrchr(out, '/');
	char *out_dir = slash ? strndup(out, (size_t)(slash - out + 1)) : strdup(".");
	char *a = out_dir ? realpath(out_dir, NULL) : NULL, *b = realpath(dir, NULL);
	int inside = a && b && strcmp(a, b) == 0;
	free(out_dir);
	free(a);
	free(b);
	if (inside) {
		sp_cmd_error(CMD, "'%s' is in the folder of the child processes' files to recover; choose another "
			     "output", out);
		return SP_EXIT_USAGE;
	}
	struct sp_merge_report rep = {0};
	struct sp_error err = {0};
	char **kids = NULL;
	size_t nkids = 0;
	enum sp_err rc = sp_children_files(dir, &kids, &nkids, &err);
	if (rc == SP_OK && nkids == 0) {
		sp_children_files_free(kids, nkids);
		return -1;
	}
	const char **files = NULL;
	enum sp_merge_state *said = NULL;
	char *own = NULL;
	if (rc == SP_OK && (nkids > INT32_MAX - 1 || !(files = malloc((nkids + 1) * sizeof *files)) ||
			    !(said = calloc(nkids + 1, sizeof *said)) || !(own = strndup(in, n - k))))
		rc = sp_error_set(&err, SP_ENOMEM, "out of memory");
	if (rc == SP_OK) {
		files[0] = own;         /* its partial file, own.partial: in */
		said[0] = SP_MERGE_PARTIAL;
		for (size_t i = 0; i < nkids; i++)
			files[i + 1] = kids[i];
		rc = sp_merge_processes(files, (int)nkids + 1, out, said, &rep, &err);
	}
	free(files);
	free(said);
	free(own);
	sp_children_files_free(kids, nkids);
	return merged(out, rc, &rep, &err, 1);
}

/* Returns 0, 1 when PARTIAL cannot be read or OUT written, or SP_EXIT_USAGE. */
/* --force: what is at out may be replaced, whatever it holds (without it,
 * out must not exist). 0, or -1 said. */
static int allow(const char *out, int force)
{
	struct sp_error err = {0};
	if (force && sp_outpath_allow(out, NULL, &err) != SP_OK) {
		sp_cmd_error(CMD, "cannot write the profile to %s", err.msg);
		return -1;
	}
	return 0;
}

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
	if (sp_cmd_not_stdout(CMD, outpath, "an HDF5 profile") != 0)
		goto out;
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler recover PARTIAL [-o OUT]"
						 : "one file at a time; usage: scope-profiler recover PARTIAL [-o OUT]");
		goto out;
	}
	const char *in = argv[first];
	char *job = NULL;
	int rank = -1;
	/* An MPI job: a rank's file, or its OUT when it is not there. */
	if (sp_merge_rank_of(in, &job, &rank) && rank < 0 && lstat(in, &sb) == 0) {
		free(job);
		job = NULL;
	}
	if (job) {
		if (!(out = strdup(outpath ? outpath : job))) {
			sp_cmd_error(CMD, "out of memory");
		} else if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			sp_cmd_error(CMD, "'%s' is a folder; -o names the file to write", out);
		} else if (!force && lstat(out, &sb) == 0) {
			sp_cmd_error(CMD, "'%s' exists; --force replaces it", out);
		} else {
			char *rank_file = sp_merge_rank_file(job, 0);
			size_t len = rank_file ? strlen(rank_file) - 1 : 0;   /* "OUT.rank" */
			if (rank_file && strncmp(out, rank_file, len) == 0 && out[len] >= '0' && out[len] <= '9')
				sp_cmd_error(CMD, "'%s' is one of the files to recover; choose another output", out);
			else if (allow(out, force) == 0)
				status = recover_job(job, out);
			free(rank_file);
		}
		free(job);
		goto out;
	}
	if (!(out = outpath ? strdup(outpath) : default_output(in))) {
		if (outpath)
			sp_cmd_error(CMD, "out of memory");
		goto out;
	}
	if (sp_outpath_same_file(out, in)) {
		sp_cmd_error(CMD, "'%s' is the file to recover itself; choose another output", out);
		goto out;
	}
	if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		sp_cmd_error(CMD, "'%s' is a folder; -o names the file to write", out);
		goto out;
	}
	if (!force && lstat(out, &sb) == 0) {
		sp_cmd_error(CMD, "'%s' exists; --force replaces it", out);
		goto out;
	}
	if (allow(out, force) != 0)
		goto out;
	status = 1;
	/* A run killed while it finished the file left it marked as open for
	 * writing: marked closed, it reads as any partial file. */
	if (sp_report_read(in, SP_READ_EVENTS, &p, &err) != SP_OK &&
	    (sp_stream_unmark_dead(in) != 1 || sp_report_read(in, SP_READ_EVENTS, &p, &err) != SP_OK)) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	int kids = recover_processes(in, p, out);
	if (kids >= 0) {
		status = kids;
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
