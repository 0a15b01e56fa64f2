// SPDX-License-Identifier: MIT
/*
 * The tpager-trace(5) parser. Strict: anything it does not understand is
 * an error naming the line and the reason, never a guess; it never reads
 * past @len, so it can take any bytes (fuzzed by tests/fuzz/trace-fuzz).
 *
 * One file, past the usual length: one strict parser whose line-by-line
 * state is one struct.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "trace/symtab.h"
#include "trace/trace.h"
#include "trace/trace_parse.h"

/* op NAME COST split= IN... => OUT... */
#define MAX_TOKENS (5 + TP_TRACE_MAX_ARGS + TP_TRACE_MAX_OUTS)

struct tok {
	const char *s;
	size_t len;
};

struct text_parser {
	struct tp_trace *t;
	struct tp_symtab ids;		/* file id (8 raw bytes) -> tensor */
	struct tp_trace_error *err;
	const char *file;
	unsigned long line;
	unsigned version;		/* the header's */
	unsigned long end_line;		/* of the end record; 0: none yet */
	struct tok tok[MAX_TOKENS + 1];
	unsigned n_tok;
};

static int fail(struct text_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct text_parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tp_trace_verror(p->err, p->file, p->line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool tok_is(const struct tok *k, const char *s)
{
	return k->len == strlen(s) && !memcmp(k->s, s, k->len);
}

/* Split a line into tokens; '#' starts a comment. */
static int tokenize(struct text_parser *p, const char *s, size_t len)
{
	size_t i = 0;

	p->n_tok = 0;
	while (i < len) {
		size_t b;

		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r') {
			i++;
			continue;
		}
		if (s[i] == '#')
			break;
		b = i;
		while (i < len && s[i] != ' ' && s[i] != '\t' &&
		       s[i] != '\r' && s[i] != '#') {
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return fail(p, "control character 0x%02x",
					    (unsigned char)s[i]);
			i++;
		}
		if (p->n_tok == MAX_TOKENS)
			return fail(p, "too many fields (more than %d)",
				    MAX_TOKENS);
		p->tok[p->n_tok].s = s + b;
		p->tok[p->n_tok].len = i - b;
		p->n_tok++;
	}
	return 0;
}

/* A decimal number; @what names it in the error. */
static int parse_u64(struct text_parser *p, const char *s, size_t len,
		     const char *what, uint64_t *v)
{
	uint64_t x = 0;

	if (!len)
		return fail(p, "missing %s", what);
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned char)s[i] - '0';

		if (d > 9)
			return fail(p, "bad %s '%.*s': not a decimal number",
				    what, (int)(len > 40 ? 40 : len), s);
		if (x > (UINT64_MAX - d) / 10)
			return fail(p, "%s '%.*s' out of range", what,
				    (int)(len > 40 ? 40 : len), s);
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static int parse_flags(struct text_parser *p, const char *s, size_t len,
		       unsigned *flags)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {
		{ "input", TP_TRACE_INPUT },
		{ "param", TP_TRACE_PARAM },
		{ "grad", TP_TRACE_GRAD },
		{ "optstate", TP_TRACE_OPTSTATE },
		{ "activation", TP_TRACE_ACTIVATION },
		{ "computable", TP_TRACE_COMPUTABLE },
	};
	size_t i = 0;

	*flags = 0;
	if (len == 1 && s[0] == '-')
		return 0;
	while (i <= len) {
		size_t b = i, n;
		unsigned k;

		while (i < len && s[i] != ',')
			i++;
		n = i - b;
		for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
			if (strlen(names[k].name) == n &&
			    !memcmp(names[k].name, s + b, n))
				break;
		if (k == sizeof(names) / sizeof(names[0]))
			return fail(p, "unknown flag '%.*s'",
				    (int)(n > 40 ? 40 : n), s + b);
		if (*flags & names[k].bit)
			return fail(p, "flag '%s' given twice", names[k].name);
		*flags |= names[k].bit;
		i++;
	}
	return 0;
}

