/* cmd_plot.c - `scope-profiler plot FILE... -o DIR`: reads the profiles and
 * writes each chart of the report layer (sp_plot.h) into DIR, every file
 * through a temporary name and a rename (sp_outpath.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_tree.h"
#include "sp_outpath.h"
#include "sp_plot.h"
#include "sp_select.h"

#define CMD "plot"

static const struct sp_cmd_help help = {
	.name = CMD,
	.usage = "scope-profiler plot FILE [FILE...] -o DIR [OPTIONS]",
	.about =
		"Draws a profile as standalone SVG charts and an HTML report in DIR\n"
		"(created if missing):\n"
		"  gantt.svg             one lane per rank and region, every call a bar\n"
		"  flame.svg             each rank's call stacks over time, depth down;\n"
		"                        hover a box for its name, start and duration\n"
		"  flamegraph.svg        the call tree merged (the summary's, ranks\n"
		"                        summed): each call path once, as wide as its\n"
		"                        total, heaviest first (left-heavy)\n"
		"  durations_METRIC.svg  one bar per region (per file, side by side)\n"
		"  speedup.svg           per region, speedup against the smallest run,\n"
		"                        when the files differ in size (see --x-field)\n"
		"  region_statistics.json  per file and region: calls, total, mean, min,\n"
		"                        max, std, per-rank totals and imbalance\n"
		"  report.html           one self-contained page: every chart, the\n"
		"                        statistics as tables, and a timeline to zoom,\n"
		"                        pan and hover, with a rank filter\n"
		"The Gantt and flame charts and the flame graph show the first FILE that\n"
		"has per-call events; the charts' time axis starts at its first region\n"
		"entry. Calls narrower than a\n"
		"pixel column are merged into one bar per lane and column, and the chart\n"
		"says so, so that a million calls plot in seconds into a few MiB.\n",
	.notes =
		"With --export-data, the data behind each chart, in seconds:\n"
		"gantt_data.csv (rank,region,start,end,duration), flame_data.csv\n"
		"(rank,depth,region,start,duration,lane), flamegraph_data.csv (path,calls,total;\n"
		"path: the names joined by ';'), durations_data.csv\n"
		"(file,region,metric,value), speedup_data.csv (region,x,time,speedup).\n"
		"Exit status: 0; 1 when a FILE cannot be read or holds no region, no FILE\n"
		"has per-call events (aggregation mode: no Gantt or flame chart or\n"
		"timeline), or a chart cannot be written (the others still are, but on a\n"
		"full disk, which stops at the first file that does not fit: the files\n"
		"after it, report.html last, are left as they were); 2 for usage errors.\n"
		SP_HELP_PATTERN,
};

static int parse_metrics(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	unsigned set = 0;
	const char *s = arg;
	while (*s) {
		size_t n = strcspn(s, ",");
		int m = 0;
		while (m < SP_PLOT_NMETRICS &&
		       !(strlen(sp_plot_metric_names[m]) == n && strncmp(s, sp_plot_metric_names[m], n) == 0))
			m++;
		if (m == SP_PLOT_NMETRICS) {
			snprintf(err, len, "--metrics takes avg, min, max and total, not '%.*s'", (int)n, s);
			return -1;
		}
		set |= 1u << m;
		s += n + (s[n] == ',');
	}
	if (!set) {
		snprintf(err, len, "--metrics needs at least one of avg, min, max, total");
		return -1;
	}
	*(unsigned *)o->value = set;
	return 0;
}

static int parse_xfield(const struct sp_opt *o, const char *arg, void *ctx, char *err, size_t len)
{
	static const char *const names[] = {"ranks", "omp_num_threads", "total_cores"};
	for (int i = 0; i < 3; i++)
		if (strcmp(arg, names[i]) == 0) {
			*(int *)o->value = i;
			return 0;
		}
	snprintf(err, len, "--x-field takes ranks, omp_num_threads or total_cores, not '%s'", arg);
	return -1;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

struct plot {
	const char *dir;
	struct sp_plot_file *files;
	size_t n;
	const struct sp_plot_file *events;     /* the Gantt and flame charts' file */
	struct sp_plot_opts opts;
	int export_data, xfield;
	unsigned metrics;
	struct timespec start;
	int status;
	/* the SVG charts written, for report.html to inline */
	struct sp_plot_chart charts[5 + SP_PLOT_NMETRICS];
	char *chart_bufs[5 + SP_PLOT_NMETRICS], *chart_names[5 + SP_PLOT_NMETRICS];
	size_t ncharts;
	const char *why_not;                   /* no timeline: why */
	int full;                              /* the disk is full: nothing more is written */
};

