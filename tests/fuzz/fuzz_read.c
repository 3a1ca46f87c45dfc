/* fuzz_read.c - libFuzzer target for everything that reads a profile: the
 * input bytes are written to a file, which is then read the ways the tool
 * reads files (sp_h5_read with every event, rendered as summary, JSON
 * and line tables; the stream reader a slice at a time) and handed to the
 * file-reading commands themselves (summary or its JSON, line-profile,
 * export in one of its formats, diff; the variant picked by the input, so
 * that every one is run), their stdout going to /dev/null. Oracles beyond the sanitizers: a command returns 0 having
 * printed no error, or nonzero having printed exactly one error line; a
 * failed read leaves one line in err and *out NULL; nothing leaves an HDF5
 * object open. Built by `make fuzz` / `make fuzz-ci` with clang's
 * -fsanitize=fuzzer,address,undefined (see the Makefile). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "sp_cmd.h"
#include "sp_h5.h"
#include "sp_tree.h"
#include "sp_render.h"

static char path[256];
static FILE *sink;
static int error_lines;       /* sp_cmd_error calls since the last command */

#define CHECK(cond)                                                                       \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "fuzz_read: %s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                                         \
			abort();                                                          \
		}                                                                         \
	} while (0)

/* The commands' error printer (src/core/say.c's, which this target does not link):
 * the same line, kept in memory and checked instead of printed. */
void sp_cmd_error(const char *cmd, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n = snprintf(line, sizeof line, "scope-profiler: %s: ", cmd);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	CHECK(strchr(line, '\n') == NULL);
	CHECK(line[n] != '\0');
	error_lines++;
}

static void no_open_objects(void)
{
	CHECK(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) == 0);
}

static void run_cmd(int (*fn)(int, char **), int argc, const char **argv)
{
	error_lines = 0;
	int status = fn(argc, (char **)argv);
	fflush(stdout);
	clearerr(stdout);
	CHECK(status == 0 ? error_lines == 0 : error_lines == 1);
	no_open_objects();
}

static void read_and_render(int flags)
{
	struct sp_profile *p = NULL;
	struct sp_error err = {0};
	if (sp_report_read(path, flags, &p, &err) != SP_OK) {
		CHECK(p == NULL);
		CHECK(err.msg[0] && !strchr(err.msg, '\n'));
		no_open_objects();
		return;
	}
	struct sp_render_opts json = {.json = 1};
	sp_render_summary(sink, p, path, SP_RENDER_ALL, &err);
	sp_render_summary_opts(sink, p, path, &json, &err);
	sp_render_lines(sink, p, path, &err);
	sp_profile_free(p);
	no_open_objects();
}

/* Every region's calls, a few at a time, as export reads them. */
static void stream_all(void)
{
	struct sp_h5_stream *s = NULL;
	struct sp_error err = {0};
	if (sp_h5_stream_open(path, &s, &err) != SP_OK) {
		CHECK(s == NULL);
		CHECK(err.msg[0] && !strchr(err.msg, '\n'));
		no_open_objects();
		return;
	}
	const struct sp_profile *p = sp_h5_stream_profile(s);
	enum { SLICE = 7 };
	int64_t starts[SLICE], ends[SLICE], values[SLICE];
	int32_t lanes[SLICE];
	for (size_t ri = 0; ri < p->nranks; ri++)
		for (size_t gi = 0; gi < p->ranks[ri].nregions; gi++) {
			const struct sp_region_data *rd = &p->ranks[ri].regions[gi];
			uint64_t calls = rd->aggregate ? 0 : (uint64_t)rd->stats.num_calls;
			for (uint64_t first = 0; first < calls; first += SLICE) {
				size_t n = calls - first < SLICE ? (size_t)(calls - first) : SLICE;
				if (sp_h5_stream_read(s, ri, gi, first, n, starts, ends, lanes, &err) != SP_OK ||
				    (rd->value_kind &&
				     sp_h5_stream_values(s, ri, gi, first, n, values, &err) != SP_OK)) {
					CHECK(err.msg[0] && !strchr(err.msg, '\n'));
					break;
				}
			}
		}
	sp_h5_stream_close(s);
	no_open_objects();
}

/* An input that crashes or hangs the target leaves its file behind: the
 * files of fuzzing processes that are gone are removed at the next start. */
static void remove_stale_inputs(const char *tmp)
{
	DIR *d = opendir(tmp);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		long pid;
		char end[4];
		if (sscanf(e->d_name, "sp-fuzz-%ld.%3s", &pid, end) == 2 && strcmp(end, "h5") == 0 &&
		    pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	tmp = tmp && *tmp ? tmp : "/tmp";
	remove_stale_inputs(tmp);
	snprintf(path, sizeof path, "%s/sp-fuzz-%ld.h5", tmp, (long)getpid());
	/* The commands print their reports to stdout: throw them away. */
	if (!freopen("/dev/null", "w", stdout) || !(sink = fopen("/dev/null", "w")))
		abort();
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	CHECK(fwrite(data, 1, size, f) == size);
	CHECK(fclose(f) == 0);

	/* Each open costs HDF5's metadata cache afresh (most of the time per
	 * input): the summary-only read is the commands' own, and the variants
	 * of a command (export's format, summary's JSON) take turns by input. */
	read_and_render(SP_READ_EVENTS);
	stream_all();
	unsigned pick = 0;
	for (size_t i = 0; i < size; i += 61)
		pick = pick * 31 + data[i];
	static const char *const formats[] = {"csv", "json", "chrome", "folded"};
	const char *summary[] = {"summary", path};
	const char *summary_json[] = {"summary", "--json", "--sort", "mean", path};
	const char *lines[] = {"line-profile", path};
	const char *diff[] = {"diff", path, path};
	const char *export[] = {"export", "--format", formats[pick % 4], path};
	if (pick & 4)
		run_cmd(cmd_summary, 5, summary_json);
	else
		run_cmd(cmd_summary, 2, summary);
	run_cmd(cmd_line_profile, 2, lines);
	run_cmd(cmd_diff, 3, diff);
	run_cmd(cmd_export, 4, export);
	unlink(path);
	return 0;
}