/* A reference to a defined tensor that must still be live. */
static int parse_ref(struct text_parser *p, const char *s, size_t len,
		     uint32_t *id)
{
	uint64_t v;
	uint32_t x;
	int rc = parse_u64(p, s, len, "tensor id", &v);

	if (rc)
		return rc;
	x = tp_symtab_get(&p->ids, (const char *)&v, sizeof(v));
	if (x == UINT32_MAX)
		return fail(p, "tensor %llu is not defined",
			    (unsigned long long)v);
	switch (p->t->tensors[x].state) {
	case TP_TRACE_FREED:
		return fail(p, "tensor %llu was freed", (unsigned long long)v);
	case TP_TRACE_OVERWRITTEN:
		return fail(p, "tensor %llu was overwritten in place",
			    (unsigned long long)v);
	}
	*id = x;
	return 0;
}

/* A new tensor id; *@v is its file number, to bind once it exists. */
static int parse_new_id(struct text_parser *p, const char *s, size_t len,
			uint64_t *v)
{
	int rc = parse_u64(p, s, len, "tensor id", v);

	if (rc)
		return rc;
	if (tp_symtab_get(&p->ids, (const char *)v, sizeof(*v)) != UINT32_MAX)
		return fail(p, "tensor %llu is already defined",
			    (unsigned long long)*v);
	return 0;
}

static int bind_id(struct text_parser *p, uint64_t v, uint32_t id)
{
	if (tp_symtab_put(&p->ids, (const char *)&v, sizeof(v), id))
		return -ENOMEM;
	return 0;
}

static int builder_error(struct text_parser *p, int rc)
{
	if (rc == -ENOMEM)
		return rc;
	if (rc == -E2BIG)
		return fail(p, "trace too large");
	return fail(p, "inconsistent record (%s)", strerror(-rc));
}

/* tensor ID SIZE FLAGS [view=ID] */
static int rec_tensor(struct text_parser *p)
{
	uint32_t view_of = TP_TRACE_NONE, id;
	uint64_t v, size;
	unsigned flags;
	int rc;

	if (p->n_tok < 4 || p->n_tok > 5)
		return fail(p, "tensor: expected 'tensor ID SIZE FLAGS [view=ID]'");
	if ((rc = parse_new_id(p, p->tok[1].s, p->tok[1].len, &v)) ||
	    (rc = parse_u64(p, p->tok[2].s, p->tok[2].len, "size", &size)) ||
	    (rc = parse_flags(p, p->tok[3].s, p->tok[3].len, &flags)))
		return rc;
	if (p->n_tok == 5) {
		const struct tok *k = &p->tok[4];

		if (k->len < 5 || memcmp(k->s, "view=", 5))
			return fail(p, "tensor: expected view=ID, not '%.*s'",
				    (int)(k->len > 40 ? 40 : k->len), k->s);
		rc = parse_ref(p, k->s + 5, k->len - 5, &view_of);
		if (rc)
			return rc;
	}
	rc = tp_trace_add_tensor(p->t, size, flags, view_of, &id);
	if (rc)
		return builder_error(p, rc);
	return bind_id(p, v, id);
}

/* One output: ID:SIZE:FLAGS[:view=K|:inplace=K] */
static int parse_out(struct text_parser *p, const struct tok *k,
		     unsigned n_args, uint64_t *v,
		     struct tp_trace_out_spec *o)
{
	const char *f[4];
	size_t fl[4], n = 0, b = 0;
	uint64_t alias;
	unsigned flags;
	int rc;

	for (size_t i = 0; i <= k->len; i++) {
		if (i < k->len && k->s[i] != ':')
			continue;
		if (n == 4)
			return fail(p, "output: too many ':' fields");
		f[n] = k->s + b;
		fl[n++] = i - b;
		b = i + 1;
	}
	if (n < 3)
		return fail(p, "output: expected ID:SIZE:FLAGS[:view=K|:inplace=K]");
	if ((rc = parse_new_id(p, f[0], fl[0], v)) ||
	    (rc = parse_u64(p, f[1], fl[1], "size", &o->size)) ||
	    (rc = parse_flags(p, f[2], fl[2], &flags)))
		return rc;
	o->flags = (uint16_t)flags;
	o->kind = TP_TRACE_OUT_FRESH;
	o->alias = 0;
	if (n == 3)
		return 0;
	if (fl[3] > 5 && !memcmp(f[3], "view=", 5)) {
		o->kind = TP_TRACE_OUT_VIEW;
		rc = parse_u64(p, f[3] + 5, fl[3] - 5, "view index", &alias);
	} else if (fl[3] > 8 && !memcmp(f[3], "inplace=", 8)) {
		o->kind = TP_TRACE_OUT_INPLACE;
		rc = parse_u64(p, f[3] + 8, fl[3] - 8, "in-place index",
			       &alias);
	} else {
		return fail(p, "output: expected view=K or inplace=K, not '%.*s'",
			    (int)(fl[3] > 40 ? 40 : fl[3]), f[3]);
	}
	if (rc)
		return rc;
	if (alias >= n_args)
		return fail(p, "output: input index %llu out of range (op has %u inputs)",
			    (unsigned long long)alias, n_args);
	o->alias = (uint8_t)alias;
	return 0;
}

