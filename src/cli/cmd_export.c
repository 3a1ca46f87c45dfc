/* cmd_export.c - `scope-profiler export FILE --format csv|json|chrome|folded|speedscope`:
 * the options, the output file, and one call into the report layer
 * (sp_export, src/report/export.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sp_cmd.h"
#include "sp_export.h"
#include "sp_h5.h"
#include "sp_outpath.h"
#include "sp_select.h"

#define CMD "export"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler export FILE --format FMT [OPTIONS]",
	.about =
		"Writes every recorded call of a profile in a format FMT other tools read:\n"
		"  csv     name,rank,lane,call_index,start_s,end_s,duration_s; one row per\n"
		"          call (pandas.read_csv)\n"
		"  json    {\"file\", \"time_origin_ns\", \"ranks\", \"events\": [...]}, seconds\n"
		"  chrome  Chrome trace events: a process per rank, a thread per lane\n"
		"          (Perfetto, chrome://tracing)\n"
		"  folded  'a;b;c self_ns' per call stack, merged over ranks (flamegraph.pl,\n"
		"          speedscope); ';' in a region name becomes ':'\n"
		"  speedscope  speedscope's own file: the regions as shared frames, an\n"
		"          evented profile (open/close events, ns) per rank and lane\n"
		"          (speedscope.app, its time order and left-heavy views)\n"
		"Times are relative to the run's start, the earliest over the ranks (the\n"
		"first region entry when the file has none), one axis for all ranks, as\n"
		"the Python read API has it. Calls come region by region, then rank, then call\n"
		"order. csv, json and chrome hold a slice of the file in memory at a time;\n"
		"folded holds one rank's calls (20 bytes each), speedscope also their\n"
		"events (32 bytes a call).\n",
	.notes =
		SP_HELP_PATTERN
		"OUT may be an earlier export (of any format): another file there (a script,\n"
		"notes) is refused, and left as it was, unless --force.\n"
		"Exit status: 0, 1 when FILE cannot be read or OUT written (OUT is then\n"
		"left as it was), 2 for usage errors.\n",
};

static int parse_format(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	int f = sp_export_format_parse(arg);
	if (f < 0) {
		snprintf(err, len, "unknown format '%s'; use csv, json, chrome, folded or speedscope", arg);
		return -1;
	}
	*(int *)o->value = f;
	return 0;
}

static int parse_output(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	if (!*arg) {
		snprintf(err, len, "--output needs a path");
		return -1;
	}
	*(const char **)o->value = strcmp(arg, "-") == 0 ? NULL : arg;
	return 0;
}

/* Whether the regular file target (what OUT leads to), which the export
 * would replace, holds something else than an earlier export (one it
 * cannot read too; an empty one is none). 1 after saying so, else 0. */
