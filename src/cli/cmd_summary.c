/* cmd_summary.c - `scope-profiler summary FILE`: the call tree and the region
 * table of a profile, from its summary attributes alone when it has them. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sp_children.h"
#include "sp_cmd.h"
#include "sp_stream.h"
#include "sp_h5.h"
#include "sp_merge.h"
#include "sp_tree.h"
#include "sp_render.h"
#include "sp_select.h"

#define CMD "summary"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler summary [OPTIONS] FILE",
	.about =
		"Prints the call tree (nesting reconstructed by containment, with (own)\n"
		"rows for a region's self time and repeated calls collapsed as 'name (Nx)')\n"
		"and the region table (calls, total, self, mean, min, max, std; with\n"
		"several ranks, per-rank min/max and imbalance). A region's total counts\n"
		"a recursive region once, as cProfile's cumulative time does (a call\n"
		"nested in a call of the same region adds nothing; calls counts every\n"
		"call); self is its total less the calls nested directly in it\n"
		"(cProfile's tottime). Times are in ns, µs, ms or s, three digits; names\n"
		"too long for their column lose their middle. Reads only the per-region\n"
		"summaries when the file has them, so its cost does not grow with events.\n"
		"With several ranks the header also says which ranks ran on which host\n"
		"and, from the metadata's omp_num_threads, how many cores they used.\n"
		"\n"
		"Any profile fits a screen: the tree shows its 16 heaviest entries (with\n"
		"their callers; a list with entries left out ends in a '… N more' row\n"
		"holding their time), the table its first 16 rows, and a last line says\n"
		"what was left out. --top, --depth and --all choose.\n",
	.notes =
		SP_HELP_PATTERN
		"--exclude wins over --include. A region left out of the call tree hands\n"
		"its children to its nearest shown ancestor, and its own time shows in\n"
		"that ancestor's (own) row. --sort orders the region table (mean: per\n"
		"call; max: the longest call; self: self time); the tree keeps the order\n"
		"in which calls started. --json ignores --flat and --tree; its times are\n"
		"seconds (total_s counting recursion once, raw_total_s the plain sum of\n"
		"every call, self_s).\n"
		"--follow watches a run that streams (FILE.partial, or FILE while its\n"
		"partial file is there; an MPI job's FILE.rankN.partial, or FILE: rank\n"
		"0's): the summary again every 2 seconds, in place on a terminal (as top\n"
		"does), else one block after another, until the run ends and FILE is\n"
		"finished (status 0; the job's ranks merged), or the run is gone without\n"
		"finishing it (status 1: scope-profiler recover FILE.partial; MPI:\n"
		"recover FILE), which is known only on the run's own host. With --json\n"
		"it waits as quietly and prints one document, the finished file's.\n",
};

/* --top N, --depth N: a whole number >= 1 into an int. */
static int parse_count(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || *end || end == arg || v < 1 || v > INT_MAX) {
		int large = !*end && end != arg && (v > INT_MAX || (errno == ERANGE && v > 0));
		snprintf(err, len, large ? "--%s takes a whole number from 1 to 2147483647, not '%s'"
				   : "--%s takes a whole number of at least 1, not '%s'", o->long_name, arg);
		return -1;
	}
	*(int *)o->value = (int)v;
	return 0;
}

static int parse_sort(const struct sp_opt *o, const char *key, void *ctx, char *err, size_t len)
{
	enum sp_render_sort *out = o->value;
	static const char *const names[] = {
		[SP_SORT_TOTAL] = "total", [SP_SORT_CALLS] = "calls", [SP_SORT_MEAN] = "mean",
		[SP_SORT_MAX] = "max", [SP_SORT_NAME] = "name", [SP_SORT_SELF] = "self",
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(key, names[i]) == 0) {
			*out = (enum sp_render_sort)i;
			return 0;
		}
	snprintf(err, len, "--sort takes total, self, calls, mean, max or name, not '%s'", key);
	return -1;
}

/* One summary of path to stdout (the partial line on stderr); with draw 0
 * only read (into *out). 0, 1 (cannot read or render: said), or 2 when
 * stdout failed (main says so). */
static int show(const char *path, const struct sp_render_opts *opts, struct sp_profile **out, int draw)
{
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	if (sp_report_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		return out ? 3 : 1;   /* --follow tells an unreadable file from the rest */
	}
	if (!draw) {
		*out = p;
		return 0;
	}
	sp_cmd_partial(CMD, path, p);
	enum sp_err rc = sp_render_summary_opts(stdout, p, path, opts, &err);
	if (rc != SP_OK && rc != SP_EIO) {
		if (rc == SP_EINVAL)
			sp_cmd_error(CMD, "%s: %s", path, err.msg);
		else
			sp_cmd_error(CMD, "%s", err.msg);
	}
	if (rc == SP_OK && out)
		*out = p;
	else
		sp_profile_free(p);
	return rc == SP_OK ? 0 : rc == SP_EIO ? 2 : 1;
}

/* Whether a was modified since b was (both there; the same time counts: a
 * file system of whole seconds). */
