/* settings.c - the settings of a session (include/sp_session.h): defaults,
 * compression names, and the one table from setup() keywords to fields. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_filter.h"
#include "sp_recorder.h"
#include "sp_session.h"

#define FIELD(f) offsetof(struct sp_settings, f)

/* setup()'s keywords in the order help shows them. */
static const struct sp_setting_key keys[] = {
	{"file_path", SP_SETTING_PATH, FIELD(outfile), NULL},
	{"buffer_limit", SP_SETTING_COUNT, FIELD(buffer_limit), NULL},
	{"deactivate_profiling", SP_SETTING_BOOL, FIELD(disable), NULL},
	{"deactivate_file_output", SP_SETTING_BOOL, FIELD(no_output), NULL},
	{"verbose", SP_SETTING_BOOL, FIELD(verbose), NULL},
	{"recursive_profile", SP_SETTING_BOOL, FIELD(recursive), NULL},
	{"use_line_profiler", SP_SETTING_BOOL, FIELD(line_profile), NULL},
	{"aggregation_mode", SP_SETTING_BOOL, FIELD(aggregate), NULL},
	{"track_threads", SP_SETTING_BOOL, FIELD(track_threads), NULL},
	{"track_async", SP_SETTING_BOOL, FIELD(track_async), NULL},
	{"hdf5_compression", SP_SETTING_COMPRESSION, FIELD(compression), NULL},
	{"use_likwid", SP_SETTING_BOOL, FIELD(likwid), NULL},
	{"use_memray", SP_SETTING_BOOL, FIELD(memory), NULL},
	{"profile_mpi_calls", SP_SETTING_BOOL, FIELD(mpi_calls), NULL},
	{"use_nvtx", SP_SETTING_BOOL, FIELD(nvtx), NULL},
	{"use_gpu", SP_SETTING_BOOL, FIELD(gpu), NULL},
	{"memory_budget", SP_SETTING_COUNT, FIELD(memory_budget), NULL},
};

#define NKEYS (sizeof keys / sizeof keys[0])

const struct sp_setting_key *sp_settings_keyword(const char *keyword)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].keyword, keyword) == 0)
			return &keys[i];
	return NULL;
}

const struct sp_setting_key *sp_settings_keywords(size_t *n)
{
	*n = NKEYS;
	return keys;
}

/* The earlier releases' keywords (include/sp_session.h). */
static const struct sp_setting_alias aliases[] = {
	{"profiling_activated", "deactivate_profiling", 1},
	{"time_trace", "aggregation_mode", 1},
	{"flush_to_disk", NULL, 0},
};

const struct sp_setting_alias *sp_settings_alias(const char *keyword)
{
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (strcmp(aliases[i].keyword, keyword) == 0)
			return &aliases[i];
	return NULL;
}

void sp_settings_defaults(struct sp_settings *s)
{
	if (!s->outfile)
		s->outfile = "profiling_data.h5";
	if (!s->buffer_limit)
		s->buffer_limit = SP_DEFAULT_BUFFER_LIMIT;
	if (s->compression < 0)
		s->compression = 0;
	if (s->verbose < 0)
		s->verbose = 1;
	if (!s->memory_budget)
		s->memory_budget = SP_MEMORY_BUDGET;
	if (!s->flush_ms)
		s->flush_ms = 1000;
}

int sp_parse_decimal(const char *s, double *v, char **end)
{
	if (!*s || !strchr("0123456789+-.", *s))
		return -1;
	errno = 0;
	double d = strtod(s, end);
	if (*end == s || errno)
		return -1;
	for (const char *c = s; c < *end; c++)
		if (!strchr("0123456789+-.eE", *c))
			return -1;   /* 0x10, inf, nan */
	*v = d;
	return 0;
}

/* hdf5_compression="auto" and "gzip": shuffle + deflate at this level (as
 * h5py's compression="gzip"). */
#define AUTO_LEVEL 4

int sp_settings_compression(const char *text, int *level)
{
	if (strcmp(text, "none") == 0)
		*level = 0;
	else if (strcmp(text, "auto") == 0 || strcmp(text, "gzip") == 0)
		*level = AUTO_LEVEL;
	else if (strncmp(text, "gzip=", 5) == 0 && text[5] >= '1' && text[5] <= '9' && !text[6])
		*level = text[5] - '0';
	else
		return -1;
	return 0;
}

int sp_settings_given(const struct sp_settings *s, const struct sp_setting_key *k)
{
	const char *field = (const char *)s + k->offset;
	switch (k->kind) {
	case SP_SETTING_PATH:
		return *(const char *const *)(const void *)field != NULL;
	case SP_SETTING_COUNT:
		return *(const long long *)(const void *)field != 0;
	case SP_SETTING_COMPRESSION:
		return *(const int *)(const void *)field >= 0;
	case SP_SETTING_BOOL:
	case SP_SETTING_NOT_YET:
		if (k->offset == FIELD(verbose))
			return *(const int *)(const void *)field >= 0;
		return *(const int *)(const void *)field != 0;
	}
	return 0;
}

