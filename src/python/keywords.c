/* keywords.c - setup()'s keywords and struct sp_settings, both ways
 * (sp_keywords.h), through the one table of include/sp_session.h
 * (core/settings.c): a keyword's value checked and stored in its field,
 * the earlier releases' names, and the settings as {keyword: value}. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_keywords.h"
#include "sp_session.h"

static int compression_of(PyObject *v, int *level)
{
	if (v == Py_None || v == Py_False) {
		*level = 0;
		return 0;
	}
	if (v == Py_True) {
		*level = 4;
		return 0;
	}
	if (PyLong_CheckExact(v)) {
		long n = PyLong_AsLong(v);
		if (n >= 0 && n <= 9) {
			*level = (int)n;
			return 0;
		}
		PyErr_Clear();
	} else if (PyUnicode_Check(v)) {
		const char *s = PyUnicode_AsUTF8(v);
		if (s && sp_settings_compression(s, level) == 0)
			return 0;
		PyErr_Clear();
	}
	PyErr_Format(PyExc_ValueError, "hdf5_compression must be 'auto', 'gzip', 'gzip=LEVEL' (LEVEL 1 "
		     "to 9), 'none', None, True, False or a level 0 to 9, not %R", v);
	return -1;
}

/* One keyword's value into its field of s; a path is copied into *path. */
static int keyword_set(struct sp_settings *s, const struct sp_setting_key *k, PyObject *v, char **path)
{
	char *field = (char *)s + k->offset;
	int truth;
	switch (k->kind) {
	case SP_SETTING_PATH: {
		PyObject *b = NULL;
		if (!PyUnicode_FSConverter(v, &b))
			return -1;
		if (PyBytes_GET_SIZE(b) == 0) {
			Py_DECREF(b);
			PyErr_Format(PyExc_ValueError, "%s must not be empty", k->keyword);
			return -1;
		}
		char *d = strdup(PyBytes_AS_STRING(b));
		Py_DECREF(b);
		if (!d) {
			PyErr_NoMemory();
			return -1;
		}
		free(*path);
		*path = d;
		*(const char **)(void *)field = d;
		return 0;
	}
	case SP_SETTING_COUNT: {
		int overflow = 0;
		int is_int = PyLong_Check(v) && !PyBool_Check(v);
		long long n = is_int ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
		if (is_int && n == 0 && !overflow && strcmp(k->keyword, "memory_budget") == 0) {
			/* 0: never stream, as run --memory-budget 0 (kept as -1) */
			*(long long *)(void *)field = -1;
			return 0;
		}
		if (n < 1 && overflow <= 0) {
			PyErr_Clear();
			PyErr_Format(PyExc_ValueError, "%s must be a positive integer, not %R", k->keyword, v);
			return -1;
		}
		*(long long *)(void *)field = overflow > 0 ? LLONG_MAX : n;
		return 0;
	}
	case SP_SETTING_COMPRESSION:
		return compression_of(v, (int *)(void *)field);
	case SP_SETTING_BOOL:
	case SP_SETTING_NOT_YET:
		if ((truth = PyObject_IsTrue(v)) < 0)
			return -1;
		if (truth && k->kind == SP_SETTING_NOT_YET) {
			PyErr_Format(PyExc_NotImplementedError, "setup(%s=True): %s is not available in this "
				     "scope-profiler build (%s)", k->keyword, k->what, SP_VERSION);
			return -1;
		}
		*(int *)(void *)field = truth;
		return 0;
	}
	return 0;
}

int sp_keywords_settings(PyObject *kw, struct sp_settings *s, unsigned *given, char **path)
{
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	Py_ssize_t pos = 0;
	PyObject *key, *v;
	*given = 0;
	while (kw && PyDict_Next(kw, &pos, &key, &v)) {
		const char *name = PyUnicode_AsUTF8(key);
		const struct sp_setting_key *k = name ? sp_settings_keyword(name) : NULL;
		if (!k) {
			if (name && sp_settings_alias(name))
				continue;   /* below, once every current keyword is in */
			PyErr_Format(PyExc_TypeError, "setup() got an unexpected keyword argument %R", key);
			return -1;
		}
		if (keyword_set(s, k, v, path) != 0)
			return -1;
		*given |= 1u << (k - keys);
	}
	/* The earlier releases' keywords (sp_settings_alias): a boolean of a
	 * current row, which the row itself must not contradict. */
	for (pos = 0; kw && PyDict_Next(kw, &pos, &key, &v);) {
		const struct sp_setting_alias *a = sp_settings_alias(PyUnicode_AsUTF8(key));
		int truth = a ? PyObject_IsTrue(v) : 0;
		if (!a || !a->of)
			continue;
		if (truth < 0)
			return -1;
		const struct sp_setting_key *k = sp_settings_keyword(a->of);
		int *field = (int *)(void *)((char *)s + k->offset), value = a->negate ? !truth : truth;
		if ((*given & (1u << (k - keys))) && *field != value) {
			PyErr_Format(PyExc_ValueError, "setup(%s=%s) contradicts %s=%s (the earlier name of "
				     "%s=%s)", k->keyword, *field ? "True" : "False", a->keyword,
				     truth ? "True" : "False", k->keyword, value ? "True" : "False");
			return -1;
		}
		*field = value;
		*given |= 1u << (k - keys);
	}
	return 0;
}

void sp_keywords_copy(struct sp_settings *dst, const struct sp_settings *src, const struct sp_setting_key *k)
{
	size_t size = k->kind == SP_SETTING_PATH ? sizeof(const char *)
		: k->kind == SP_SETTING_COUNT ? sizeof(long long) : sizeof(int);
	memcpy((char *)dst + k->offset, (const char *)src + k->offset, size);
}

PyObject *sp_keywords_dict(const struct sp_settings *cur)
{
	char comp[16];
	size_t n;
	const struct sp_setting_key *keys = sp_settings_keywords(&n);
	PyObject *d = PyDict_New();
	for (size_t i = 0; d && i < n; i++) {
		const char *field = (const char *)cur + keys[i].offset;
		PyObject *v = NULL;
		switch (keys[i].kind) {
		case SP_SETTING_PATH:
			v = PyUnicode_DecodeFSDefault(*(const char *const *)(const void *)field);
			break;
		case SP_SETTING_COUNT: {
			long long count = *(const long long *)(const void *)field;
			v = PyLong_FromLongLong(count < 0 ? 0 : count);   /* memory_budget -1: 0, never stream */
			break;
		}
		case SP_SETTING_COMPRESSION: {
			int level = *(const int *)(const void *)field;
			snprintf(comp, sizeof comp, level ? "gzip=%d" : "none", level);
			v = PyUnicode_FromString(comp);
			break;
		}
		case SP_SETTING_BOOL:
		case SP_SETTING_NOT_YET:
			v = PyBool_FromLong(*(const int *)(const void *)field);
			break;
		}
		if (!v || PyDict_SetItemString(d, keys[i].keyword, v) != 0)
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}