/* The split marks of an op record (tp_trace_set_split(), _sums()). */
struct split_mark {
	uint64_t rows, in, out;
	uint64_t passes, granule;	/* passes 0: the parts never sum */
	bool local;
};

static bool is_split(const struct tok *k)
{
	return k->len >= 6 && !memcmp(k->s, "split=", 6);
}

/*
 * INS or OUTS of split=: '-', or indexes below @n, each once, into the
 * bits of *@mask; @what is "input" or "output".
 */
static int parse_cut_list(struct text_parser *p, const char *s, size_t len,
			  const char *what, unsigned n, uint64_t *mask)
{
	char name[32];
	size_t i = 0;

	*mask = 0;
	if (len == 1 && s[0] == '-')
		return 0;
	if (!len)
		return fail(p, "op: empty split %s list (write '-' for none)",
			    what);
	snprintf(name, sizeof(name), "split %s index", what);
	while (i <= len) {
		size_t b = i;
		uint64_t v;
		int rc;

		while (i < len && s[i] != ',')
			i++;
		rc = parse_u64(p, s + b, i - b, name, &v);
		if (rc)
			return rc;
		if (v >= n)
			return fail(p, "op: %s %llu out of range (op has %u %ss)",
				    name, (unsigned long long)v, n, what);
		if (v >= 64)
			return fail(p, "op: %s %llu: only the first 64 %ss can be cut",
				    name, (unsigned long long)v, what);
		if (*mask >> v & 1)
			return fail(p, "op: %s %llu given twice", name,
				    (unsigned long long)v);
		*mask |= 1ull << v;
		i++;
	}
	return 0;
}

/* Whether bit @k of @mask is set; tensors past the 64th are never cut. */
static bool cut(uint64_t mask, unsigned k)
{
	return k < 64 && (mask >> k & 1);
}

/* What tp_trace_set_split() would refuse, with the reason. */
static int check_split(struct text_parser *p, const struct split_mark *m,
		       const uint32_t *args, unsigned n_args,
		       const struct tp_trace_out_spec *outs, unsigned n_outs)
{
	uint64_t rows = m->rows;

	for (unsigned j = 0; j < n_outs; j++)
		if (outs[j].kind == TP_TRACE_OUT_INPLACE)
			return fail(p, "op: an op with an in-place output cannot be split");
	for (unsigned k = 0; k < n_args; k++)
		if (cut(m->in, k) && p->t->tensors[args[k]].size % rows)
			return fail(p, "op: split input %u has %llu bytes, not a multiple of %llu rows",
				    k,
				    (unsigned long long)p->t->tensors[args[k]].size,
				    (unsigned long long)rows);
	for (unsigned j = 0; j < n_outs; j++) {
		if (!cut(m->out, j))
			continue;
		if (outs[j].kind != TP_TRACE_OUT_FRESH)
			return fail(p, "op: split output %u is a view: only new outputs can be cut",
				    j);
		if (outs[j].size % rows)
			return fail(p, "op: split output %u has %llu bytes, not a multiple of %llu rows",
				    j, (unsigned long long)outs[j].size,
				    (unsigned long long)rows);
	}
	return 0;
}

/* sums=PASSES[/GRANULE] of split='s KIND field, into @m. */
static int parse_sums(struct text_parser *p, const char *s, size_t len,
		      struct split_mark *m)
{
	size_t slash = 0;
	int rc;

	while (slash < len && s[slash] != '/')
		slash++;
	rc = parse_u64(p, s, slash, "split passes", &m->passes);
	if (!rc && slash < len)
		rc = parse_u64(p, s + slash + 1, len - slash - 1,
			       "split granule", &m->granule);
	if (rc)
		return rc;
	if (!m->passes || m->passes > UINT32_MAX)
		return fail(p, "op: split passes must be 1 to %u, not %llu",
			    UINT32_MAX, (unsigned long long)m->passes);
	if (m->granule >= m->rows)
		return fail(p, "op: split granule %llu is not below its %llu rows",
			    (unsigned long long)m->granule,
			    (unsigned long long)m->rows);
	return 0;
}