/* What one output file gets: the chart (svg) and, for --export-data, its
 * CSV beside it (csv NULL when not asked for). */
enum what { GANTT, FLAME, FLAMEGRAPH, DURATIONS, DURATIONS_CSV, SPEEDUP, STATISTICS, REPORT };

static enum sp_err draw(struct plot *pl, enum what w, int metric, FILE *f, FILE *csv, struct sp_error *err)
{
	switch (w) {
	case GANTT: return sp_plot_gantt(f, csv, pl->events, &pl->opts, NULL, err);
	case FLAME: return sp_plot_flame(f, csv, pl->events, &pl->opts, NULL, err);
	case FLAMEGRAPH: return sp_plot_flamegraph(f, csv, pl->events, &pl->opts, err);
	case DURATIONS: return sp_plot_durations(f, pl->files, pl->n, (enum sp_plot_metric)metric, &pl->opts, err);
	case DURATIONS_CSV: return sp_plot_durations_csv(f, pl->files, pl->n, pl->metrics, &pl->opts, err);
	case SPEEDUP: return sp_plot_speedup(f, csv, pl->files, pl->n, (enum sp_plot_xfield)pl->xfield,
					     &pl->opts, err);
	case REPORT: return sp_plot_report(f, pl->files, pl->n, pl->events, pl->why_not, pl->charts,
					   pl->ncharts, &pl->opts, NULL, err);
	default: return sp_plot_statistics(f, pl->files, pl->n, &pl->opts, err);
	}
}

/* draw() for an SVG chart, kept in memory for report.html as well: the
 * document goes to f and, once complete, into pl->charts. */
static enum sp_err draw_kept(struct plot *pl, enum what w, int metric, const char *name, FILE *f, FILE *csv,
			     struct sp_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	enum sp_err rc = draw(pl, w, metric, m, csv, err);
	/* A memory stream fails only for want of memory. */
	int lost = ferror(m);
	if (fclose(m) != 0 || lost) {
		free(buf);
		return sp_error_set(err, SP_ENOMEM, "out of memory");
	}
	/* The chart is whole in buf unless drawing it failed; SP_EIO here is
	 * the CSV's, which its own close reports. A whole chart goes into
	 * report.html even when its own file cannot be written (a file size
	 * limit): the report is never missing a chart that was drawn. */
	int whole = rc == SP_OK || rc == SP_EIO;
	if (whole && fwrite(buf, 1, len, f) != len)
		rc = SP_EIO;
	char *copy = whole ? strdup(name) : NULL;
	if (copy && pl->ncharts < sizeof pl->charts / sizeof pl->charts[0]) {
		pl->chart_bufs[pl->ncharts] = buf;
		pl->chart_names[pl->ncharts] = copy;
		pl->charts[pl->ncharts++] = (struct sp_plot_chart){copy, buf, len};
	} else {
		free(copy);
		free(buf);
	}
	return rc;
}

/* An output file being written: its temporary file (op), and the stream
 * the report layer prints into, whose writes go straight to the file's
 * descriptor so that the first failure's errno is kept (a full disk says
 * ENOSPC, not EIO: the stream's own errno is long gone when it is closed). */
