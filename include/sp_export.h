/* sp_export.h - a profile's calls in formats other tools read: csv
 * (pandas), json, Chrome trace events (Perfetto), folded stacks
 * (flamegraph.pl), speedscope's own file (evented profiles); aggregates (run --aggregate) as one row per
 * region and rank, or folded from the stored call trees. */
#ifndef SP_EXPORT_H
#define SP_EXPORT_H

#include <stdio.h>

#include "sp_error.h"
#include "sp_h5.h"
#include "sp_select.h"

enum sp_export_format {
	SP_EXPORT_CSV,
	SP_EXPORT_JSON,
	SP_EXPORT_CHROME,
	SP_EXPORT_FOLDED,
	SP_EXPORT_SPEEDSCOPE,
	SP_EXPORT_NFORMATS
};

/* The formats' names, as --format takes them. */
extern const char *const sp_export_format_names[SP_EXPORT_NFORMATS];

/* The format named name, or -1 when there is none. */
int sp_export_format_parse(const char *name);

/* Writes the calls of the open stream s (the file at path, named in the
 * json formats) that sel selects (NULL: all) to f, in fmt. Times are
 * relative to the profile's time origin (sp_profile_time_origin), one axis
 * for all ranks. csv, json and chrome hold a slice of the file in memory at
 * a time; folded one rank's calls (20 bytes each), speedscope also its
 * events (32 bytes a call). Returns SP_OK; SP_EINVAL when sel keeps no rank
 * (err names the ranks the profile has) or for a Chrome trace or speedscope
 * file of aggregates; SP_ENOMEM; a read error of the stream; SP_EIO
 * when writing f failed (*write_errno, when not NULL, is then its errno).
 * Does not close f. */
enum sp_err sp_export(struct sp_h5_stream *s, const char *path, enum sp_export_format fmt,
		      const struct sp_select *sel, FILE *f, int *write_errno, struct sp_error *err);

/* Whether a file that begins with head (its first n bytes, n > 0) is an
 * export of any format (so export -o may replace it): 1 or 0. */
int sp_export_is_own(const char *head, size_t n);

#endif