/* split='s KIND field (version 4): local and sums=..., each at most once. */
static int parse_kind(struct text_parser *p, const char *s, size_t len,
		      struct split_mark *m)
{
	size_t i = 0;

	if (p->version < TP_TRACE_TEXT_V4)
		return fail(p, "op: split='s KIND field needs 'tpager-trace %d' (the header says %u)",
			    TP_TRACE_TEXT_V4, p->version);
	while (i <= len) {
		size_t b = i;
		int rc = 0;

		while (i < len && s[i] != ',')
			i++;
		if (i - b == 5 && !memcmp(s + b, "local", 5) && !m->local)
			m->local = true;
		else if (i - b > 5 && !memcmp(s + b, "sums=", 5) &&
			 !m->passes)
			rc = parse_sums(p, s + b + 5, i - b - 5, m);
		else
			return fail(p, "op: split kind '%.*s': expected local or sums=PASSES[/GRANULE], each once",
				    (int)(i - b > 40 ? 40 : i - b), s + b);
		if (rc)
			return rc;
		i++;
	}
	return 0;
}

/*
 * split=ROWS:INS:OUTS[:KIND] of an op whose operands are parsed; sets the
 * marks.
 */
static int parse_split(struct text_parser *p, const struct tok *k,
		       const uint32_t *args, unsigned n_args,
		       const struct tp_trace_out_spec *outs, unsigned n_outs,
		       struct split_mark *m)
{
	const char *f[4];
	size_t fl[4], n = 0, b = 6;
	int rc;

	*m = (struct split_mark){ 0 };
	for (size_t i = 6; i <= k->len; i++) {
		if (i < k->len && k->s[i] != ':')
			continue;
		if (n == 4)
			return fail(p, "op: expected split=ROWS:INS:OUTS[:KIND], not '%.*s'",
				    (int)(k->len > 40 ? 40 : k->len), k->s);
		f[n] = k->s + b;
		fl[n++] = i - b;
		b = i + 1;
	}
	if (n < 3)
		return fail(p, "op: expected split=ROWS:INS:OUTS[:KIND], not '%.*s'",
			    (int)(k->len > 40 ? 40 : k->len), k->s);
	if ((rc = parse_u64(p, f[0], fl[0], "split rows", &m->rows)))
		return rc;
	if (m->rows < 2)
		return fail(p, "op: split rows must be at least 2, not %llu",
			    (unsigned long long)m->rows);
	if ((rc = parse_cut_list(p, f[1], fl[1], "input", n_args, &m->in)) ||
	    (rc = parse_cut_list(p, f[2], fl[2], "output", n_outs, &m->out)))
		return rc;
	if (!(m->in | m->out))
		return fail(p, "op: split cuts no tensor (INS and OUTS are both '-')");
	if (n == 4 && (rc = parse_kind(p, f[3], fl[3], m)))
		return rc;
	return check_split(p, m, args, n_args, outs, n_outs);
}

