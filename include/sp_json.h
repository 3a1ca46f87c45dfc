/* sp_json.h - the one JSON string writer and UTF-8 check of the reports
 * (summary --json, diff --json, every export format), and a growable byte
 * buffer to encode names into once. */
#ifndef SP_JSON_H
#define SP_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The length in bytes of the well-formed UTF-8 character at s (1 for ASCII,
 * NUL included), its code point in *cp; 0 when s starts a malformed,
 * overlong, surrogate or out-of-range sequence (*cp then undefined). */
size_t sp_utf8_seq(const unsigned char *s, uint32_t *cp);

/* A growable byte string, always NUL-terminated once non-empty. oom is set
 * (and further appends ignored) when memory ran out. */
struct sp_str {
	char *p;
	size_t n, cap;
	int oom;
};

/* Appends len bytes of s. */
void sp_str_add(struct sp_str *b, const char *s, size_t len);

/* Frees the buffer; it is empty again. */
void sp_str_free(struct sp_str *b);

/* Appends s as a JSON string, quotes included: '"' and '\\' escaped, \n \t
 * \r as such, other control characters as \u00XX, well-formed UTF-8 kept,
 * each malformed byte as \ufffd. Check b->oom afterwards. */
void sp_json_string(struct sp_str *b, const char *s);

/* Writes s to out as sp_json_string encodes it. */
void sp_json_fputs(FILE *out, const char *s);

/* Appends s as a CSV field: quoted (quotes doubled) when it holds a comma,
 * a quote or a line break (RFC 4180); bytes otherwise as they are. */
void sp_csv_field(struct sp_str *b, const char *s);

#endif
