/* sp_render.h - terminal renderings of a profile: the call tree, the flat
 * region table and the per-line tables. Plain UTF-8 text, fitted to 80
 * columns where names allow (line tables: 100). */
#ifndef SP_RENDER_H
#define SP_RENDER_H

#include <stdio.h>

#include "sp_profile.h"
#include "sp_select.h"

enum sp_render_parts {
	SP_RENDER_TREE = 1,
	SP_RENDER_FLAT = 2,
	SP_RENDER_ALL = 3,
};

/* Prints the summary of p (which must have stats and trees on every rank) to
 * out: a header line naming `title` (usually the file path), a line of
 * counts, then the parts asked for. With several ranks, the counts say on
 * how many hosts when some rank has a host name, followed by a "hosts:" line
 * (sp_profile_hosts, cut to 80 columns), and a numeric /metadata
 * omp_num_threads adds a "cores: N ranks × T OpenMP threads = N*T" line.
 * Returns SP_ENOMEM, or SP_EIO when writing to out failed. */
enum sp_err sp_render_summary(FILE *out, const struct sp_profile *p, const char *title,
			      int parts, struct sp_error *err);

/* The order of the region table (and of the regions of the JSON summary). */
enum sp_render_sort {
	SP_SORT_TOTAL = 0,             /* total time (recursion counted once), summed over
					* ranks; largest first */
	SP_SORT_CALLS,                 /* calls; most first */
	SP_SORT_MEAN,                  /* mean time per call; largest first */
	SP_SORT_MAX,                   /* longest single call; largest first */
	SP_SORT_NAME,                  /* region name, bytewise */
	SP_SORT_SELF,                  /* self time, summed over ranks; largest first */
};

struct sp_render_opts {
	int parts;                     /* SP_RENDER_*; 0 means SP_RENDER_ALL */
	enum sp_render_sort sort;
	/* Regions and ranks to show, or NULL for all. In the call tree, a node
	 * whose region is not selected is dropped: its children move up to its
	 * nearest selected ancestor (merging with same-named siblings there), and
	 * its own time counts in that ancestor's (own) row. */
	const struct sp_select *select;
	int json;                      /* a JSON document instead of the tables */
	int html;                      /* the JSON's numbers as one HTML <table> (names
					* escaped; every region, or the first `top` > 0
					* and a row saying how many more; one rank: no
					* per-rank columns) instead */
	/* So that any profile fits a screen: the tree shows its `top` heaviest
	 * entries (with their ancestors; an entry's left-out children summed
	 * in a closing "… N more" row) no deeper than `depth` levels, the
	 * table its first `top` rows, and a line at the end says what was left
	 * out and that `more_hint` shows every one. top 0: SP_RENDER_TOP; < 0:
	 * no limit. depth 0: any. more_hint NULL: "--all". JSON shows all. */
	int top, depth;
	const char *more_hint;
};

/* The default number of entries of the tree and of the table. */
#define SP_RENDER_TOP 16

/* sp_render_summary with options (opts NULL: the defaults). With json set,
 * writes one JSON object (file, ranks, run span, regions in table order with
 * calls, total/mean/min/max/std seconds over every selected rank's calls,
 * and the per-rank totals, their min/mean/max and imbalance; "hosts", host ->
 * its ranks, when some rank has a host name) and ignores parts. Returns SP_EINVAL when the selection keeps none of p's ranks (err
 * names the ranks p has) or a tree is malformed, SP_ENOMEM, SP_EIO. */
enum sp_err sp_render_summary_opts(FILE *out, const struct sp_profile *p, const char *title,
				   const struct sp_render_opts *opts, struct sp_error *err);

/* Prints the per-line tables of p (every rank's line tables), one table per
 * function and rank: line, hits, time [s], per hit [s], % time, source,
 * under a header line naming `title`. Returns SP_ENOTPROF, printing nothing,
 * when no rank has a line table (err->msg then says so in one line and how to
 * record them); SP_EINVAL for a table without its columns; SP_ENOMEM; SP_EIO
 * when writing to out failed. */
enum sp_err sp_render_lines(FILE *out, const struct sp_profile *p, const char *title,
			    struct sp_error *err);