static int holds_other(const char *outpath, const char *target)
{
	struct stat st;
	if (stat(target, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return 0;
	static char head[65536];
	int fd = open(target, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, head, sizeof head);
	if (fd >= 0)
		close(fd);
	if (n > 0 && sp_export_is_own(head, (size_t)n))
		return 0;
	sp_cmd_error(CMD, "'%s' exists and is not an export of scope-profiler; --force replaces it", outpath);
	return 1;
}

/* Opens OUT into op and *f. A file is replaced whole through a temporary
 * file (without force, only an earlier export); a device, a FIFO or an
 * open descriptor (/dev/stdout, /dev/null) is written in place. 0, or -1
 * after saying why (*f is then still stdout). */
static int open_output(const char *outpath, int force, struct sp_outpath *op, FILE **f)
{
	struct sp_error err = {0};
	if (sp_outpath_open(op, outpath, SP_OUTPATH_IN_PLACE, &err) != SP_OK) {
		sp_cmd_error(CMD, "cannot write %s", err.msg);
		return -1;
	}
	if (op->kind == SP_OUTPATH_FILE && !force && holds_other(outpath, op->target))
		return -1;   /* op, the caller's to abort, holds only its temporary file */
	/* The stream gets its own descriptor: closing it reports the
	 * stream's errors, op's is the commit's to close. */
	int fd = fcntl(op->fd, F_DUPFD_CLOEXEC, 0);
	FILE *s = fd < 0 ? NULL : fdopen(fd, "w");
	if (!s) {
		sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*f = s;
	return 0;
}

/* Closes *f (stdout again after) and puts OUT in place: 0, or 1 after
 * saying why (op is then the caller's to abort). */
static int close_output(const char *outpath, struct sp_outpath *op, FILE **f)
{
	struct sp_error err = {0};
	errno = 0;
	int bad = fflush(*f) != 0 || ferror(*f);
	int e = errno;
	FILE *g = *f;
	*f = stdout;
	if (fclose(g) != 0 && !bad) {
		bad = 1;
		e = errno;
	}
	if (bad)
		sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(e ? e : EIO));
	else if (sp_outpath_commit(op, &err) != SP_OK)
		sp_cmd_error(CMD, "cannot write %s", err.msg);
	else
		return 0;
	return 1;
}

/* Returns 0, 1 when FILE cannot be read or OUT written, or SP_EXIT_USAGE. */
int cmd_export(int argc, char **argv)
{
	struct sp_select sel = {0};
	struct sp_error err = {0};
	struct sp_h5_stream *s = NULL;
	const char *outpath = NULL;
	struct sp_outpath op = {.fd = -1, .slot = -1};
	FILE *f = stdout;
	int fmt = -1, status = SP_EXIT_USAGE, stdout_err = 0, write_err = 0, force = 0;
	enum sp_err rc;
	const struct sp_opt options[] = {
		{'f', "format", SP_OPT_CALL, &fmt, 0, "FMT", "csv, json, chrome, folded or speedscope (required)",
		 parse_format},
		{'o', "output", SP_OPT_CALL, &outpath, 0, "OUT",
		 "write to OUT (atomically; a FIFO or device in place)", parse_output},
		{0, "outfile", SP_OPT_CALL, &outpath, 0, "OUT", NULL, parse_output},
		{0, "force", SP_OPT_FLAG, &force, 1, NULL, "replace OUT even when it is no earlier export", NULL},
		SP_OPT_SELECT_NAMES,
		{0, "ranks", SP_OPT_CALL, NULL, SP_SELECT_RANKS, "LIST", "only these ranks, e.g. 0-3,5",
		 sp_opt_select},
	};
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, &sel);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	if (first != argc - 1) {
		sp_cmd_error(CMD, first >= argc ? "no file given; usage: scope-profiler export FILE --format FMT"
						 : "one file at a time; usage: scope-profiler export FILE --format FMT");
		goto out;
	}
	if (fmt < 0) {
		sp_cmd_error(CMD, "no format given; use --format csv, json, chrome, folded or speedscope");
		goto out;
	}
	status = 1;
	const char *path = argv[first];
	if (outpath && sp_outpath_same_file(outpath, path)) {
		sp_cmd_error(CMD, "'%s' is the profile itself; choose another output", outpath);
		goto out;
	}
	if (sp_h5_stream_open(path, &s, &err) != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
		goto out;
	}
	sp_cmd_partial(CMD, path, sp_h5_stream_profile(s));
	if (outpath && open_output(outpath, force, &op, &f) != 0)
		goto out;
	rc = sp_export(s, path, (enum sp_export_format)fmt, &sel, f, &write_err, &err);
	if (rc == SP_EIO && write_err) {
		if (outpath)
			sp_cmd_error(CMD, "cannot write '%s': %s", outpath, strerror(write_err));
		else
			stdout_err = write_err;   /* main reports it, as for every command */
	} else if (rc != SP_OK) {
		sp_cmd_error(CMD, "%s", err.msg);
	} else if (outpath) {
		status = close_output(outpath, &op, &f);
	} else {
		status = 0;
	}
out:
	if (f != stdout)
		fclose(f);
	sp_outpath_abort(&op);     /* after a commit: nothing left to do */
	sp_h5_stream_close(s);
	sp_select_free(&sel);
	if (stdout_err)
		errno = stdout_err;
	return status;
}
