// SPDX-License-Identifier: MIT
/*
 * Building a trace: the append functions and the checks that keep a trace
 * well-formed (every reference to a live tensor, aliases in range).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "trace/symtab.h"
#include "trace/trace.h"

struct tp_trace_name_table {
	struct tp_symtab st;
};

/* Make room for @need elements of @size bytes in *@p (capacity *@cap). */
static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	void *q;

	if (need <= *cap)
		return 0;
	q = tp_array_grow(*p, cap, need, size, 64);
	if (!q)
		return -ENOMEM;
	*p = q;
	return 0;
}

#define GROW(t, field, extra) \
	grow((void **)&(t)->field, &(t)->cap_##field, \
	     (t)->n_##field + (extra), sizeof(*(t)->field))

struct tp_trace *tp_trace_new(void)
{
	struct tp_trace *t = calloc(1, sizeof(*t));

	if (!t)
		goto err;
	t->name_table = calloc(1, sizeof(*t->name_table));
	if (!t->name_table)
		goto err_free;
	if (tp_symtab_init(&t->name_table->st))
		goto err_free_table;
	return t;

err_free_table:
	free(t->name_table);
err_free:
	free(t);
err:
	errno = ENOMEM;
	return NULL;
}

void tp_trace_free(struct tp_trace *t)
{
	if (!t)
		return;
	tp_symtab_fini(&t->name_table->st);
	free(t->name_table);
	free(t->tensors);
	free(t->storages);
	free(t->ops);
	free(t->args);
	free(t->outs);
	free(t->events);
	free(t->names);
	free(t);
}

static int check_live(const struct tp_trace *t, uint32_t id)
{
	if (id >= t->n_tensors)
		return -ENOENT;
	if (t->tensors[id].state != TP_TRACE_LIVE)
		return -ESTALE;
	return 0;
}

static int add_event(struct tp_trace *t, enum tp_trace_event_kind kind,
		     uint32_t arg)
{
	if (GROW(t, events, 1))
		return -ENOMEM;
	t->events[t->n_events].kind = kind;
	t->events[t->n_events].arg = arg;
	t->n_events++;
	return 0;
}

int tp_trace_add_tensor(struct tp_trace *t, uint64_t size, unsigned flags,
			uint32_t view_of, uint32_t *id)
{
	struct tp_trace_tensor *x;
	int rc;

	if (flags & ~TP_TRACE_FLAGS_ALL)
		return -EINVAL;
	if (view_of != TP_TRACE_NONE) {
		rc = check_live(t, view_of);
		if (rc)
			return rc;
	}
	if (t->n_tensors >= TP_TRACE_NONE - 1 ||
	    t->n_storages >= TP_TRACE_NONE - 1)
		return -E2BIG;
	if (GROW(t, tensors, 1) || GROW(t, storages, 1) ||
	    GROW(t, events, 1))
		return -ENOMEM;

	x = &t->tensors[t->n_tensors];
	x->size = size;
	x->producer = TP_TRACE_NONE;
	x->view_of = view_of;
	x->flags = (uint16_t)flags;
	x->state = TP_TRACE_LIVE;
	if (view_of == TP_TRACE_NONE) {
		x->storage = (uint32_t)t->n_storages;
		t->storages[t->n_storages].size = size;
		t->storages[t->n_storages].base = (uint32_t)t->n_tensors;
		t->n_storages++;
	} else {
		x->storage = t->tensors[view_of].storage;
	}
	*id = (uint32_t)t->n_tensors++;
	add_event(t, TP_TRACE_EV_TENSOR, *id);	/* room reserved above */
	return 0;
}

bool tp_trace_name_ok(const char *name, size_t len)
{
	if (!len || len > TP_TRACE_MAX_NAME)
		return false;
	/* Names are one token of tpager-trace(5): no blanks, no comment. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] <= ' ' || name[i] == '#' ||
		    name[i] == 0x7f)
			return false;
	return true;
}

/* The offset of @name in t->names, interning it on first use. */
static int intern_name(struct tp_trace *t, const char *name, size_t len,
		       uint32_t *off)
{
	struct tp_symtab *st = &t->name_table->st;
	uint32_t v = tp_symtab_get(st, name, len);
	int rc;

	if (v != UINT32_MAX) {
		*off = v;
		return 0;
	}
	if (t->names_len + len + 1 >= UINT32_MAX)
		return -E2BIG;
	rc = grow((void **)&t->names, &t->cap_names, t->names_len + len + 1, 1);
	if (rc)
		return rc;
	rc = tp_symtab_put(st, name, len, (uint32_t)t->names_len);
	if (rc)
		return rc;
	memcpy(t->names + t->names_len, name, len);
	t->names[t->names_len + len] = '\0';
	*off = (uint32_t)t->names_len;
	t->names_len += len + 1;
	return 0;
}

int tp_trace_add_op(struct tp_trace *t, const char *name, size_t name_len,
		    uint64_t cost_ns, const uint32_t *args, unsigned n_args,
		    const struct tp_trace_out_spec *outs, unsigned n_outs,
		    uint32_t *first)
{
	size_t n_fresh = 0;
	struct tp_trace_op *op;
	uint32_t name_off;
	int rc;

	if (n_args > TP_TRACE_MAX_ARGS || n_outs > TP_TRACE_MAX_OUTS)
		return -E2BIG;
	if (!tp_trace_name_ok(name, name_len))
		return -EINVAL;
	for (unsigned i = 0; i < n_args; i++) {
		rc = check_live(t, args[i]);
		if (rc)
			return rc;
	}
	for (unsigned j = 0; j < n_outs; j++) {
		if (outs[j].flags & ~TP_TRACE_FLAGS_ALL)
			return -EINVAL;
		switch (outs[j].kind) {
		case TP_TRACE_OUT_FRESH:
			n_fresh++;
			break;
		case TP_TRACE_OUT_VIEW:
			if (outs[j].alias >= n_args)
				return -EINVAL;
			break;
		case TP_TRACE_OUT_INPLACE:
			if (outs[j].alias >= n_args)
				return -EINVAL;
			/* One version can be overwritten only once. */
			for (unsigned k = 0; k < j; k++)
				if (outs[k].kind == TP_TRACE_OUT_INPLACE &&
				    args[outs[k].alias] == args[outs[j].alias])
					return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	if (t->n_tensors + n_outs >= TP_TRACE_NONE - 1 ||
	    t->n_storages + n_fresh >= TP_TRACE_NONE - 1 ||
	    t->n_ops >= TP_TRACE_NONE - 1 ||
	    t->n_args + n_args >= TP_TRACE_NONE - 1 ||
	    t->n_outs + n_outs >= TP_TRACE_NONE - 1)
		return -E2BIG;
	if (GROW(t, tensors, n_outs) || GROW(t, storages, n_fresh) ||
	    GROW(t, ops, 1) || GROW(t, args, n_args) ||
	    GROW(t, outs, n_outs) || GROW(t, events, 1))
		return -ENOMEM;
	rc = intern_name(t, name, name_len, &name_off);
	if (rc)
		return rc;

	/* Nothing can fail from here on. */
	op = &t->ops[t->n_ops];
	op->cost_ns = cost_ns;
	op->name = name_off;
	op->first_arg = (uint32_t)t->n_args;
	op->first_out = (uint32_t)t->n_outs;
	op->n_args = (uint8_t)n_args;
	op->n_outs = (uint8_t)n_outs;
	op->split_in = op->split_out = op->split_rows = 0;
	op->split_passes = op->split_granule = 0;
	op->split_local = 0;
	if (n_args)	/* args may still be NULL */
		memcpy(t->args + t->n_args, args, n_args * sizeof(*args));
	t->n_args += n_args;
	*first = (uint32_t)t->n_tensors;
	for (unsigned j = 0; j < n_outs; j++) {
		struct tp_trace_tensor *x = &t->tensors[t->n_tensors];
		struct tp_trace_out *o = &t->outs[t->n_outs++];

		x->size = outs[j].size;
		x->producer = (uint32_t)t->n_ops;
		x->view_of = TP_TRACE_NONE;
		x->flags = outs[j].flags;
		x->state = TP_TRACE_LIVE;
		if (outs[j].kind == TP_TRACE_OUT_FRESH) {
			x->storage = (uint32_t)t->n_storages;
			t->storages[t->n_storages].size = outs[j].size;
			t->storages[t->n_storages].base = (uint32_t)t->n_tensors;
			t->n_storages++;
		} else {
			const struct tp_trace_tensor *src =
				&t->tensors[args[outs[j].alias]];

			x->storage = src->storage;
			if (outs[j].kind == TP_TRACE_OUT_VIEW)
				x->view_of = args[outs[j].alias];
		}
		o->tensor = (uint32_t)t->n_tensors++;
		o->kind = outs[j].kind;
		o->alias = outs[j].alias;
	}
	/* Overwritten versions end after every output took its storage. */
	for (unsigned j = 0; j < n_outs; j++)
		if (outs[j].kind == TP_TRACE_OUT_INPLACE)
			t->tensors[args[outs[j].alias]].state =
				TP_TRACE_OVERWRITTEN;
	add_event(t, TP_TRACE_EV_OP, (uint32_t)t->n_ops);
	t->n_ops++;
	return 0;
}

/* Whether bit @k of @mask is set; tensors past the 64th are never cut. */
static bool has_bit(uint64_t mask, unsigned k)
{
	return k < 64 && (mask >> k & 1);
}

/* Whether @mask names only the first @n tensors. */
static bool mask_fits(uint64_t mask, unsigned n)
{
	return n >= 64 || !(mask >> n);
}

/* Whether output @o can belong to a split op, cut into @rows if @cut. */
static bool split_out_ok(const struct tp_trace *t,
			 const struct tp_trace_out *o, bool cut, uint64_t rows)
{
	if (o->kind == TP_TRACE_OUT_INPLACE)
		return false;
	return !cut || (o->kind == TP_TRACE_OUT_FRESH &&
			!(t->tensors[o->tensor].size % rows));
}

int tp_trace_set_split(struct tp_trace *t, uint32_t op, uint64_t rows,
		       uint64_t in, uint64_t out)
{
	struct tp_trace_op *x;

	if (op >= t->n_ops || rows < 2 || !(in | out))
		return -EINVAL;
	x = &t->ops[op];
	if (!mask_fits(in, x->n_args) || !mask_fits(out, x->n_outs))
		return -EINVAL;
	for (unsigned k = 0; k < x->n_args; k++)
		if (has_bit(in, k) &&
		    t->tensors[t->args[x->first_arg + k]].size % rows)
			return -EINVAL;
	for (unsigned j = 0; j < x->n_outs; j++)
		if (!split_out_ok(t, &t->outs[x->first_out + j],
				  has_bit(out, j), rows))
			return -EINVAL;
	x->split_rows = rows;
	x->split_in = in;
	x->split_out = out;
	x->split_passes = x->split_granule = 0;
	x->split_local = 0;
	return 0;
}

int tp_trace_set_split_kind(struct tp_trace *t, uint32_t op, bool local,
			    uint32_t passes, uint32_t granule)
{
	struct tp_trace_op *x;

	if (op >= t->n_ops)
		return -EINVAL;
	x = &t->ops[op];
	if (!x->split_rows || (granule && !passes) ||
	    granule >= x->split_rows)
		return -EINVAL;
	x->split_local = local;
	x->split_passes = passes;
	x->split_granule = granule;
	return 0;
}

int tp_trace_add_free(struct tp_trace *t, uint32_t id)
{
	int rc = check_live(t, id);

	if (rc)
		return rc;
	rc = add_event(t, TP_TRACE_EV_FREE, id);
	if (rc)
		return rc;
	t->tensors[id].state = TP_TRACE_FREED;
	return 0;
}

int tp_trace_add_mark(struct tp_trace *t, enum tp_trace_event_kind kind)
{
	uint32_t arg = 0;
	int rc;

	switch (kind) {
	case TP_TRACE_EV_ITER:
		arg = t->iterations;
		break;
	case TP_TRACE_EV_BACKWARD:
		break;
	case TP_TRACE_EV_MEASURE_BEGIN:
		if (t->measured)
			return -EINVAL;
		break;
	case TP_TRACE_EV_MEASURE_END:
		if (!t->measure_open)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	rc = add_event(t, kind, arg);
	if (rc)
		return rc;
	if (kind == TP_TRACE_EV_ITER)
		t->iterations++;
	else if (kind == TP_TRACE_EV_MEASURE_BEGIN)
		t->measured = t->measure_open = true;
	else if (kind == TP_TRACE_EV_MEASURE_END)
		t->measure_open = false;
	return 0;
}

bool tp_trace_equal(const struct tp_trace *a, const struct tp_trace *b)
{
	if (a->n_tensors != b->n_tensors || a->n_storages != b->n_storages ||
	    a->n_ops != b->n_ops || a->n_args != b->n_args ||
	    a->n_outs != b->n_outs || a->n_events != b->n_events)
		return false;
	for (size_t i = 0; i < a->n_tensors; i++) {
		const struct tp_trace_tensor *x = &a->tensors[i];
		const struct tp_trace_tensor *y = &b->tensors[i];

		if (x->size != y->size || x->storage != y->storage ||
		    x->producer != y->producer || x->view_of != y->view_of ||
		    x->flags != y->flags || x->state != y->state)
			return false;
	}
	for (size_t i = 0; i < a->n_storages; i++)
		if (a->storages[i].size != b->storages[i].size ||
		    a->storages[i].base != b->storages[i].base)
			return false;
	for (size_t i = 0; i < a->n_ops; i++) {
		const struct tp_trace_op *x = &a->ops[i];
		const struct tp_trace_op *y = &b->ops[i];

		if (x->cost_ns != y->cost_ns || x->n_args != y->n_args ||
		    x->n_outs != y->n_outs || x->first_arg != y->first_arg ||
		    x->first_out != y->first_out ||
		    x->split_rows != y->split_rows ||
		    x->split_in != y->split_in ||
		    x->split_out != y->split_out ||
		    x->split_local != y->split_local ||
		    x->split_passes != y->split_passes ||
		    x->split_granule != y->split_granule ||
		    strcmp(tp_trace_op_name(a, (uint32_t)i),
			   tp_trace_op_name(b, (uint32_t)i)))
			return false;
	}
	if (a->n_args && memcmp(a->args, b->args, a->n_args * sizeof(*a->args)))
		return false;
	for (size_t i = 0; i < a->n_outs; i++)
		if (a->outs[i].tensor != b->outs[i].tensor ||
		    a->outs[i].kind != b->outs[i].kind ||
		    a->outs[i].alias != b->outs[i].alias)
			return false;
	for (size_t i = 0; i < a->n_events; i++)
		if (a->events[i].kind != b->events[i].kind ||
		    a->events[i].arg != b->events[i].arg)
			return false;
	return true;
}
