// SPDX-License-Identifier: MIT
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/json.h"

struct jp {
	struct tp_json_obj *o;
	const char *s;
	size_t len, i;
	const char *why;
};

static int bad(struct jp *p, const char *why)
{
	p->why = why;
	return -EINVAL;
}

static void skip_ws(struct jp *p)
{
	while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
				 p->s[p->i] == '\r'))
		p->i++;
}

static int hex4(struct jp *p, unsigned *v)
{
	*v = 0;
	if (p->len - p->i < 4)
		return bad(p, "truncated \\u escape");
	for (int k = 0; k < 4; k++) {
		char c = p->s[p->i++];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return bad(p, "bad hex digit in \\u escape");
		*v = *v * 16 + d;
	}
	return 0;
}

static void put_utf8(struct tp_json_obj *o, unsigned c)
{
	char *d = o->scratch + o->scratch_len;

	if (c < 0x80) {
		d[0] = (char)c;
		o->scratch_len += 1;
	} else if (c < 0x800) {
		d[0] = (char)(0xc0 | (c >> 6));
		d[1] = (char)(0x80 | (c & 0x3f));
		o->scratch_len += 2;
	} else if (c < 0x10000) {
		d[0] = (char)(0xe0 | (c >> 12));
		d[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		d[2] = (char)(0x80 | (c & 0x3f));
		o->scratch_len += 3;
	} else {
		d[0] = (char)(0xf0 | (c >> 18));
		d[1] = (char)(0x80 | ((c >> 12) & 0x3f));
		d[2] = (char)(0x80 | ((c >> 6) & 0x3f));
		d[3] = (char)(0x80 | (c & 0x3f));
		o->scratch_len += 4;
	}
}

/*
 * A string at p->i (on its opening quote). Without escapes it stays in the
 * line; with them it is decoded into scratch, which was sized to the line
 * beforehand (decoding never lengthens: "\uXXXX" is 6 bytes, at most 3 out;
 * a surrogate pair is 12 bytes, 4 out), so pointers into it stay valid.
 */
static int parse_string(struct jp *p, struct tp_json_str *out)
{
	struct tp_json_obj *o = p->o;
	size_t b = ++p->i;
	bool esc = false;

	for (;;) {
		unsigned char c;

		if (p->i >= p->len)
			return bad(p, "unterminated string");
		c = (unsigned char)p->s[p->i];
		if (c == '"')
			break;
		if (c < 0x20)
			return bad(p, "control character in string");
		if (c == '\\') {
			esc = true;
			p->i++;
			if (p->i >= p->len)
				return bad(p, "unterminated string");
		}
		p->i++;
	}
	if (!esc) {
		out->s = p->s + b;
		out->len = p->i - b;
		p->i++;
		return 0;
	}

	out->s = o->scratch + o->scratch_len;
	p->i = b;
	while (p->s[p->i] != '"') {
		char c = p->s[p->i++];
		unsigned u, lo;

		if (c != '\\') {
			o->scratch[o->scratch_len++] = c;
			continue;
		}
		switch (c = p->s[p->i++]) {
		case '"': case '\\': case '/':
			o->scratch[o->scratch_len++] = c;
			break;
		case 'b': o->scratch[o->scratch_len++] = '\b'; break;
		case 'f': o->scratch[o->scratch_len++] = '\f'; break;
		case 'n': o->scratch[o->scratch_len++] = '\n'; break;
		case 'r': o->scratch[o->scratch_len++] = '\r'; break;
		case 't': o->scratch[o->scratch_len++] = '\t'; break;
		case 'u':
			if (hex4(p, &u))
				return -EINVAL;
			if (u >= 0xdc00 && u < 0xe000)
				return bad(p, "lone low surrogate in \\u escape");
			if (u >= 0xd800 && u < 0xdc00) {
				if (p->len - p->i < 6 || p->s[p->i] != '\\' ||
				    p->s[p->i + 1] != 'u')
					return bad(p, "lone high surrogate in \\u escape");
				p->i += 2;
				if (hex4(p, &lo))
					return -EINVAL;
				if (lo < 0xdc00 || lo >= 0xe000)
					return bad(p, "bad surrogate pair in \\u escape");
				u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
			}
			put_utf8(o, u);
			break;
		default:
			return bad(p, "bad escape in string");
		}
	}
	out->len = (size_t)(o->scratch + o->scratch_len - out->s);
	p->i++;
	return 0;
}

/* A number, by the JSON grammar; kept as text. */
static int parse_number(struct jp *p, struct tp_json_str *out)
{
	size_t b = p->i;

	if (p->i < p->len && p->s[p->i] == '-')
		p->i++;
	if (p->i >= p->len)
		return bad(p, "truncated number");
	if (p->s[p->i] == '0') {
		p->i++;
	} else if (p->s[p->i] >= '1' && p->s[p->i] <= '9') {
		while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
	} else {
		return bad(p, "bad number");
	}
	if (p->i < p->len && p->s[p->i] == '.') {
		size_t d = ++p->i;

		while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
		if (p->i == d)
			return bad(p, "bad number: no digit after '.'");
	}
	if (p->i < p->len && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		size_t d;

		p->i++;
		if (p->i < p->len && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		d = p->i;
		while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
		if (p->i == d)
			return bad(p, "bad number: no digit in exponent");
	}
	out->s = p->s + b;
	out->len = p->i - b;
	return 0;
}

static int add_item(struct jp *p, struct tp_json_item **it)
{
	struct tp_json_obj *o = p->o;

	if (o->n_items == o->cap_items) {
		size_t cap = o->cap_items ? o->cap_items * 2 : 64;
		struct tp_json_item *q = realloc(o->items, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		o->items = q;
		o->cap_items = cap;
	}
	*it = &o->items[o->n_items++];
	return 0;
}

static int parse_array(struct jp *p, struct tp_json_field *f)
{
	struct tp_json_item *it;
	int rc;

	f->is_array = true;
	f->first = p->o->n_items;
	f->n = 0;
	p->i++;
	skip_ws(p);
	if (p->i < p->len && p->s[p->i] == ']') {
		p->i++;
		return 0;
	}
	for (;;) {
		skip_ws(p);
		if (p->i >= p->len)
			return bad(p, "unterminated array");
		rc = add_item(p, &it);
		if (rc)
			return rc;
		if (p->s[p->i] == '"') {
			it->is_num = false;
			rc = parse_string(p, &it->str);
		} else if (p->s[p->i] == '-' ||
			   (p->s[p->i] >= '0' && p->s[p->i] <= '9')) {
			it->is_num = true;
			rc = parse_number(p, &it->str);
		} else if (p->s[p->i] == '[' || p->s[p->i] == '{') {
			return bad(p, "nested arrays and objects are not allowed");
		} else {
			return bad(p, "array items must be strings or numbers");
		}
		if (rc)
			return rc;
		f->n++;
		skip_ws(p);
		if (p->i >= p->len)
			return bad(p, "unterminated array");
		if (p->s[p->i] == ']') {
			p->i++;
			return 0;
		}
		if (p->s[p->i] != ',')
			return bad(p, "expected ',' or ']' in array");
		p->i++;
	}
}

int tp_json_parse(struct tp_json_obj *o, const char *s, size_t len,
		  const char **why)
{
	struct jp p = { .o = o, .s = s, .len = len };
	int rc = -EINVAL;

	o->n = 0;
	o->n_items = 0;
	o->scratch_len = 0;
	if (len > o->scratch_cap) {
		char *q = realloc(o->scratch, len);

		if (!q) {
			*why = "out of memory";
			return -ENOMEM;
		}
		o->scratch = q;
		o->scratch_cap = len;
	}

	skip_ws(&p);
	if (p.i >= len || s[p.i] != '{') {
		rc = bad(&p, "expected a JSON object");
		goto out;
	}
	p.i++;
	skip_ws(&p);
	if (p.i < len && s[p.i] == '}') {
		p.i++;
		goto end;
	}
	for (;;) {
		struct tp_json_field *f;

		skip_ws(&p);
		if (p.i >= len) {
			rc = bad(&p, "truncated object");
			goto out;
		}
		if (s[p.i] != '"') {
			rc = bad(&p, "expected a string key");
			goto out;
		}
		if (o->n == TP_JSON_MAX_FIELDS) {
			rc = bad(&p, "too many fields");
			goto out;
		}
		f = &o->f[o->n];
		rc = parse_string(&p, &f->key);
		if (rc)
			goto out;
		for (unsigned k = 0; k < o->n; k++)
			if (o->f[k].key.len == f->key.len &&
			    !memcmp(o->f[k].key.s, f->key.s, f->key.len)) {
				rc = bad(&p, "duplicate key");
				goto out;
			}
		skip_ws(&p);
		if (p.i >= len || s[p.i] != ':') {
			rc = bad(&p, p.i >= len ? "truncated object" :
					"expected ':' after key");
			goto out;
		}
		p.i++;
		skip_ws(&p);
		if (p.i >= len) {
			rc = bad(&p, "truncated object");
			goto out;
		}
		if (s[p.i] == '"') {
			f->is_array = false;
			rc = parse_string(&p, &f->str);
		} else if (s[p.i] == '[') {
			rc = parse_array(&p, f);
		} else {
			rc = bad(&p, "values must be strings or arrays");
		}
		if (rc)
			goto out;
		o->n++;
		skip_ws(&p);
		if (p.i >= len) {
			rc = bad(&p, "truncated object");
			goto out;
		}
		if (s[p.i] == '}') {
			p.i++;
			break;
		}
		if (s[p.i] != ',') {
			rc = bad(&p, "expected ',' or '}' in object");
			goto out;
		}
		p.i++;
	}
end:
	skip_ws(&p);
	rc = p.i == len ? 0 : bad(&p, "text after the object");
out:
	if (rc)
		*why = rc == -ENOMEM ? "out of memory" : p.why;
	return rc;
}

const struct tp_json_field *tp_json_get(const struct tp_json_obj *o,
					const char *key)
{
	size_t n = strlen(key);

	for (unsigned k = 0; k < o->n; k++)
		if (o->f[k].key.len == n && !memcmp(o->f[k].key.s, key, n))
			return &o->f[k];
	return NULL;
}

void tp_json_fini(struct tp_json_obj *o)
{
	free(o->items);
	free(o->scratch);
	o->items = NULL;
	o->scratch = NULL;
	o->cap_items = o->scratch_cap = 0;
}
