/* export_speedscope.c - speedscope's own JSON file (its file-format schema,
 * https://www.speedscope.app/file-format-schema.json): the regions as the
 * shared frames, and per selected rank and lane an "evented" profile of
 * open ("O") and close ("C") events in nanoseconds from the profile's time
 * origin, nested by nest.c's rule (the summary's call tree). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_nest.h"

/* One event of a lane: at ns, frame (a group), open or close. */
struct sevent {
	int64_t at;
	int32_t frame;
	int32_t open;
};

/* A call still open in a lane. */
struct sopen {
	int64_t tag, end;
	int32_t frame;
};

/* A lane's events, in order, and its open calls. */
struct slane {
	int32_t lane;
	struct sevent *ev;
	size_t n, cap;
	struct sopen *stack;
	size_t depth, scap;
	int64_t last;                  /* the latest event's time */
};

struct swalk {
	struct slane *lanes;
	size_t nlanes, cap;
	const int32_t *gid;            /* the group of each region of the rank */
	int64_t origin;
	int written;                   /* a profile was written (the next one after a comma) */
};

static int push_event(struct slane *l, int64_t at, int32_t frame, int open)
{
	if (SP_GROW(&l->ev, &l->cap, l->n + 1) != 0)
		return -1;
	/* Events of a lane never go back in time: a call that partly overlaps
	 * the next (a sibling by the rule) closes where that one opens. */
	if (at < l->last)
		at = l->last;
	l->ev[l->n++] = (struct sevent){at, frame, open};
	l->last = at;
	return 0;
}

/* Closes lane l's open calls down to the one tagged tag (-1: all), none
 * later than until. */
static int close_to(struct slane *l, int64_t tag, int64_t until)
{
	while (l->depth && l->stack[l->depth - 1].tag != tag) {
		const struct sopen *s = &l->stack[--l->depth];
		if (push_event(l, s->end < until ? s->end : until, s->frame, 0) != 0)
			return -1;
	}
	return 0;
}

static struct slane *lane_of(struct swalk *w, int32_t lane)
{
	for (size_t i = 0; i < w->nlanes; i++)
		if (w->lanes[i].lane == lane)
			return &w->lanes[i];
	if (SP_GROW(&w->lanes, &w->cap, w->nlanes + 1) != 0)
		return NULL;
	struct slane *l = &w->lanes[w->nlanes++];
	*l = (struct slane){.lane = lane, .last = INT64_MIN};
	/* Lanes by number, as the other exports and the charts order them. */
	for (; l > w->lanes && l[-1].lane > lane; l--) {
		struct slane t = l[-1];
		l[-1] = *l;
		*l = t;
	}
	return l;
}

/* The nesting's visitor: closes what the call is not inside, opens it. */
static int svisit(void *ctx, const struct sp_nest_call *c, int64_t parent_tag, int64_t *tag)
{
	struct swalk *w = ctx;
	struct slane *l = lane_of(w, c->lane);
	int64_t start = sp_sub_sat(c->start, w->origin), end = sp_sub_sat(c->end, w->origin);
	if (!l || close_to(l, parent_tag, start) != 0 || SP_GROW(&l->stack, &l->scap, l->depth + 1) != 0)
		return -1;
	*tag = (int64_t)c->pos;
	l->stack[l->depth++] = (struct sopen){*tag, end, w->gid[c->region]};
	return push_event(l, start, w->gid[c->region], 1);
}

static void lanes_free(struct swalk *w)
{
	for (size_t i = 0; i < w->nlanes; i++) {
		free(w->lanes[i].ev);
		free(w->lanes[i].stack);
	}
	free(w->lanes);
	w->lanes = NULL;
	w->nlanes = w->cap = 0;
}

/* One lane's profile: {"type":"evented", ...}. */
static void write_profile(struct exporter *x, int rank, int many, const struct slane *l, int first)
{
	struct out *o = x->o;
	char name[64];
	if (many)
		snprintf(name, sizeof name, "rank %d, lane %d", rank, (int)l->lane);
	else
		snprintf(name, sizeof name, "rank %d", rank);
	int64_t lo = l->n && l->ev[0].at < 0 ? l->ev[0].at : 0, hi = l->n ? l->ev[l->n - 1].at : 0;
	out_str(o, first ? "\n" : ",\n");
	out_str(o, "{\"type\":\"evented\",\"name\":\"");
	out_str(o, name);
	out_str(o, "\",\"unit\":\"nanoseconds\",\"startValue\":");
	out_dec(o, lo, 0);
	out_str(o, ",\"endValue\":");
	out_dec(o, hi, 0);
	out_str(o, ",\"events\":[");
	for (size_t i = 0; i < l->n; i++) {
		out_str(o, i ? ",{\"type\":\"" : "{\"type\":\"");
		out_ch(o, l->ev[i].open ? 'O' : 'C');
		out_str(o, "\",\"frame\":");
		out_dec(o, l->ev[i].frame, 0);
		out_str(o, ",\"at\":");
		out_dec(o, l->ev[i].at, 0);
		out_ch(o, '}');
	}
	out_str(o, "]}");
}

static void sbegin(void *ctx, const int32_t *gid, int64_t origin)
{
	struct swalk *w = ctx;
	w->gid = gid;
	w->origin = origin;
}

/* After a rank's walk: a profile per lane. */
static enum sp_err sprofiles(struct exporter *x, void *ctx, int rank)
{
	struct swalk *w = ctx;
	for (size_t i = 0; i < w->nlanes; i++) {
		if (close_to(&w->lanes[i], -1, INT64_MAX) != 0)
			return sp_error_set(x->err, SP_ENOMEM, "rank %d: out of memory for the events", rank);
		write_profile(x, rank, w->nlanes > 1, &w->lanes[i], !w->written);
		w->written = 1;
	}
	lanes_free(w);
	return x->o->err ? SP_EIO : SP_OK;
}

enum sp_err sp_export_speedscope(struct exporter *x)
{
	struct out *o = x->o;
	struct sp_str s = {0};
	struct swalk w = {0};
	enum sp_err rc = SP_OK;
	/* The frames: every region by name, in the export's order. */
	out_str(o, HEAD_SPEEDSCOPE ",\n\"shared\":{\"frames\":[");
	for (size_t k = 0; k < x->ngroups; k++) {
		s.n = 0;
		sp_json_string(&s, sp_export_group_name(x, k));
		if (s.oom) {
			rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
			goto out;
		}
		out_str(o, k ? ",\n{\"name\":" : "\n{\"name\":");
		out_mem(o, s.p, s.n);
		out_ch(o, '}');
	}
	out_str(o, "]},\n\"profiles\":[");
	if ((rc = sp_export_walk_ranks(x, svisit, &w, sbegin, sprofiles)) != SP_OK)
		goto out;
	out_str(o, "\n],\n\"name\":");
	s.n = 0;
	sp_json_string(&s, x->path);
	if (s.oom) {
		rc = sp_error_set(x->err, SP_ENOMEM, "out of memory");
		goto out;
	}
	out_mem(o, s.p, s.n);
	out_str(o, ",\"activeProfileIndex\":0,\"exporter\":\"scope-profiler " SP_VERSION "\"}\n");
out:
	lanes_free(&w);
	free(s.p);
	return rc;
}