struct out {
	struct sp_outpath op;
	FILE *f;
	int fd;                                /* our duplicate of op.fd, or -1 */
	int err;                               /* errno of the first failed write, or 0 */
	unsigned long err_seq;                 /* when it failed, among the outs (1, 2, ...) */
	char path[4096];
};

static unsigned long out_failures;             /* the outs' failures so far */

static ssize_t out_write(void *cookie, const char *buf, size_t n)
{
	struct out *o = cookie;
	size_t done = 0;
	while (!o->err && done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->err = w < 0 ? errno : EIO;
			o->err_seq = ++out_failures;
		} else
			done += (size_t)w;
	}
	/* On failure the bytes written, never -1: glibc's stdio takes a
	 * cookie's -1 as a count (size_t) and copies past the caller's buffer
	 * (fwrite of a chart onto a full disk read beyond it). */
	return o->err ? (ssize_t)done : (ssize_t)n;
}

static int out_close(void *cookie)
{
	struct out *o = cookie;
	int rc = close(o->fd);
	if (rc != 0 && errno != EINTR && !o->err)
		o->err = errno;
	o->fd = -1;
	return o->err ? -1 : 0;
}

/* Opens DIR/name through a temporary file into o; -1 after saying why. */
static int open_out(struct plot *pl, struct out *o, const char *name)
{
	struct sp_error err = {0};
	static const cookie_io_functions_t io = {.write = out_write, .close = out_close};
	*o = (struct out){.op = {.fd = -1, .slot = -1}, .fd = -1};
	int n = snprintf(o->path, sizeof o->path, "%s/%s", pl->dir, name);
	if (n < 0 || (size_t)n >= sizeof o->path) {
		sp_cmd_error(CMD, "cannot write %s into '%s': the path is too long", name, pl->dir);
		return -1;
	}
	if (sp_outpath_open(&o->op, o->path, SP_OUTPATH_LINK_REPLACED, &err) != SP_OK) {
		sp_cmd_error(CMD, "cannot write %s", err.msg);
		return -1;
	}
	o->fd = fcntl(o->op.fd, F_DUPFD_CLOEXEC, 0);
	if (o->fd < 0 || !(o->f = fopencookie(o, "w", io))) {
		sp_cmd_error(CMD, "cannot write '%s': %s", o->path, strerror(errno));
		if (o->fd >= 0)
			close(o->fd);
		o->fd = -1;
		sp_outpath_abort(&o->op);
		return -1;
	}
	return 0;
}

/* Whether e says the file system is full: every file after would fail too,
 * or fit only once the failed one is removed. */
