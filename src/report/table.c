/* table.c - the one column-fitted table renderer (sp_table.h). */
#include <string.h>

#include "render_int.h"
#include "sp_render.h"
#include "sp_table.h"

void sp_table_fit(struct sp_table_col *cols, size_t n, const char *const *cells)
{
	for (size_t c = 0; c < n; c++) {
		if (!cells[c])
			continue;
		int w = sp_render_text_width(cells[c]);
		cols[c].w = w > cols[c].w ? w : cols[c].w;
	}
}

void sp_table_row(FILE *out, const struct sp_table_col *cols, size_t n,
		  const char *const *cells, const char *end)
{
	for (size_t c = 0; c < n; c++) {
		const char *s = cells[c] ? cells[c] : "";
		if (cols[c].sep)
			fputs(cols[c].sep, out);
		if (cols[c].align == SP_TABLE_LEFT) {
			sp_render_pad(out, cols[c].w - sp_render_text(out, s, cols[c].w));
		} else if (cols[c].align == SP_TABLE_NAME) {
			sp_render_pad(out, cols[c].w - sp_render_text_mid(out, s, cols[c].w));
		} else {
			sp_render_pad(out, cols[c].w - sp_render_text_width(s));
			fputs(s, out);
		}
	}
	if (end)
		fputs(end, out);
}
