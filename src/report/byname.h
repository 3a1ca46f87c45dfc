/* byname.h - regions joined by name across ranks (and files): the one join
 * of every report that shows a region once for all ranks (summary, diff,
 * export, plot). A profile's rank has each name at most once (the reader
 * checks), so a name's regions are one per rank. */
#ifndef SP_BYNAME_H
#define SP_BYNAME_H

#include <stddef.h>
#include <stdint.h>

#include "sp_keytab.h"
#include "sp_profile.h"
#include "sp_select.h"

/* One region: files[file]->ranks[ri].regions[gi]. */
struct sp_byname_ref {
	uint32_t file, ri, gi;
};

struct sp_byname {
	size_t n;                      /* names, numbered 0 .. n - 1 in order of first
					* appearance (file by file, rank by rank, region
					* by region) */
	size_t *first;                 /* n + 1: name k's regions are
					* refs[first[k] .. first[k + 1]), by file then rank */
	struct sp_byname_ref *refs;
	int32_t *id;                   /* the name of every region joined, by its place
					* in the files (sp_byname_id); -1 for a rank left out */
	size_t *base;                  /* per rank of every file in order: where its
					* regions start in id[] */
	size_t *rank0;                 /* per file: its first rank's index into base[] */
	const char **names;            /* n: each name (borrowed from the profiles) */
	struct sp_keytab ids;          /* the names' hashes (sp_byname_find) */
};

/* Joins the regions of the ranks of files[0 .. nfiles) that sel selects
 * (sp_select_rank; sel NULL: every rank) by name into *b; region selection
 * is the caller's. Returns SP_OK, or SP_ENOMEM with err set (*b then empty). */
enum sp_err sp_byname_build(struct sp_byname *b, const struct sp_profile *const *files, size_t nfiles,
			    const struct sp_select *sel, struct sp_error *err);

/* The id of name, or -1 when no region joined has it. */
int32_t sp_byname_find(const struct sp_byname *b, const char *name);

/* The name id of region gi of rank ri of file f; -1 when its rank was
 * left out. */
static inline int32_t sp_byname_id(const struct sp_byname *b, size_t f, size_t ri, size_t gi)
{
	return b->id[b->base[b->rank0[f] + ri] + gi];
}

/* Frees what b holds; b is empty again. */
void sp_byname_free(struct sp_byname *b);

#endif