static int disk_full(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

/* Closes o's stream and renames its file into place (ok), or removes it.
 * Returns 0 when the file is in place. A full disk is said once and stops
 * the plot (pl->full): the files after it, report.html last, stay as they
 * were. */
static int close_out(struct plot *pl, struct out *o, int ok)
{
	struct sp_error err = {0};
	errno = 0;
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int e = o->err ? o->err : errno;
	if (fclose(o->f) != 0 && !bad) {
		bad = 1;
		e = o->err ? o->err : errno;
	}
	o->f = NULL;
	if (!ok || pl->full) {
		sp_outpath_abort(&o->op);
		return -1;
	}
	if (bad) {
		e = e ? e : EIO;
		sp_cmd_error(CMD, "cannot write '%s': %s%s", o->path, strerror(e),
			     disk_full(e) ? "; stopped there: the files after it (report.html last) were not "
			     "written" : "");
		pl->full = disk_full(e);
		sp_outpath_abort(&o->op);
		return -1;
	}
	if (sp_outpath_commit(&o->op, &err) != SP_OK) {
		sp_cmd_error(CMD, "cannot write %s", err.msg);
		return -1;
	}
	return 0;
}

/* Writes one chart (and its CSV when csvname is given); a failure is said
 * and sets the status, the other charts go on. */
static void write_chart(struct plot *pl, enum what w, int metric, const char *name, const char *csvname)
{
	struct out o, c;
	struct sp_error err = {0};
	FILE *csv = NULL;
	if (pl->full)
		return;
	if (open_out(pl, &o, name) != 0) {
		pl->status = 1;
		return;
	}
	if (csvname) {
		if (open_out(pl, &c, csvname) != 0) {
			close_out(pl, &o, 0);
			pl->status = 1;
			return;
		}
		csv = c.f;
	}
	size_t nlen = strlen(name);
	int keep = nlen > 4 && strcmp(name + nlen - 4, ".svg") == 0;
	enum sp_err rc = keep ? draw_kept(pl, w, metric, name, o.f, csv, &err)
			      : draw(pl, w, metric, o.f, csv, &err);
	/* A failed write (SP_EIO) is said by close_out, which has the first
	 * failed write's errno (a full disk, a file size limit). */
	int io = rc == SP_EIO;
	if (rc != SP_OK && !io)
		sp_cmd_error(CMD, "%s: %s", name, err.msg);
	/* The file whose write failed first is the one said: the CSV's fails
	 * while the chart still sits in its stream's buffer (a full disk). */
	int ok;
	if (csv && c.err && (!o.err || c.err_seq < o.err_seq)) {
		ok = close_out(pl, &c, rc == SP_OK || io) == 0;
		ok &= close_out(pl, &o, (rc == SP_OK || io) && ok) == 0;
	} else {
		ok = close_out(pl, &o, rc == SP_OK || io) == 0;
		if (csv)
			ok &= close_out(pl, &c, (rc == SP_OK || io) && ok) == 0;
	}
	if (io && ok) {   /* neither stream kept the error: still not written whole */
		sp_cmd_error(CMD, "cannot write '%s': %s", o.path, err.msg);
		ok = 0;
	}
	if (!ok)
		pl->status = 1;
	double t = seconds_since(&pl->start);
	if (ok && t > 1.0)
		fprintf(stderr, "scope-profiler: plot: wrote %s (%.1f s)\n", o.path, t);
}

/* DIR: made when missing (its parent must exist); 0, or -1 after saying why. */
static int make_dir(const char *dir)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		sp_cmd_error(CMD, "'%s' exists and is not a directory; -o names the folder to write the charts into",
			     dir);
		return -1;
	}
	if (errno == ENOENT && mkdir(dir, 0777) == 0)
		return 0;
	sp_cmd_error(CMD, "cannot create the folder '%s': %s", dir, strerror(errno));
	return -1;
}

/* Whether p has a region with calls (something to draw). */
/* Whether p has a region with calls (that sel selects; NULL: any). */
static int has_calls(const struct sp_profile *p, const struct sp_select *sel)
{
	for (size_t r = 0; r < p->nranks; r++)
		for (size_t g = 0; g < p->ranks[r].nregions; g++)
			if (p->ranks[r].regions[g].stats.num_calls > 0 &&
			    (!sel || (sp_select_rank(sel, p->ranks[r].rank) &&
				      sp_select_region(sel, p->ranks[r].regions[g].name))))
				return 1;
	return 0;
}

/* Reads paths[0..n) into profiles[] and those with a region with calls into
 * pl->files; a file that cannot be read or has none is said and sets the
 * status, the others go on. */
static void read_files(struct plot *pl, char **paths, size_t n, struct sp_profile **profiles)
{
	for (size_t i = 0; i < n; i++) {
		const char *path = paths[i];
		struct sp_error err = {0};
		if (sp_report_read(path, SP_READ_EVENTS, &profiles[i], &err) != SP_OK) {
			sp_cmd_error(CMD, "%s", err.msg);
			pl->status = 1;
			continue;
		}
		sp_cmd_partial(CMD, path, profiles[i]);
		if (!has_calls(profiles[i], NULL)) {
			sp_cmd_error(CMD, "%s: the profile has no region with calls; nothing to draw", path);
			pl->status = 1;
			continue;
		}
		pl->files[pl->n++] = (struct sp_plot_file){path, profiles[i]};
		if (seconds_since(&pl->start) > 1.0)
			fprintf(stderr, "scope-profiler: plot: read %s (%.1f s)\n", path, seconds_since(&pl->start));
	}
}

