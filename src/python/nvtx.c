/* nvtx.c - the NVTX domain and names of run --nvtx (sp_nvtx.h). NVTX3's
 * implementation is header-only: it lives in every file that includes
 * sp_nvtx.h, its globals shared (NVTX's link-once symbols). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_nvtx.h"

#ifdef SP_HAVE_NVTX
nvtxDomainHandle_t sp_nvtx_domain;
_Thread_local unsigned sp_nvtx_pushed, sp_nvtx_epoch;

void sp_nvtx_pop_all(void)
{
	while (sp_nvtx_pushed)
		sp_nvtx_pop();
	sp_nvtx_epoch++;
}

int sp_nvtx_built(void)
{
	return 1;
}

int sp_nvtx_open(void)
{
	if (!sp_nvtx_domain)
		sp_nvtx_domain = nvtxDomainCreateA("scope-profiler");
	return 1;
}

void *sp_nvtx_name(const char *utf8)
{
	nvtxEventAttributes_t *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->version = NVTX_VERSION;
	a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	nvtxStringHandle_t s = nvtxDomainRegisterStringA(sp_nvtx_domain, utf8);
	if (s) {
		a->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
		a->message.registered = s;
	} else if ((a->message.ascii = strdup(utf8)) != NULL) {
		a->messageType = NVTX_MESSAGE_TYPE_ASCII;
	}
	return a;
}
#else
void sp_nvtx_pop_all(void)
{
}

int sp_nvtx_built(void)
{
	return 0;
}

int sp_nvtx_open(void)
{
	static int said;
	if (!said++)
		fprintf(stderr, "scope-profiler: warning: --nvtx (use_nvtx): this scope-profiler was built "
			"without NVTX; rebuild it where the CUDA toolkit's nvtx3/nvToolsExt.h is found "
			"(or make NVTX_INCLUDE=DIR); the run goes on without NVTX ranges\n");
	return 0;
}

void *sp_nvtx_name(const char *utf8)
{
	(void)utf8;
	return NULL;
}
#endif
