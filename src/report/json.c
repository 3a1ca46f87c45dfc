/* json.c - the one JSON string escaper and UTF-8 check (sp_json.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sp_grow.h"
#include "sp_json.h"

size_t sp_utf8_seq(const unsigned char *s, uint32_t *cp)
{
	unsigned c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80)
		return *cp = c, 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

void sp_str_add(struct sp_str *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (len > SIZE_MAX - b->n - 1 || SP_GROW(&b->p, &b->cap, b->n + len + 1) != 0) {
		b->oom = 1;
		return;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = '\0';
}

void sp_str_free(struct sp_str *b)
{
	free(b->p);
	*b = (struct sp_str){ 0 };
}

/* Escapes s, handing the pieces to put(ctx, bytes, len). */
static void escape(const char *s, void (*put)(void *, const char *, size_t), void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	put(ctx, "\"", 1);
	const unsigned char *q = (const unsigned char *)s, *run = q;
	while (*q) {
		uint32_t cp;
		size_t len;
		char u[6] = { '\\', 'u', '0', '0', hex[*q >> 4], hex[*q & 15] };
		const char *e = NULL;
		size_t elen = 2;
		if (*q == '"' || *q == '\\') {
			u[1] = (char)*q;
			e = u;
		} else if (*q < 0x20) {
			e = *q == '\n' ? "\\n" : *q == '\t' ? "\\t" : *q == '\r' ? "\\r" : NULL;
			if (!e)
				e = u, elen = 6;
		} else if ((len = sp_utf8_seq(q, &cp)) != 0) {
			q += len;      /* kept: part of the current run */
			continue;
		} else {
			e = "\\ufffd", elen = 6;
		}
		if (q > run)
			put(ctx, (const char *)run, (size_t)(q - run));
		put(ctx, e, elen);
		run = ++q;
	}
	if (q > run)
		put(ctx, (const char *)run, (size_t)(q - run));
	put(ctx, "\"", 1);
}

static void put_buf(void *ctx, const char *s, size_t len)
{
	sp_str_add(ctx, s, len);
}

static void put_file(void *ctx, const char *s, size_t len)
{
	fwrite(s, 1, len, ctx);
}

void sp_json_string(struct sp_str *b, const char *s)
{
	escape(s, put_buf, b);
}

void sp_json_fputs(FILE *out, const char *s)
{
	escape(s, put_file, out);
}

void sp_csv_field(struct sp_str *b, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		sp_str_add(b, s, strlen(s));
		return;
	}
	sp_str_add(b, "\"", 1);
	for (const char *q = s; *q; q++) {
		if (*q == '"')
			sp_str_add(b, "\"", 1);
		sp_str_add(b, q, 1);
	}
	sp_str_add(b, "\"", 1);
}