/* The Gantt and flame charts' file (pl->events): the first with per-call
 * events among the selected ones. The others are said; when none has any,
 * one line names them all, kept in why[len] for report.html (pl->why_not). */
static void pick_events(struct plot *pl, const struct sp_select *sel, char *why, size_t len)
{
	for (size_t i = 0; i < pl->n && !pl->events; i++)
		if (sp_plot_has_events(pl->files[i].p, sel))
			pl->events = &pl->files[i];
	why[0] = '\0';
	for (size_t i = 0; i < pl->n; i++) {
		if (pl->events && sp_plot_has_events(pl->files[i].p, sel))
			continue;
		if (pl->events) {
			sp_cmd_error(CMD, "%s: no per-call events (aggregation mode, or none selected): no Gantt or "
				     "flame chart of it", pl->files[i].name);
		} else {
			size_t k = strlen(why);
			snprintf(why + k, len - k, "%s%s", i ? ", " : "", pl->files[i].name);
		}
	}
	if (!pl->events) {
		/* one line naming the files; what needs no events is still drawn */
		size_t k = strlen(why);
		snprintf(why + k, len - k, ": no per-call events (aggregation mode, or none selected): "
			 "no Gantt chart, flame chart or timeline");
		sp_cmd_error(CMD, "%s", why);
		pl->why_not = why;
		pl->status = 1;
	}
	if (pl->events && pl->n > 1)
		fprintf(stderr, "scope-profiler: plot: gantt.svg, flame.svg and flamegraph.svg show %s\n", pl->events->name);
}

/* speedup.svg when at least two files differ in --x-field, else a line
 * saying why not. */
static void write_speedup(struct plot *pl)
{
	double *xs = malloc(pl->n * sizeof *xs);
	if (!xs) {
		sp_cmd_error(CMD, "out of memory");
		pl->status = 1;
	} else if (pl->full) {
		/* nothing more is written, and nothing more said */
	} else if (sp_plot_speedup_xs(pl->files, pl->n, (enum sp_plot_xfield)pl->xfield, xs) >= 2) {
		for (size_t i = 0; i < pl->n; i++)
			if (isnan(xs[i]))
				fprintf(stderr, "scope-profiler: plot: %s: its metadata has no omp_num_threads: "
					"not in the speedup chart\n", pl->files[i].name);
		write_chart(pl, SPEEDUP, 0, "speedup.svg", pl->export_data ? "speedup_data.csv" : NULL);
	} else {
		static const char *const what[] = {"numbers of ranks", "omp_num_threads values",
						   "total_cores values"};
		fprintf(stderr, "scope-profiler: plot: no speedup.svg: it needs files with at least two "
			"different %s (--x-field)\n", what[pl->xfield]);
	}
	free(xs);
}

/* Every chart in turn, report.html last (it inlines those drawn before). */
static void write_charts(struct plot *pl)
{
	if (pl->events) {
		write_chart(pl, GANTT, 0, "gantt.svg", pl->export_data ? "gantt_data.csv" : NULL);
		write_chart(pl, FLAME, 0, "flame.svg", pl->export_data ? "flame_data.csv" : NULL);
		write_chart(pl, FLAMEGRAPH, 0, "flamegraph.svg", pl->export_data ? "flamegraph_data.csv" : NULL);
	}
	for (int m = 0; m < SP_PLOT_NMETRICS; m++) {
		char name[64];
		if (!(pl->metrics & 1u << m))
			continue;
		snprintf(name, sizeof name, "durations_%s.svg", sp_plot_metric_names[m]);
		write_chart(pl, DURATIONS, m, name, NULL);
	}
	if (pl->export_data)
		write_chart(pl, DURATIONS_CSV, 0, "durations_data.csv", NULL);
	write_speedup(pl);
	write_chart(pl, STATISTICS, 0, "region_statistics.json", NULL);
	write_chart(pl, REPORT, 0, "report.html", NULL);
}

