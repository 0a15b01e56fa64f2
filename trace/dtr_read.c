// SPDX-License-Identifier: MIT
/*
 * The importer of DTR prototype logs (JSON lines, one instruction each;
 * ../shared/traces/dtr-log-format.md and tpager-trace(5), DTR LOGS).
 *
 * A DTR name is a reference; COPY adds a name to the same tensor, so names
 * map to a handle that counts its references and points at the tensor's
 * current version. An in-place write (MUTATE, COPY_FROM) becomes an op
 * whose output takes the storage of the version it overwrites, and the
 * handle moves to the new version: every name of the tensor sees it. When
 * the last reference to a handle is released, its version is freed; the
 * storage goes when no live tensor (view or base) is left on it.
 *
 * One file, past the usual length: one parser of DTR's instructions and
 * the name-to-tensor map they update.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace/json.h"
#include "trace/symtab.h"
#include "trace/trace.h"
#include "trace/trace_parse.h"

struct dtr_handle {
	uint32_t tensor;	/* current version */
	uint32_t refs;		/* names still holding it */
};

enum dtr_state {
	DTR_NORMAL,
	DTR_CONST_MEMORY,	/* a CONSTANT waits for its MEMORY line */
	DTR_CALL_MEMORY,	/* result j of a CALL waits for MEMORY */
	DTR_CALL_ALIAS,		/* and then for ALIAS */
};

struct dtr_parser {
	struct tp_trace *t;
	struct tp_symtab names;		/* name -> handle */
	struct dtr_handle *handles;
	size_t n_handles, cap_handles;
	struct tp_json_obj obj;
	struct tp_trace_error *err;
	const char *file;
	unsigned long line;

	/* The pending CONSTANT or CALL. */
	enum dtr_state state;
	unsigned long pending_line;
	char *pname;			/* names of the pending record */
	size_t pname_len, pname_cap;
	size_t res_off[TP_TRACE_MAX_OUTS], res_len[TP_TRACE_MAX_OUTS];
	size_t op_off, op_len;
	uint32_t args[TP_TRACE_MAX_ARGS];
	struct tp_trace_out_spec outs[TP_TRACE_MAX_OUTS];
	unsigned n_args, n_res, cur;
	uint64_t time_ns;
};

