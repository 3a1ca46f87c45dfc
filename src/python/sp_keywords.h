/* sp_keywords.h - setup()'s keywords and struct sp_settings, both ways
 * (keywords.c). Include <Python.h> first. */
#ifndef SP_KEYWORDS_H
#define SP_KEYWORDS_H

#include "sp_session.h"

/* setup()'s keywords (kw, a dict or NULL) into s; *given gets a bit per
 * keyword row given (1u << its index in sp_settings_keywords); a path is
 * copied into *path (the caller frees it). An unknown keyword is a
 * TypeError naming it, a bad value a ValueError; 0, or -1 with the
 * exception. */
int sp_keywords_settings(PyObject *kw, struct sp_settings *s, unsigned *given, char **path);

/* Copies keyword row k's field from src to dst. */
void sp_keywords_copy(struct sp_settings *dst, const struct sp_settings *src, const struct sp_setting_key *k);

/* {keyword: value} of every setup() keyword in s (get_config()); a new
 * reference, or NULL with an exception. */
PyObject *sp_keywords_dict(const struct sp_settings *s);

#endif