/* op NAME COST [split=ROWS:INS:OUTS] IN... => OUT... */
static int rec_op(struct text_parser *p)
{
	uint32_t args[TP_TRACE_MAX_ARGS];
	struct tp_trace_out_spec outs[TP_TRACE_MAX_OUTS];
	uint64_t ids[TP_TRACE_MAX_OUTS], cost;
	struct split_mark split;
	unsigned n_args = 0, n_outs = 0, i, arrow, in0 = 3;
	const struct tok *split_tok = NULL;
	uint32_t first;
	int rc;

	if (p->n_tok < 4)
		return fail(p, "op: expected 'op NAME COST [split=ROWS:INS:OUTS] IN... => OUT...'");
	if (p->tok[1].len > TP_TRACE_MAX_NAME)
		return fail(p, "op: name longer than %d bytes", TP_TRACE_MAX_NAME);
	rc = parse_u64(p, p->tok[2].s, p->tok[2].len, "cost", &cost);
	if (rc)
		return rc;
	if (is_split(&p->tok[3])) {
		if (p->version < TP_TRACE_TEXT_V2)
			return fail(p, "op: split= needs 'tpager-trace %d' (the header says %u)",
				    TP_TRACE_TEXT_V2, p->version);
		split_tok = &p->tok[in0++];
	}
	for (arrow = in0; arrow < p->n_tok; arrow++)
		if (tok_is(&p->tok[arrow], "=>"))
			break;
	if (arrow == p->n_tok)
		return fail(p, "op: missing '=>'");
	for (i = in0; i < arrow; i++) {
		if (n_args == TP_TRACE_MAX_ARGS)
			return fail(p, "op: more than %d inputs",
				    TP_TRACE_MAX_ARGS);
		if (is_split(&p->tok[i]))
			return fail(p, "op: split= must come right after the cost");
		rc = parse_ref(p, p->tok[i].s, p->tok[i].len, &args[n_args++]);
		if (rc)
			return rc;
	}
	for (i = arrow + 1; i < p->n_tok; i++) {
		if (n_outs == TP_TRACE_MAX_OUTS)
			return fail(p, "op: more than %d outputs",
				    TP_TRACE_MAX_OUTS);
		if (is_split(&p->tok[i]))
			return fail(p, "op: split= must come right after the cost");
		rc = parse_out(p, &p->tok[i], n_args, &ids[n_outs],
			       &outs[n_outs]);
		if (rc)
			return rc;
		for (unsigned j = 0; j < n_outs; j++)
			if (ids[j] == ids[n_outs])
				return fail(p, "op: output %llu given twice",
					    (unsigned long long)ids[j]);
		if (outs[n_outs].kind == TP_TRACE_OUT_INPLACE)
			for (unsigned j = 0; j < n_outs; j++)
				if (outs[j].kind == TP_TRACE_OUT_INPLACE &&
				    args[outs[j].alias] ==
				    args[outs[n_outs].alias])
					return fail(p, "op: one input overwritten twice");
		n_outs++;
	}
	if (split_tok) {
		rc = parse_split(p, split_tok, args, n_args, outs, n_outs,
				 &split);
		if (rc)
			return rc;
	}
	rc = tp_trace_add_op(p->t, p->tok[1].s, p->tok[1].len, cost, args,
			     n_args, outs, n_outs, &first);
	if (!rc && split_tok)
		rc = tp_trace_set_split(p->t, (uint32_t)p->t->n_ops - 1,
					split.rows, split.in, split.out);
	if (!rc && split_tok && (split.local || split.passes))
		rc = tp_trace_set_split_kind(p->t, (uint32_t)p->t->n_ops - 1,
					     split.local,
					     (uint32_t)split.passes,
					     (uint32_t)split.granule);
	if (rc)
		return builder_error(p, rc);
	for (unsigned j = 0; j < n_outs; j++) {
		rc = bind_id(p, ids[j], first + j);
		if (rc)
			return rc;
	}
	return 0;
}

static int rec_free(struct text_parser *p)
{
	uint32_t id;
	int rc;

	if (p->n_tok != 2)
		return fail(p, "free: expected 'free ID'");
	rc = parse_ref(p, p->tok[1].s, p->tok[1].len, &id);
	if (rc)
		return rc;
	rc = tp_trace_add_free(p->t, id);
	return rc ? builder_error(p, rc) : 0;
}

static int rec_iter(struct text_parser *p)
{
	uint64_t n;
	int rc;

	if (p->n_tok != 2)
		return fail(p, "iter: expected 'iter N'");
	rc = parse_u64(p, p->tok[1].s, p->tok[1].len, "iteration", &n);
	if (rc)
		return rc;
	if (n != p->t->iterations)
		return fail(p, "iter: expected iteration %u, not %llu",
			    p->t->iterations, (unsigned long long)n);
	rc = tp_trace_add_mark(p->t, TP_TRACE_EV_ITER);
	return rc ? builder_error(p, rc) : 0;
}

static int rec_measure(struct text_parser *p)
{
	enum tp_trace_event_kind kind;
	int rc;

	if (p->n_tok != 2)
		return fail(p, "measure: expected 'measure begin|end'");
	if (tok_is(&p->tok[1], "begin")) {
		if (p->t->measured)
			return fail(p, "measure begin: a measured region was already opened");
		kind = TP_TRACE_EV_MEASURE_BEGIN;
	} else if (tok_is(&p->tok[1], "end")) {
		if (!p->t->measure_open)
			return fail(p, "measure end: no measured region is open");
		kind = TP_TRACE_EV_MEASURE_END;
	} else {
		return fail(p, "measure: expected 'begin' or 'end'");
	}
	rc = tp_trace_add_mark(p->t, kind);
	return rc ? builder_error(p, rc) : 0;
}