static int modified_after(const char *a, const char *b)
{
	struct stat sa, sb;
	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return 0;
	return sa.st_mtim.tv_sec > sb.st_mtim.tv_sec ||
	       (sa.st_mtim.tv_sec == sb.st_mtim.tv_sec && sa.st_mtim.tv_nsec >= sb.st_mtim.tv_nsec);
}

/* --follow: the run's partial file, redrawn every FOLLOW_S seconds, then
 * the finished file. With --json, one document: the finished file's. */
#define FOLLOW_S 2

/* What --follow watches: the file the run streams to and the file it ends
 * in; under MPI (OUT.rank{N}[.partial], or OUT while rank files lie beside
 * it: rank 0's) also the rank's finished file, which stays until rank 0 has
 * merged every rank's into OUT. */
struct watch {
	char partial[PATH_MAX], final[PATH_MAX];
	char rank_file[PATH_MAX];      /* "": a serial run */
};

/* 0, or -1 when a name is too long (said). */
static int watch_of(const char *path, struct watch *w)
{
	size_t len = strlen(path), sfx = sizeof ".partial" - 1;
	int base = (int)(len > sfx && strcmp(path + len - sfx, ".partial") == 0 ? len - sfx : len);
	char *job = NULL, *rank0 = NULL;
	int rank = -1, n;
	w->rank_file[0] = '\0';
	char serial_partial[PATH_MAX];
	snprintf(serial_partial, sizeof serial_partial, "%.*s.partial", base, path);
	if (sp_merge_rank_of(path, &job, &rank) && rank >= 0)
		n = snprintf(w->rank_file, sizeof w->rank_file, "%.*s", base, path);
	else if (job && access(serial_partial, F_OK) != 0 && (rank0 = sp_merge_rank_file(job, 0)))
		n = snprintf(w->rank_file, sizeof w->rank_file, "%s", rank0);
	else
		n = 0;
	int ok = n >= 0 && (size_t)n < sizeof w->rank_file;
	if (w->rank_file[0] && ok) {
		ok = snprintf(w->partial, sizeof w->partial, "%s.partial", w->rank_file) < (int)sizeof w->partial &&
		     snprintf(w->final, sizeof w->final, "%s", job) < (int)sizeof w->final;
	} else if (ok) {
		w->rank_file[0] = '\0';
		ok = snprintf(w->partial, sizeof w->partial, "%s", serial_partial) < (int)sizeof w->partial &&
		     snprintf(w->final, sizeof w->final, "%.*s", base, path) < (int)sizeof w->final;
	}
	free(job);
	free(rank0);
	if (!ok)
		sp_cmd_error(CMD, "%s: the name is too long", path);
	return ok ? 0 : -1;
}

/* Whether the process that wrote p (its first rank's pid) is known to be
 * gone: only on the host it ran on (the file's hostname is this host's): a
 * job followed from a login node runs elsewhere, where the pid means
 * nothing here. */
static int writer_gone(const struct sp_profile *p, int64_t *pid)
{
	char host[256];
	*pid = p && p->nranks ? p->ranks[0].pid : 0;
	if (*pid <= 0 || !p->ranks[0].hostname || gethostname(host, sizeof host) != 0)
		return 0;
	host[sizeof host - 1] = '\0';
	return strcmp(host, p->ranks[0].hostname) == 0 && sp_process_gone((long)*pid);
}