int sp_settings_check(const struct sp_settings *s, int python, char *err, size_t len)
{
	if (s->line_profile && s->recursive) {
		snprintf(err, len, python
			 ? "use_line_profiler and recursive_profile cannot be combined: time the lines "
			   "of chosen functions, or the calls of every function"
			 : "--line-profile and --recursive cannot be combined: time the lines of the "
			   "functions you decorate, or the calls of every function");
		return -1;
	}
	if (!python && s->aggregate && (s->line_profile || s->track_async)) {
		snprintf(err, len, "--aggregate cannot be combined with %s: aggregates keep no per-call data",
			 s->line_profile ? "--line-profile" : "--track-async");
		return -1;
	}
	if (python && s->aggregate && !s->disable) {
		const char *other = s->line_profile ? "use_line_profiler: line timing needs each call's lines"
			: s->track_async ? "track_async: aggregates nest calls per thread, not per task" : NULL;
		if (other) {
			snprintf(err, len, "aggregation_mode cannot be combined with %s", other);
			return -1;
		}
	}
	if (s->memory && !s->disable && (s->aggregate || s->line_profile)) {
		snprintf(err, len, "%s cannot be combined with %s", python ? "use_memray" : "--memory",
			 s->aggregate ? (python ? "aggregation_mode: aggregates keep no per-call data"
					: "--aggregate: aggregates keep no per-call data")
			 : python ? "use_line_profiler: record the allocations and the lines in two runs"
			 : "--line-profile: record the allocations and the lines in two runs");
		return -1;
	}
	if (s->mpi_calls && !s->disable && (s->aggregate || s->track_async)) {
		snprintf(err, len, python ? "profile_mpi_calls cannot be combined with %s"
			 : "--mpi-calls cannot be combined with %s",
			 s->aggregate ? (python ? "aggregation_mode: MPI calls are kept per call"
					 : "--aggregate: MPI calls are kept per call")
			 : (python ? "track_async: MPI calls are timed per thread, not per task"
			    : "--track-async: MPI calls are timed per thread, not per task"));
		return -1;
	}
	if (s->likwid && !s->disable &&
	    (s->aggregate || s->line_profile || s->track_async || s->recursive || s->memory)) {
		/* LIKWID's regions are per thread and strictly nested: a task's
		 * calls interleave in one thread; aggregates and line timing keep
		 * no per-call marker; the hook would make every function call a
		 * marker region (two library calls each); the allocation counting
		 * has region classes of its own (record them in two runs). */
		const char *other = s->memory ? (python ? "use_memray" : "--memory")
			: s->aggregate ? (python ? "aggregation_mode" : "--aggregate")
			: s->line_profile ? (python ? "use_line_profiler" : "--line-profile")
			: s->track_async ? (python ? "track_async" : "--track-async")
					 : (python ? "recursive_profile" : "--recursive");
		snprintf(err, len, "%s cannot be combined with %s: LIKWID marker regions wrap the "
			 "calls of explicit regions (with --track-threads too)",
			 python ? "use_likwid" : "--likwid", other);
		return -1;
	}
	if (s->nvtx && !s->disable &&
	    (s->aggregate || s->line_profile || s->memory || s->likwid || s->mpi_calls)) {
		/* As the original: aggregates keep no calls to make ranges of; the
		 * other modes have region classes of their own (record them in
		 * two runs), and MPI calls are timed outside the regions' paths. */
		const char *other = s->aggregate ? (python ? "aggregation_mode" : "--aggregate")
			: s->line_profile ? (python ? "use_line_profiler" : "--line-profile")
			: s->memory ? (python ? "use_memray" : "--memory")
			: s->likwid ? (python ? "use_likwid" : "--likwid")
				    : (python ? "profile_mpi_calls" : "--mpi-calls");
		snprintf(err, len, "%s cannot be combined with %s: %s", python ? "use_nvtx" : "--nvtx", other,
			 s->aggregate ? "aggregates keep no per-call data" : "record them in two runs");
		return -1;
	}
	if (s->gpu && !s->disable &&
	    (s->aggregate || s->line_profile || s->memory || s->likwid || s->track_async || s->recursive)) {
		/* As the original: aggregates keep no calls; a task's calls
		 * interleave on a thread (each would wait for the others' work);
		 * every function call would wait for the device under
		 * --recursive; the other modes have region classes of their own. */
		const char *other = s->aggregate ? (python ? "aggregation_mode" : "--aggregate")
			: s->line_profile ? (python ? "use_line_profiler" : "--line-profile")
			: s->memory ? (python ? "use_memray" : "--memory")
			: s->likwid ? (python ? "use_likwid" : "--likwid")
			: s->track_async ? (python ? "track_async" : "--track-async")
					 : (python ? "recursive_profile" : "--recursive");
		snprintf(err, len, "%s cannot be combined with %s: the device is synchronised around "
			 "explicit regions' calls", python ? "use_gpu" : "--gpu", other);
		return -1;
	}
	if (s->memory_budget > 0 && s->memory_budget < SP_MEMORY_BUDGET_MIN) {
		snprintf(err, len, "%s %lld is below the least budget, 1 MiB (%lld bytes)",
			 python ? "memory_budget=" : "--memory-budget", s->memory_budget, SP_MEMORY_BUDGET_MIN);
		return -1;
	}
	if (!python && !s->recursive && (s->trace_all || s->ninclude || s->nexclude)) {
		snprintf(err, len, "--all, --include and --exclude go with --recursive");
		return -1;
	}
	/* The patterns compile now, before anything runs (sp_filter.h). */
	for (size_t i = 0; i < s->ninclude + s->nexclude; i++) {
		struct sp_pattern p;
		struct sp_error e = {0};
		int inc = i < s->ninclude;
		if (sp_pattern_init(&p, inc ? s->include[i] : s->exclude[i - s->ninclude], &e) != SP_OK) {
			snprintf(err, len, "%s: %s", inc ? (python ? "include" : "--include")
							 : (python ? "exclude" : "--exclude"), e.msg);
			return -1;
		}
		sp_pattern_free(&p);
	}
	return 0;
}
