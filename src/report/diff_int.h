/* diff_int.h - what diff.c (the comparison and its table) and diff_gate.c
 * (the --fail-above verdicts) share inside the report layer: the
 * formatting of diff_format.c, used by both, and the verdicts of
 * diff_gate.c, used by diff.c. diff_gate.c calls nothing of diff.c. */
#ifndef SP_DIFF_INT_H
#define SP_DIFF_INT_H

#include <stddef.h>
#include <stdio.h>

#include "sp_diff.h"

#define CELL 32                        /* bytes of one formatted cell */

/* diff_format.c */

/* Seconds from ns without padding ("0.002191") into buf (CELL bytes). */
char *sp_diff_secs(char *buf, double ns);
/* A signed percentage ("+12.5%", "-" for NAN) into buf (CELL bytes). */
char *sp_diff_percent(char *buf, double pct);
/* A name for a one-line message: control characters as '?', cut at 80
 * bytes; returns buf. */
const char *sp_diff_plain(char *buf, size_t len, const char *s);

/* diff_gate.c */

/* Gives each row its verdict from the totals (d->bound, d->min_time) and
 * counts the rows above the bound (worst, nabove). */
void sp_diff_mark(struct sp_diff *d);
/* The lines under the table saying how --fail-above judged the rows;
 * nothing without a bound. */
void sp_diff_put_gate(FILE *out, const struct sp_diff *d);
/* The row's ", \"verdict\": ..., \"p_value\": ..." JSON members. */
void sp_diff_json_verdict(FILE *out, const struct sp_diff_row *r);

#endif
