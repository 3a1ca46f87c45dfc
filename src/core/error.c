/* error.c - filling the library's one error type (see sp_error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "sp_error.h"

enum sp_err sp_error_set(struct sp_error *err, enum sp_err code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return code;
}