/* What the line tables show. */
struct sp_render_lines_opts {
	/* Functions (their qualified names) and ranks to show, or NULL for
	 * all. SP_ENOTPROF when the selection keeps no table (err says so). */
	const struct sp_select *select;
	/* The columns a table may take, its source lines cut to fit; 0: 100
	 * (sp_render_lines'); < 0: no limit (whole lines). */
	int width;
	/* One JSON object instead: {"file", "timer_unit_s", "tables": [{"rank",
	 * "region", "function", "filename", "first_line", "total_s", "lines":
	 * [{"line", "hits", "time_s", "per_hit_s", "source"}]}]}, times exact
	 * to the nanosecond, every line of each selected table, whole. */
	int json;
};

/* The columns line tables written to fd may take (their width option):
 * COLUMNS when set, else fd's terminal width; -1 (whole lines) when fd is
 * no terminal (a pipe, a file, a job's log), or fd < 0. */
int sp_render_lines_width(int fd);

/* sp_render_lines with options (NULL: the defaults). */
enum sp_err sp_render_lines_opts(FILE *out, const struct sp_profile *p, const char *title,
				 const struct sp_render_lines_opts *o, struct sp_error *err);

/* One line, prefix first, saying how many calls p's ranks could not record
 * because memory ran out and which regions lost the most (at most three);
 * nothing when none were lost. Returns the number of calls lost. */
int64_t sp_render_dropped(FILE *out, const struct sp_profile *p, const char *prefix);

/* The one line that says a profile read is partial (p->partial: a run's
 * OUT.partial, the run still going or killed), for every reader to show:
 * "PATH: incomplete profile (a run still going, or killed): calls up to
 * 12.3 s after its start" (from the profile's time origin to its last
 * flush), into buf (len bytes). Returns 1, or 0 with buf "" for a
 * finished profile. */
int sp_render_partial(char *buf, size_t len, const struct sp_profile *p, const char *path);
/* Its end, "calls up to 12.3 s after its start" ("no call recorded yet"
 * when the profile has no time origin), into buf. Returns buf. */
char *sp_render_partial_until(char *buf, size_t len, const struct sp_profile *p);

/* The time formats of every report, one owner each (render_text.c): */

/* Writes ns as seconds with nine decimals, exactly ("-0.000000012",
 * "5.984314000"): the CSVs, the charts' tooltips, JSON where exact seconds
 * are asked for. */
void sp_render_secs_exact(FILE *out, int64_t ns);

/* Formats a duration in nanoseconds as seconds into buf (9 visible chars,
 * e.g. " 0.002191", "12.345678", "  12345.7"). Returns buf. */
char *sp_render_seconds(char *buf, size_t len, double ns);

/* Formats a duration in nanoseconds with the unit that keeps it below 1000
 * (ns, µs, ms, s; seconds beyond) to three significant digits into buf:
 * "472 ns", "12.3 ms", "1.20 s", "3600 s" (at most 7 columns below 10^5 s;
 * "µ" is one column, two bytes); "-" when not finite. Returns buf. */
char *sp_render_duration(char *buf, size_t len, double ns);

/* Formats a number of bytes with a binary unit into buf, at most 10
 * visible characters ("     512 B", "  1.50 KiB", "123.4 MiB", "   2.0 TiB");
 * negative counts keep their sign. Returns buf. */
char *sp_render_bytes(char *buf, size_t len, double bytes);

/* Terminal columns of the UTF-8 text s: East Asian wide characters count 2,
 * combining marks 0; malformed bytes and control characters (tabs included)
 * count 1, as the '?' they are printed as. */
int sp_render_text_width(const char *s);

/* Writes s in at most maxw columns, cut with "…" when wider, malformed bytes
 * and control characters as '?'. Returns the columns written (no padding). */
int sp_render_text(FILE *out, const char *s, int maxw);

/* sp_render_text for names: one wider than maxw loses its middle, keeping
 * its start and its end, where the function name is (maxw - 1) / 3 columns,
 * "…", then the rest from the end: "importlib._…aderBasics.exec_module". Cut
 * at the end below 8 columns. Returns the columns written (no padding). */
int sp_render_text_mid(FILE *out, const char *s, int maxw);

#endif