static int fail(struct dtr_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct dtr_parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tp_trace_verror(p->err, p->file, p->line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define SHOW(str) (int)((str).len > 40 ? 40 : (str).len), (str).s

/* A string field that must be present. */
static int get_str(struct dtr_parser *p, const char *instr, const char *key,
		   struct tp_json_str *v)
{
	const struct tp_json_field *f = tp_json_get(&p->obj, key);

	if (!f)
		return fail(p, "%s: missing field %s", instr, key);
	if (f->is_array)
		return fail(p, "%s: field %s must be a string", instr, key);
	*v = f->str;
	return 0;
}

/* An array field of strings (names). */
static int get_names(struct dtr_parser *p, const char *instr, const char *key,
		     const struct tp_json_item **items, size_t *n)
{
	const struct tp_json_field *f = tp_json_get(&p->obj, key);

	if (!f)
		return fail(p, "%s: missing field %s", instr, key);
	if (!f->is_array)
		return fail(p, "%s: field %s must be an array", instr, key);
	*items = f->n ? p->obj.items + f->first : NULL;
	*n = f->n;
	for (size_t i = 0; i < f->n; i++)
		if ((*items)[i].is_num)
			return fail(p, "%s: %s must hold names, not numbers",
				    instr, key);
	return 0;
}

/* A non-negative decimal integer held in a string (or a JSON number). */
static int to_u64(struct dtr_parser *p, const char *instr, const char *key,
		  struct tp_json_str s, uint64_t *v)
{
	uint64_t x = 0;

	if (!s.len)
		return fail(p, "%s: bad number in %s: empty", instr, key);
	for (size_t i = 0; i < s.len; i++) {
		unsigned d = (unsigned char)s.s[i] - '0';

		if (d > 9)
			return fail(p, "%s: bad number in %s: '%.*s'", instr,
				    key, SHOW(s));
		if (x > (UINT64_MAX - d) / 10)
			return fail(p, "%s: number in %s out of range: '%.*s'",
				    instr, key, SHOW(s));
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static int get_u64(struct dtr_parser *p, const char *instr, const char *key,
		   uint64_t *v)
{
	struct tp_json_str s;
	int rc = get_str(p, instr, key, &s);

	return rc ? rc : to_u64(p, instr, key, s, v);
}

/* The handle a name refers to, which must still be referenced. */
static int lookup(struct dtr_parser *p, const char *instr,
		  struct tp_json_str name, uint32_t *h)
{
	*h = tp_symtab_get(&p->names, name.s, name.len);
	if (*h == UINT32_MAX)
		return fail(p, "%s: %.*s is not defined", instr, SHOW(name));
	if (!p->handles[*h].refs)
		return fail(p, "%s: %.*s is used after its last release",
			    instr, SHOW(name));
	return 0;
}

static int check_new(struct dtr_parser *p, const char *instr,
		     struct tp_json_str name)
{
	if (!name.len)
		return fail(p, "%s: empty name", instr);
	if (tp_symtab_get(&p->names, name.s, name.len) != UINT32_MAX)
		return fail(p, "%s: %.*s is already defined", instr,
			    SHOW(name));
	return 0;
}

static int new_handle(struct dtr_parser *p, const char *name, size_t len,
		      uint32_t tensor)
{
	if (p->n_handles == p->cap_handles) {
		size_t cap = p->cap_handles ? p->cap_handles * 2 : 1024;
		struct dtr_handle *q = realloc(p->handles, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		p->handles = q;
		p->cap_handles = cap;
	}
	if (p->n_handles >= UINT32_MAX - 1)
		return fail(p, "too many names");
	if (tp_symtab_put(&p->names, name, len, (uint32_t)p->n_handles))
		return -ENOMEM;
	p->handles[p->n_handles].tensor = tensor;
	p->handles[p->n_handles].refs = 1;
	p->n_handles++;
	return 0;
}

/* Keep a copy of a name of the pending record (the line may be reused). */
static int keep_name(struct dtr_parser *p, struct tp_json_str s, size_t *off)
{
	if (p->pname_len + s.len > p->pname_cap) {
		size_t cap = p->pname_cap ? p->pname_cap : 256;
		char *q;

		while (cap < p->pname_len + s.len)
			cap *= 2;
		q = realloc(p->pname, cap);
		if (!q)
			return -ENOMEM;
		p->pname = q;
		p->pname_cap = cap;
	}
	memcpy(p->pname + p->pname_len, s.s, s.len);
	*off = p->pname_len;
	p->pname_len += s.len;
	return 0;
}

static int builder_error(struct dtr_parser *p, const char *instr, int rc)
{
	if (rc == -ENOMEM)
		return rc;
	if (rc == -E2BIG)
		return fail(p, "%s: trace too large", instr);
	if (rc == -EINVAL)
		return fail(p, "%s: op name is not one token of 1 to %d bytes",
			    instr, TP_TRACE_MAX_NAME);
	return fail(p, "%s: inconsistent record (%s)", instr, strerror(-rc));
}

static int do_constant(struct dtr_parser *p)
{
	struct tp_json_str name;
	size_t off;
	int rc;

	if ((rc = get_str(p, "CONSTANT", "NAME", &name)) ||
	    (rc = check_new(p, "CONSTANT", name)))
		return rc;
	p->pname_len = 0;
	rc = keep_name(p, name, &off);
	if (rc)
		return rc;
	p->res_off[0] = off;
	p->res_len[0] = name.len;
	p->state = DTR_CONST_MEMORY;
	p->pending_line = p->line;
	return 0;
}

static bool pending_is(const struct dtr_parser *p, unsigned j,
		       struct tp_json_str name)
{
	return p->res_len[j] == name.len &&
	       !memcmp(p->pname + p->res_off[j], name.s, name.len);
}

static int do_const_memory(struct dtr_parser *p, struct tp_json_str instr)
{
	struct tp_json_str name;
	uint64_t size;
	uint32_t id;
	int rc;

	if (instr.len != 6 || memcmp(instr.s, "MEMORY", 6))
		return fail(p, "CONSTANT %.*s on line %lu is not followed by its MEMORY line",
			    (int)p->res_len[0], p->pname + p->res_off[0],
			    p->pending_line);
	if ((rc = get_str(p, "MEMORY", "NAME", &name)) ||
	    (rc = get_u64(p, "MEMORY", "MEMORY", &size)))
		return rc;
	if (!pending_is(p, 0, name))
		return fail(p, "MEMORY: names %.*s, but the CONSTANT on line %lu is %.*s",
			    SHOW(name), p->pending_line, (int)p->res_len[0],
			    p->pname + p->res_off[0]);
	/* From outside the traced ops: not computable, role unknown. */
	rc = tp_trace_add_tensor(p->t, size, 0, TP_TRACE_NONE, &id);
	if (rc)
		return builder_error(p, "CONSTANT", rc);
	p->state = DTR_NORMAL;
	return new_handle(p, name.s, name.len, id);
}

static int do_call(struct dtr_parser *p)
{
	const struct tp_json_item *args, *res;
	struct tp_json_str op;
	size_t n_args, n_res;
	int rc;

	if ((rc = get_str(p, "CALL", "NAME", &op)) ||
	    (rc = get_names(p, "CALL", "ARGS", &args, &n_args)) ||
	    (rc = get_names(p, "CALL", "RESULT", &res, &n_res)) ||
	    (rc = get_u64(p, "CALL", "TIME", &p->time_ns)))
		return rc;
	if (n_args > TP_TRACE_MAX_ARGS)
		return fail(p, "CALL: more than %d arguments", TP_TRACE_MAX_ARGS);
	if (n_res > TP_TRACE_MAX_OUTS)
		return fail(p, "CALL: more than %d results", TP_TRACE_MAX_OUTS);
	if (!tp_trace_name_ok(op.s, op.len))
		return fail(p, "CALL: op name '%.*s' is not one token of 1 to %d bytes",
			    SHOW(op), TP_TRACE_MAX_NAME);
	for (size_t i = 0; i < n_args; i++) {
		uint32_t h;

		rc = lookup(p, "CALL", args[i].str, &h);
		if (rc)
			return rc;
		p->args[i] = p->handles[h].tensor;
	}
	p->pname_len = 0;
	for (size_t j = 0; j < n_res; j++) {
		rc = check_new(p, "CALL", res[j].str);
		if (rc)
			return rc;
		for (size_t k = 0; k < j; k++)
			if (res[k].str.len == res[j].str.len &&
			    !memcmp(res[k].str.s, res[j].str.s, res[j].str.len))
				return fail(p, "CALL: result %.*s given twice",
					    SHOW(res[j].str));
		rc = keep_name(p, res[j].str, &p->res_off[j]);
		if (rc)
			return rc;
		p->res_len[j] = res[j].str.len;
	}
	rc = keep_name(p, op, &p->op_off);
	if (rc)
		return rc;
	p->op_len = op.len;
	p->n_args = (unsigned)n_args;
	p->n_res = (unsigned)n_res;
	p->cur = 0;
	p->pending_line = p->line;
	p->state = DTR_CALL_MEMORY;
	return n_res ? 0 : -EAGAIN;	/* -EAGAIN: complete now */
}

/* All results described: the op goes into the trace. */
static int finish_call(struct dtr_parser *p)
{
	uint32_t first;
	int rc;

	rc = tp_trace_add_op(p->t, p->pname + p->op_off, p->op_len,
			     p->time_ns, p->args, p->n_args, p->outs,
			     p->n_res, &first);
	if (rc)
		return builder_error(p, "CALL", rc);
	p->state = DTR_NORMAL;
	for (unsigned j = 0; j < p->n_res; j++) {
		rc = new_handle(p, p->pname + p->res_off[j], p->res_len[j],
				first + j);
		if (rc)
			return rc;
	}
	return 0;
}

static int do_call_memory(struct dtr_parser *p, struct tp_json_str instr)
{
	struct tp_json_str name;
	int rc;

	if (instr.len != 6 || memcmp(instr.s, "MEMORY", 6))
		return fail(p, "CALL on line %lu: expected the MEMORY line of result %.*s",
			    p->pending_line, (int)p->res_len[p->cur],
			    p->pname + p->res_off[p->cur]);
	if ((rc = get_str(p, "MEMORY", "NAME", &name)) ||
	    (rc = get_u64(p, "MEMORY", "MEMORY", &p->outs[p->cur].size)))
		return rc;
	if (!pending_is(p, p->cur, name))
		return fail(p, "MEMORY: names %.*s, but result %u of the CALL on line %lu is %.*s",
			    SHOW(name), p->cur, p->pending_line,
			    (int)p->res_len[p->cur],
			    p->pname + p->res_off[p->cur]);
	p->state = DTR_CALL_ALIAS;
	return 0;
}

static int do_call_alias(struct dtr_parser *p, struct tp_json_str instr)
{
	struct tp_trace_out_spec *o = &p->outs[p->cur];
	struct tp_json_str name, a;
	uint64_t k;
	int rc;

	if (instr.len != 5 || memcmp(instr.s, "ALIAS", 5))
		return fail(p, "CALL on line %lu: expected the ALIAS line of result %.*s",
			    p->pending_line, (int)p->res_len[p->cur],
			    p->pname + p->res_off[p->cur]);
	if ((rc = get_str(p, "ALIAS", "NAME", &name)) ||
	    (rc = get_str(p, "ALIAS", "ALIAS", &a)))
		return rc;
	if (!pending_is(p, p->cur, name))
		return fail(p, "ALIAS: names %.*s, but result %u of the CALL on line %lu is %.*s",
			    SHOW(name), p->cur, p->pending_line,
			    (int)p->res_len[p->cur],
			    p->pname + p->res_off[p->cur]);
	o->flags = TP_TRACE_COMPUTABLE;
	o->alias = 0;
	if (a.len == 2 && a.s[0] == '-' && a.s[1] == '1') {
		o->kind = TP_TRACE_OUT_FRESH;
	} else {
		rc = to_u64(p, "ALIAS", "ALIAS", a, &k);
		if (rc)
			return rc;
		if (k >= p->n_args)
			return fail(p, "ALIAS: argument %llu out of range (the CALL has %u)",
				    (unsigned long long)k, p->n_args);
		o->kind = TP_TRACE_OUT_VIEW;
		o->alias = (uint8_t)k;
	}
	if (++p->cur < p->n_res) {
		p->state = DTR_CALL_MEMORY;
		return 0;
	}
	return finish_call(p);
}

/* An in-place write of the handles at @idx of @h (deduplicated). */
static int write_in_place(struct dtr_parser *p, const char *instr,
			  struct tp_json_str op, uint64_t cost,
			  const uint32_t *h, unsigned n_args,
			  const unsigned *idx, unsigned n_idx)
{
	struct tp_trace_out_spec outs[TP_TRACE_MAX_OUTS] = { { 0 } };
	uint32_t args[TP_TRACE_MAX_ARGS], wh[TP_TRACE_MAX_OUTS], first;
	unsigned n = 0;
	int rc;

	for (unsigned i = 0; i < n_args; i++)
		args[i] = p->handles[h[i]].tensor;
	for (unsigned i = 0; i < n_idx; i++) {
		const struct tp_trace_tensor *x;
		unsigned k;

		for (k = 0; k < n; k++)
			if (wh[k] == h[idx[i]])
				break;
		if (k < n)
			continue;	/* the same tensor named twice */
		x = &p->t->tensors[args[idx[i]]];
		wh[n] = h[idx[i]];
		outs[n].size = x->size;
		/* Regenerable only if what it overwrote was. */
		outs[n].flags = x->flags;
		outs[n].kind = TP_TRACE_OUT_INPLACE;
		outs[n].alias = (uint8_t)idx[i];
		n++;
	}
	rc = tp_trace_add_op(p->t, op.s, op.len, cost, args, n_args, outs, n,
			     &first);
	if (rc)
		return builder_error(p, instr, rc);
	for (unsigned k = 0; k < n; k++)
		p->handles[wh[k]].tensor = first + k;
	return 0;
}

static int do_mutate(struct dtr_parser *p)
{
	const struct tp_json_field *f;
	const struct tp_json_item *args;
	uint32_t h[TP_TRACE_MAX_ARGS];
	unsigned idx[TP_TRACE_MAX_OUTS];
	struct tp_json_str op;
	size_t n_args;
	uint64_t cost;
	int rc;

	if ((rc = get_str(p, "MUTATE", "NAME", &op)) ||
	    (rc = get_names(p, "MUTATE", "ARGS", &args, &n_args)) ||
	    (rc = get_u64(p, "MUTATE", "TIME", &cost)))
		return rc;
	f = tp_json_get(&p->obj, "MUTATE");
	if (!f)
		return fail(p, "MUTATE: missing field MUTATE");
	if (!f->is_array)
		return fail(p, "MUTATE: field MUTATE must be an array");
	if (n_args > TP_TRACE_MAX_ARGS)
		return fail(p, "MUTATE: more than %d arguments",
			    TP_TRACE_MAX_ARGS);
	if (f->n > TP_TRACE_MAX_OUTS)
		return fail(p, "MUTATE: more than %d indices",
			    TP_TRACE_MAX_OUTS);
	if (!tp_trace_name_ok(op.s, op.len))
		return fail(p, "MUTATE: op name '%.*s' is not one token of 1 to %d bytes",
			    SHOW(op), TP_TRACE_MAX_NAME);
	for (size_t i = 0; i < f->n; i++) {
		uint64_t k;

		rc = to_u64(p, "MUTATE", "MUTATE",
			    p->obj.items[f->first + i].str, &k);
		if (rc)
			return rc;
		if (k >= n_args)
			return fail(p, "MUTATE: index %llu out of range (%zu arguments)",
				    (unsigned long long)k, n_args);
		idx[i] = (unsigned)k;
	}
	for (size_t i = 0; i < n_args; i++) {
		rc = lookup(p, "MUTATE", args[i].str, &h[i]);
		if (rc)
			return rc;
	}
	return write_in_place(p, "MUTATE", op, cost, h, (unsigned)n_args, idx,
			      (unsigned)f->n);
}

static int do_copy(struct dtr_parser *p, bool from)
{
	const char *instr = from ? "COPY_FROM" : "COPY";
	struct tp_json_str dst, src;
	uint32_t hs, hd;
	int rc;

	if ((rc = get_str(p, instr, "DST", &dst)) ||
	    (rc = get_str(p, instr, "SRC", &src)) ||
	    (rc = lookup(p, instr, src, &hs)))
		return rc;
	if (!from) {
		/* A new name for the same tensor. */
		rc = check_new(p, instr, dst);
		if (rc)
			return rc;
		if (p->handles[hs].refs == UINT32_MAX)
			return fail(p, "COPY: too many references to %.*s",
				    SHOW(src));
		if (tp_symtab_put(&p->names, dst.s, dst.len, hs))
			return -ENOMEM;
		p->handles[hs].refs++;
		return 0;
	}
	rc = lookup(p, instr, dst, &hd);
	if (rc)
		return rc;
	{
		static const struct tp_json_str op = { "copy_", 5 };
		uint32_t h[2] = { hd, hs };
		unsigned idx = 0;

		/* DTR logs give no TIME for it: a copy costs nothing here. */
		return write_in_place(p, instr, op, 0, h, 2, &idx, 1);
	}
}

static int do_release(struct dtr_parser *p)
{
	struct tp_json_str name;
	uint32_t h;
	int rc;

	rc = get_str(p, "RELEASE", "NAME", &name);
	if (rc)
		return rc;
	h = tp_symtab_get(&p->names, name.s, name.len);
	/*
	 * Never defined, or released already: ignored, as DTR does (its
	 * longer logs release some names twice), and counted.
	 */
	if (h == UINT32_MAX || !p->handles[h].refs) {
		p->t->releases_ignored++;
		return 0;
	}
	if (--p->handles[h].refs)
		return 0;
	rc = tp_trace_add_free(p->t, p->handles[h].tensor);
	return rc ? builder_error(p, "RELEASE", rc) : 0;
}

static int do_annotate(struct dtr_parser *p)
{
	struct tp_json_str a;
	int rc = get_str(p, "ANNOTATE", "ANNOTATION", &a);

	if (rc)
		return rc;
	if (a.len == 5 && !memcmp(a.s, "START", 5)) {
		/*
		 * Like DTR's simulator, everything from the first START to
		 * the end of the log is measured; a later START only begins
		 * another iteration.
		 */
		rc = tp_trace_add_mark(p->t, TP_TRACE_EV_ITER);
		if (!rc && !p->t->measured)
			rc = tp_trace_add_mark(p->t, TP_TRACE_EV_MEASURE_BEGIN);
		return rc;
	}
	if (a.len == 8 && !memcmp(a.s, "BACKWARD", 8))
		return tp_trace_add_mark(p->t, TP_TRACE_EV_BACKWARD);
	return fail(p, "ANNOTATE: unknown annotation '%.*s'", SHOW(a));
}

#define IS(x, lit) ((x).len == sizeof(lit) - 1 && !memcmp((x).s, lit, (x).len))

static int do_line(struct dtr_parser *p, const char *s, size_t len)
{
	struct tp_json_str instr;
	const char *why = NULL;
	int rc;

	rc = tp_json_parse(&p->obj, s, len, &why);
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return fail(p, "bad JSON: %s", why);
	p->t->records++;
	rc = get_str(p, "record", "INSTRUCTION", &instr);
	if (rc)
		return rc;
	switch (p->state) {
	case DTR_CONST_MEMORY:
		return do_const_memory(p, instr);
	case DTR_CALL_MEMORY:
		return do_call_memory(p, instr);
	case DTR_CALL_ALIAS:
		return do_call_alias(p, instr);
	case DTR_NORMAL:
		break;
	}
	if (IS(instr, "CALL")) {
		rc = do_call(p);
		return rc == -EAGAIN ? finish_call(p) : rc;
	}
	if (IS(instr, "RELEASE"))
		return do_release(p);
	if (IS(instr, "COPY"))
		return do_copy(p, false);
	if (IS(instr, "CONSTANT"))
		return do_constant(p);
	if (IS(instr, "MUTATE"))
		return do_mutate(p);
	if (IS(instr, "COPY_FROM"))
		return do_copy(p, true);
	if (IS(instr, "ANNOTATE"))
		return do_annotate(p);
	if (IS(instr, "MEMORY") || IS(instr, "ALIAS"))
		return fail(p, "%.*s line without a CONSTANT or CALL before it",
			    SHOW(instr));
	return fail(p, "unknown instruction '%.*s'", SHOW(instr));
}

int tp_trace_parse_dtr(const char *buf, size_t len, const char *file,
		       struct tp_trace **out, struct tp_trace_error *err)
{
	struct dtr_parser p = { .err = err, .file = file };
	size_t pos = 0;
	int rc;

	p.t = tp_trace_new();
	if (!p.t)
		return -ENOMEM;
	p.t->byte_accounted = true;
	rc = tp_symtab_init(&p.names);
	if (rc)
		goto out;
	while (pos < len) {
		const char *s = buf + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;
		size_t k;

		pos += n + (nl ? 1 : 0);
		p.line++;
		for (k = 0; k < n && (s[k] == ' ' || s[k] == '\t' ||
				      s[k] == '\r'); k++)
			;
		if (k == n)
			continue;	/* blank line */
		rc = do_line(&p, s, n);
		if (rc)
			goto out;
	}
	if (p.state == DTR_CONST_MEMORY) {
		rc = fail(&p, "truncated log: CONSTANT %.*s on line %lu has no MEMORY line",
			  (int)p.res_len[0], p.pname + p.res_off[0],
			  p.pending_line);
	} else if (p.state != DTR_NORMAL) {
		rc = fail(&p, "truncated log: the CALL on line %lu lacks the %s line of result %.*s",
			  p.pending_line,
			  p.state == DTR_CALL_MEMORY ? "MEMORY" : "ALIAS",
			  (int)p.res_len[p.cur], p.pname + p.res_off[p.cur]);
	} else if (!p.t->records) {
		p.line = 0;
		rc = fail(&p, "empty log");
	}
out:
	if (rc == -ENOMEM)
		tp_trace_set_error(err, file, p.line, "out of memory");
	tp_json_fini(&p.obj);
	tp_symtab_fini(&p.names);
	free(p.handles);
	free(p.pname);
	if (rc) {
		tp_trace_free(p.t);
		return rc;
	}
	*out = p.t;
	return 0;
}