static void pause_follow(void)
{
	struct timespec t = {FOLLOW_S, 0};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static int follow(const char *path, const struct sp_render_opts *opts)
{
	struct watch w;
	if (watch_of(path, &w) != 0)
		return 1;
	int tty = isatty(STDOUT_FILENO), draw = !opts->json, shown = 0, rc;
	struct stat bad = {0};   /* the partial file as last found unreadable, no run writing it */
	int bad_seen = 0;
	for (;;) {
		if (access(w.partial, F_OK) != 0) {
			/* Under MPI the rank's finished file stays until rank 0
			 * has merged the job's into FILE, then goes. */
			if (w.rank_file[0] && access(w.rank_file, F_OK) == 0 && !modified_after(w.final, w.rank_file)) {
				/* Read quietly: the merge may remove it meanwhile. */
				struct sp_profile *p = NULL;
				struct sp_error err = {0};
				int64_t pid;
				int gone = sp_report_read(w.rank_file, SP_READ_SUMMARY, &p, &err) == SP_OK &&
					   writer_gone(p, &pid);
				sp_profile_free(p);
				if (!gone) {
					pause_follow();
					continue;
				}
				pause_follow();   /* its last moments: the merge may be ending */
				if (access(w.rank_file, F_OK) == 0 && !modified_after(w.final, w.rank_file)) {
					sp_cmd_error(CMD, "the job's rank (pid %lld) ended before %s was merged; "
						     "scope-profiler recover %s merges the ranks' files",
						     (long long)pid, w.final, w.final);
					return 1;
				}
			}
finished:		/* Finished (renamed, merged), or never streamed: the file itself. */
			if (tty && shown)
				fputs("\033[H\033[2J", stdout);
			else if (shown)
				fputs("\n", stdout);
			return show(w.final, opts, NULL, 1);
		}
		if (tty && draw)
			fputs("\033[H\033[2J", stdout);
		else if (shown)
			fputs("\n", stdout);
		struct sp_profile *p = NULL;
		if ((rc = show(w.partial, opts, &p, draw)) == 2)
			return 2;
		/* Unreadable (said), and no run writes it (a live run holds its
		 * lock until the file is renamed): no run's partial file (a
		 * folder, a FIFO), or one found so twice, unchanged (damaged; a
		 * run about to create it, or finishing it in place, changes it). */
		struct stat sb;
		if (rc == 3) {
			int same = 0;
			if (sp_stream_written_now(w.partial) == 0 && stat(w.partial, &sb) == 0) {
				if (!S_ISREG(sb.st_mode))
					return 1;
				same = bad_seen && sb.st_ino == bad.st_ino && sb.st_dev == bad.st_dev &&
				       sb.st_size == bad.st_size && sb.st_mtim.tv_sec == bad.st_mtim.tv_sec &&
				       sb.st_mtim.tv_nsec == bad.st_mtim.tv_nsec;
				if (same)
					return 1;
				bad = sb;
				bad_seen = 1;
			} else {
				bad_seen = 0;
			}
			rc = 1;
		} else {
			bad_seen = 0;
		}
		fflush(stdout);
		shown = draw;
		/* The writer gone and its file still partial: killed, unless
		 * FILE was made from it since (--subprocesses' end merges the
		 * run's finished own file into FILE, then removes it); a FILE
		 * older than the partial file is an earlier run's. */
		int64_t pid;
		int gone = writer_gone(p, &pid);
		sp_profile_free(p);
		if (rc == 0 && gone && access(w.partial, F_OK) == 0) {
			if (modified_after(w.final, w.partial))
				goto finished;   /* made at the end: the partial file is a leftover */
			if (w.rank_file[0])
				sp_cmd_error(CMD, "the job's rank (pid %lld) ended without finishing %s; "
					     "scope-profiler recover %s merges what the ranks left",
					     (long long)pid, w.partial, w.final);
			else
				sp_cmd_error(CMD, "the run (pid %lld) ended without finishing %s; scope-profiler "
					     "recover %s finishes it", (long long)pid, w.final, w.partial);
			return 1;
		}
		if (rc == 0 && gone)
			continue;   /* finished meanwhile */
		pause_follow();
	}
}

int cmd_summary(int argc, char **argv)
{
	struct sp_select sel = {0};
	struct sp_render_opts opts = { .parts = SP_RENDER_ALL, .select = &sel };
	int parts = SP_RENDER_ALL;     /* the last of --flat and --tree wins */
	int all = 0, follow_it = 0;
	const struct sp_opt options[] = {
		{0, "flat", SP_OPT_FLAG, &parts, SP_RENDER_FLAT, NULL, "print only the region table", NULL},
		{0, "tree", SP_OPT_FLAG, &parts, SP_RENDER_TREE, NULL, "print only the call tree", NULL},
		{0, "sort", SP_OPT_CALL, &opts.sort, 0, "KEY",
		 "order: total (default), self, calls, mean, max or name", parse_sort},
		{0, "top", SP_OPT_CALL, &opts.top, 0, "N",
		 "the tree's N heaviest entries, the table's N first rows", parse_count},
		{0, "depth", SP_OPT_CALL, &opts.depth, 0, "N", "the tree down to N levels", parse_count},
		{0, "all", SP_OPT_FLAG, &all, 1, NULL, "every entry and row (with --depth: down to it)", NULL},
		SP_OPT_SELECT_NAMES,
		{0, "ranks", SP_OPT_CALL, NULL, SP_SELECT_RANKS, "LIST",
		 "only these ranks, e.g. 0-3,5", sp_opt_select},
		{0, "json", SP_OPT_FLAG, &opts.json, 1, NULL,
		 "print JSON (file, ranks, one object per region) instead", NULL},
		{0, "follow", SP_OPT_FLAG, &follow_it, 1, NULL,
		 "watch a streaming run: again every 2 s until it ends", NULL},
	};
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	int status = SP_EXIT_USAGE;
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, &sel);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	opts.parts = (enum sp_render_parts)parts;
	if (all)
		opts.top = -1;
	if (opts.depth)
		opts.more_hint = "--all without --depth";
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler summary FILE"
						 : "one file at a time; usage: scope-profiler summary FILE");
		goto out;
	}
	const char *path = argv[first];
	if (follow_it) {
		int rc = follow(path, &opts);
		status = rc == 2 ? 1 : rc;
		goto out;
	}
	status = 1;
	if (sp_report_read(path, SP_READ_SUMMARY, &p, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	sp_cmd_partial(CMD, path, p);
	enum sp_err rc = sp_render_summary_opts(stdout, p, path, &opts, &err);
	if (rc == SP_EIO)
		goto out;              /* stdout failed: main says so, once */
	if (rc != SP_OK) {
		if (rc == SP_EINVAL)
			sp_cmd_error(CMD, "%s: %s", path, err.msg);
		else
			sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	status = 0;
out:
	sp_profile_free(p);
	sp_select_free(&sel);
	return status;
}