static int rec_backward(struct text_parser *p)
{
	int rc;

	if (p->n_tok != 1)
		return fail(p, "backward: takes no fields");
	rc = tp_trace_add_mark(p->t, TP_TRACE_EV_BACKWARD);
	return rc ? builder_error(p, rc) : 0;
}

/*
 * end: the last record of a version 3 trace, so that one cut after any
 * line is told from a whole one (the cut falls before it).
 */
static int rec_end(struct text_parser *p)
{
	if (p->version < TP_TRACE_TEXT_V3)
		return fail(p, "end: needs 'tpager-trace %d' (the header says %u)",
			    TP_TRACE_TEXT_V3, p->version);
	if (p->n_tok != 1)
		return fail(p, "end: takes no fields");
	p->end_line = p->line;
	return 0;
}

static int parse_header(struct text_parser *p)
{
	uint64_t v;
	int rc;

	if (p->n_tok < 1 || !tok_is(&p->tok[0], "tpager-trace"))
		return fail(p, "not a tpager-trace file: the first line must be 'tpager-trace VERSION'");
	if (p->n_tok != 2)
		return fail(p, "header: expected 'tpager-trace VERSION'");
	rc = parse_u64(p, p->tok[1].s, p->tok[1].len, "version", &v);
	if (rc)
		return rc;
	if (v < TP_TRACE_TEXT_V1 || v > TP_TRACE_TEXT_LAST)
		return fail(p, "unsupported version %llu (this reader knows %d to %d)",
			    (unsigned long long)v, TP_TRACE_TEXT_V1,
			    TP_TRACE_TEXT_LAST);
	p->version = (unsigned)v;
	return 0;
}

static int parse_line(struct text_parser *p)
{
	const struct tok *k = &p->tok[0];

	if (p->end_line)
		return fail(p, "'%.*s' after the end record (line %lu)",
			    (int)(k->len > 40 ? 40 : k->len), k->s,
			    p->end_line);
	if (tok_is(k, "end"))
		return rec_end(p);
	p->t->records++;
	if (tok_is(k, "tensor"))
		return rec_tensor(p);
	if (tok_is(k, "op"))
		return rec_op(p);
	if (tok_is(k, "free"))
		return rec_free(p);
	if (tok_is(k, "iter"))
		return rec_iter(p);
	if (tok_is(k, "backward"))
		return rec_backward(p);
	if (tok_is(k, "measure"))
		return rec_measure(p);
	return fail(p, "unknown record '%.*s'", (int)(k->len > 40 ? 40 : k->len),
		    k->s);
}

int tp_trace_parse(const char *buf, size_t len, const char *file,
		   struct tp_trace **out, struct tp_trace_error *err)
{
	struct text_parser p = { .err = err, .file = file };
	bool header = false;
	size_t pos = 0;
	int rc;

	p.t = tp_trace_new();
	if (!p.t)
		return -ENOMEM;
	rc = tp_symtab_init(&p.ids);
	if (rc)
		goto out;
	while (pos < len) {
		const char *s = buf + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		pos += n + (nl ? 1 : 0);
		p.line++;
		if (memchr(s, '\0', n)) {
			rc = fail(&p, "NUL byte in line");
			goto out;
		}
		rc = tokenize(&p, s, n);
		if (rc)
			goto out;
		if (!header) {
			rc = parse_header(&p);
			if (rc)
				goto out;
			header = true;
			continue;
		}
		if (!p.n_tok)
			continue;
		rc = parse_line(&p);
		if (rc)
			goto out;
	}
	if (!header) {
		p.line = 0;
		rc = fail(&p, "empty file: no 'tpager-trace VERSION' header");
	} else if (p.version >= TP_TRACE_TEXT_V3 && !p.end_line) {
		/* Named by its last line, where the cut fell. */
		rc = fail(&p, "truncated: the trace stops after this line, without its end record");
	}
out:
	tp_symtab_fini(&p.ids);
	if (rc == -ENOMEM)
		tp_trace_set_error(err, file, p.line, "out of memory");
	if (rc) {
		tp_trace_free(p.t);
		return rc;
	}
	*out = p.t;
	return 0;
}
