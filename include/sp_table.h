/* sp_table.h - the one column-fitted table renderer of the reports (the
 * summary's region table, diff, the line-profile tables): columns as wide
 * as their widest cell, each written after its own separator. */
#ifndef SP_TABLE_H
#define SP_TABLE_H

#include <stddef.h>
#include <stdio.h>

enum sp_table_align {
	SP_TABLE_RIGHT,          /* padded on the left; never cut (numbers) */
	SP_TABLE_LEFT,           /* text: cut with "…" to the width, padded on the right */
	SP_TABLE_NAME,           /* a name: as LEFT, but cut in the middle (sp_render_text_mid) */
};

/* One column: what comes before it, how its cells sit, its width. */
struct sp_table_col {
	const char *sep;         /* written before each of its cells ("  ", " │ "); NULL: "" */
	enum sp_table_align align;
	int w;                   /* width in terminal columns; sp_table_fit widens it */
};

/* Widens cols[c].w to what cells[c] needs, for c < n (a NULL cell needs
 * nothing), in terminal columns (UTF-8 names, source, "µs"). */
void sp_table_fit(struct sp_table_col *cols, size_t n, const char *const *cells);

/* Writes one row: for each column its separator and cells[c] (NULL: "")
 * fitted to its width, then end (NULL: nothing). A right-aligned cell wider
 * than its column is written whole, as printf's "%*s" would. */
void sp_table_row(FILE *out, const struct sp_table_col *cols, size_t n,
		  const char *const *cells, const char *end);

#endif