/* Returns 0, 1 when a file cannot be read or a chart written, or SP_EXIT_USAGE. */
int cmd_plot(int argc, char **argv)
{
	struct sp_select sel = {0};
	struct plot pl = {.metrics = (1u << SP_PLOT_NMETRICS) - 1, .status = 0};
	struct sp_profile **profiles = NULL;
	int status = SP_EXIT_USAGE;
	const struct sp_opt options[] = {
		{'o', "output", SP_OPT_STRING, &pl.dir, 0, "DIR", "write the charts into DIR (required)", NULL},
		{0, "metrics", SP_OPT_CALL, &pl.metrics, 0, "LIST",
		 "durations charts: avg,min,max,total (default: all four)", parse_metrics},
		{0, "x-field", SP_OPT_CALL, &pl.xfield, 0, "FIELD",
		 "speedup x axis: ranks (default), omp_num_threads or total_cores", parse_xfield},
		{0, "export-data", SP_OPT_FLAG, &pl.export_data, 1, NULL,
		 "also write the data behind each chart as CSV", NULL},
		SP_OPT_SELECT_NAMES,
		{0, "ranks", SP_OPT_CALL, NULL, SP_SELECT_RANKS, "LIST", "only these ranks, e.g. 0-3,5",
		 sp_opt_select},
	};
	clock_gettime(CLOCK_MONOTONIC, &pl.start);
	int first = sp_opt_parse(&help, options, sizeof options / sizeof options[0], argc, argv, 0, &sel);
	if (first < 0) {
		status = sp_opt_status(first);
		goto out;
	}
	if (first >= argc) {
		sp_cmd_error(CMD, "no file given; usage: scope-profiler plot FILE [FILE...] -o DIR");
		goto out;
	}
	if (!pl.dir) {
		sp_cmd_error(CMD, "no output folder given; use -o DIR");
		goto out;
	}
	if (sp_cmd_not_stdout(CMD, pl.dir, "a folder of charts") != 0)
		goto out;
	status = 1;
	size_t nin = (size_t)(argc - first);
	profiles = calloc(nin, sizeof *profiles);
	pl.files = calloc(nin, sizeof *pl.files);
	if (!profiles || !pl.files) {
		sp_cmd_error(CMD, "out of memory");
		goto out;
	}
	pl.opts.sel = &sel;
	read_files(&pl, argv + first, nin, profiles);
	/* A selection that keeps nothing: one line, no folder of empty charts */
	int kept = 0;
	for (size_t i = 0; i < pl.n && !kept; i++)
		kept = has_calls(pl.files[i].p, &sel);
	if (pl.n && !kept) {
		sp_cmd_error(CMD, "the selection (--include, --exclude, --ranks) keeps no region with calls in %s; "
			     "nothing to draw", pl.n == 1 ? pl.files[0].name : "any file");
		goto out;
	}
	/* DIR once something can be drawn: a wrong FILE leaves no empty folder */
	if (!pl.n || make_dir(pl.dir) != 0)
		goto out;
	char why[512];
	pick_events(&pl, &sel, why, sizeof why);
	/* One colour per region in every chart and the report: ranked over
	 * all the files. */
	struct sp_plot_colours colours;
	struct sp_error cerr;
	if (sp_plot_colours_build(&colours, pl.files, pl.n, &sel, &cerr) != SP_OK) {
		sp_cmd_error(CMD, "%s", cerr.msg);
		goto out;
	}
	pl.opts.colours = &colours;
	write_charts(&pl);
	status = pl.status;
out:
	if (profiles)
		for (int i = 0; i < argc - first && first >= 0; i++)
			sp_profile_free(profiles[i]);
	free(profiles);
	free(pl.files);
	for (size_t i = 0; i < pl.ncharts; i++) {
		free(pl.chart_bufs[i]);
		free(pl.chart_names[i]);
	}
	sp_select_free(&sel);
	return status;
}
