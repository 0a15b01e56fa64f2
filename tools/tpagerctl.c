/* SPDX-License-Identifier: MIT */
/*
 * tpagerctl: list, read and check tpager's configuration keys.
 *
 *   tpagerctl -a            every key: value, default, mode, help
 *   tpagerctl KEY...        values of the named keys
 *   tpagerctl -f FILE       check a configuration file
 *   tpagerctl -w KEY=VALUE  the keys of a host context created with it
 *   --json                  the same as JSON
 *
 * Values come from the same sources as a context's: the system file,
 * $TPAGER_CONF, $TPAGER_OPTS. stats.* keys have values only in a context
 * (-w).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpager.h"
#include "ctl/conf.h"
#include "ctl/stats.h"

#define VALUE_MAX 512

/*
 * Messages of the library: kept for --json, and while a context is being
 * created (its failure is told in one line); printed otherwise.
 */
struct messages {
	char **text;
	size_t n;
	bool json, hold;
};

static struct messages msgs;

static void log_fn(enum tp_log_level level, const char *msg, void *priv)
{
	struct messages *m = priv;
	char **nt;

	if (!m->json && !m->hold) {
		fprintf(stderr, "tpagerctl: %s%s\n",
			level == TP_LOG_ERROR ? "" : "note: ", msg);
		return;
	}
	nt = realloc(m->text, (m->n + 1) * sizeof(*nt));
	if (!nt)
		return;
	m->text = nt;
	m->text[m->n] = strdup(msg);
	if (m->text[m->n])
		m->n++;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_messages(FILE *f)
{
	fputs("\"messages\": [", f);
	for (size_t i = 0; i < msgs.n; i++) {
		fputs(i ? ", " : "", f);
		json_string(f, msgs.text[i]);
	}
	fputs("]", f);
}

/* One row of the listing, from a configuration or a context. */
struct row {
	const char *key;
	const char *type;
	const char *mode;	/* "start", "run" or "stat" */
	const char *help;
	char value[VALUE_MAX];
	char def[VALUE_MAX];
	char accepts[VALUE_MAX];
};

/* The source of values: a loaded configuration, or a live context. */
struct source {
	struct tp_conf conf;
	struct tp_ctx *ctx;
};

static int fill_row(const struct source *src, const char *key, struct row *r)
{
	const struct tp_conf_key *k = tp_conf_find(key);
	const struct tp_stat_key *s;
	struct tp_conf def;
	int rc;

	memset(r, 0, sizeof(*r));
	if (k) {
		r->key = k->key;
		r->type = tp_conf_type_name(k->type);
		r->mode = k->mode == TP_CONF_RUN ? "run" : "start";
		r->help = k->help;
		tp_conf_defaults(&def);
		tp_conf_format(&def, k, r->def, sizeof(r->def));
		tp_conf_expect(k, r->accepts, sizeof(r->accepts));
		if (src->ctx)
			return tp_ctl_get(src->ctx, key, r->value,
					  sizeof(r->value));
		return tp_conf_format(&src->conf, k, r->value,
				      sizeof(r->value));
	}
	s = tp_stat_find(key);
	if (!s)
		return -ENOENT;
	r->key = s->key;
	r->type = "u64";
	r->mode = "stat";
	r->help = s->help;
	strcpy(r->def, "-");
	strcpy(r->accepts, "read-only");
	if (!src->ctx) {
		strcpy(r->value, "-");
		return 0;
	}
	rc = tp_ctl_get(src->ctx, key, r->value, sizeof(r->value));
	return rc;
}

static void print_rows(const struct row *rows, size_t n, bool json,
		       bool values_only, bool full)
{
	int wk = 3, wv = 5, wd = 7;

	if (json) {
		fputs("{\"keys\": [", stdout);
		for (size_t i = 0; i < n; i++) {
			const struct row *r = &rows[i];

			fputs(i ? ",\n  {" : "\n  {", stdout);
			fputs("\"key\": ", stdout);
			json_string(stdout, r->key);
			fputs(", \"value\": ", stdout);
			json_string(stdout, r->value);
			fputs(", \"default\": ", stdout);
			json_string(stdout, r->def);
			fputs(", \"type\": ", stdout);
			json_string(stdout, r->type);
			fputs(", \"mode\": ", stdout);
			json_string(stdout, r->mode);
			fputs(", \"accepts\": ", stdout);
			json_string(stdout, r->accepts);
			fputs(", \"help\": ", stdout);
			json_string(stdout, r->help);
			fputs("}", stdout);
		}
		fputs("\n], ", stdout);
		json_messages(stdout);
		fputs("}\n", stdout);
		return;
	}
	if (values_only) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", rows[i].value);
		return;
	}
	if (!full) {
		for (size_t i = 0; i < n; i++)
			printf("%s = %s\n", rows[i].key, rows[i].value);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		int l;

		l = (int)strlen(rows[i].key);
		wk = l > wk ? l : wk;
		l = (int)strlen(rows[i].value);
		wv = l > wv && l < 40 ? l : wv;
		l = (int)strlen(rows[i].def);
		wd = l > wd && l < 40 ? l : wd;
	}
	printf("%-*s  %-*s  %-*s  %-5s  %s\n", wk, "KEY", wv, "VALUE", wd,
	       "DEFAULT", "MODE", "HELP");
	/* An empty string shows as "" so that the columns stay aligned. */
	for (size_t i = 0; i < n; i++)
		printf("%-*s  %-*s  %-*s  %-5s  %s\n", wk, rows[i].key, wv,
		       *rows[i].value ? rows[i].value : "\"\"", wd,
		       *rows[i].def ? rows[i].def : "\"\"", rows[i].mode,
		       rows[i].help);
}

/*
 * The messages held while a context was created, from @from on, printed
 * after all; --json keeps them for its object.
 */
static void release_messages(size_t from)
{
	msgs.hold = false;
	if (msgs.json)
		return;
	for (size_t i = 0; i < msgs.n; i++) {
		if (i >= from)
			fprintf(stderr, "tpagerctl: %s\n", msgs.text[i]);
		free(msgs.text[i]);
	}
	msgs.n = 0;
}

static void free_messages(void)
{
	for (size_t i = 0; i < msgs.n; i++)
		free(msgs.text[i]);
	free(msgs.text);
	msgs.text = NULL;
	msgs.n = 0;
}

/* Rows for @keys (all keys when @nkeys is 0); 0, or 1 after an error. */
static int list(const struct source *src, char **keys, size_t nkeys,
		bool json, bool values_only, bool full)
{
	size_t total = nkeys ? nkeys : tp_conf_nkeys + tp_stat_nkeys;
	struct row *rows = calloc(total, sizeof(*rows));
	size_t n = 0;
	int status = 0;

	if (!rows) {
		fprintf(stderr, "tpagerctl: %s\n", strerror(ENOMEM));
		return 1;
	}
	for (size_t i = 0; i < total; i++) {
		const char *key = nkeys ? keys[i] :
			i < tp_conf_nkeys ? tp_conf_keys[i].key :
			tp_stat_keys[i - tp_conf_nkeys].key;
		int rc = fill_row(src, key, &rows[n]);

		if (rc == -ENOENT) {
			tp_conf_unknown(key, NULL, 0);
			status = 1;
			continue;
		}
		if (rc) {
			fprintf(stderr, "tpagerctl: %s: %s\n", key,
				tp_strerror(rc));
			status = 1;
			continue;
		}
		n++;
	}
	print_rows(rows, n, json, values_only, full);
	free(rows);
	return status;
}

/* -f FILE: the file alone over the defaults, then the cross-key check. */
static int check_file(const char *path, bool json)
{
	struct tp_conf c;
	unsigned nerr = 0;
	int rc;

	tp_conf_defaults(&c);
	rc = tp_conf_load_file(&c, path, false, &nerr);
	if (!rc && tp_conf_check(&c, path)) {
		rc = -EINVAL;
		nerr++;
	}
	if (rc && !nerr)
		nerr = 1;
	if (json) {
		fputs("{\"file\": ", stdout);
		json_string(stdout, path);
		printf(", \"ok\": %s, \"errors\": %u, ", rc ? "false" : "true",
		       nerr);
		json_messages(stdout);
		fputs("}\n", stdout);
	} else if (rc) {
		fprintf(stderr, "tpagerctl: %s: %u error%s\n", path, nerr,
			nerr == 1 ? "" : "s");
	} else {
		printf("%s: ok\n", path);
	}
	return rc ? 1 : 0;
}

static void usage(FILE *f)
{
	fputs("usage: tpagerctl [--json] [-n] [-w KEY=VALUE]... [KEY...]\n"
	      "       tpagerctl [--json] -a\n"
	      "       tpagerctl [--json] -f FILE\n"
	      "\n"
	      "  -a, --all           every key with its value, default, mode and help\n"
	      "  -f, --file FILE     check a configuration file; exit 1 on errors\n"
	      "  -w, --with KEY=VALUE\n"
	      "                      create a host-backend context with this setting\n"
	      "                      (repeatable) and show its keys, stats.* included\n"
	      "  -n, --values        print values only\n"
	      "  -j, --json          JSON output\n"
	      "  -h, --help          this text\n"
	      "  -V, --version       the version\n"
	      "\n"
	      "Values come from $TPAGER_SYSCONF or the system tpager.conf,\n"
	      "$TPAGER_CONF and $TPAGER_OPTS, as for a program. See tpagerctl(1),\n"
	      "tpager.conf(5).\n", f);
}

/* Append ",@item" to the opts string *@opts. */
static int append_opt(char **opts, const char *item)
{
	size_t old = *opts ? strlen(*opts) : 0;
	char *n = realloc(*opts, old + strlen(item) + 2);

	if (!n)
		return -ENOMEM;
	if (old)
		n[old++] = ',';
	strcpy(n + old, item);
	*opts = n;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "file", required_argument, NULL, 'f' },
		{ "with", required_argument, NULL, 'w' },
		{ "write", required_argument, NULL, 'w' },
		{ "values", no_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	bool all = false, json = false, values_only = false;
	const char *file = NULL;
	char *opts = NULL, *with = NULL;	/* with: the -w settings alone */
	struct source src;
	int opt, status;

	memset(&src, 0, sizeof(src));
	/* Our own messages, named tpagerctl, not getopt's (argv[0]). */
	opterr = 0;
	status = 2;
	while ((opt = getopt_long(argc, argv, ":af:w:njhV", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'a': all = true; break;
		case 'f': file = optarg; break;
		case 'w':
			if (!strchr(optarg, '=')) {
				fprintf(stderr, "tpagerctl: -w %s: expected KEY=VALUE\n",
					optarg);
				goto out;
			}
			/* The host backend unless a setting says otherwise. */
			if ((!opts && append_opt(&opts, "vmm.backend=host")) ||
			    append_opt(&opts, optarg) || append_opt(&with, optarg)) {
				fprintf(stderr, "tpagerctl: %s\n", strerror(ENOMEM));
				status = 1;
				goto out;
			}
			break;
		case 'n': values_only = true; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); status = 0; goto out;
		case 'V':
			printf("tpagerctl %s\n", PACKAGE_VERSION);
			status = 0;
			goto out;
		case ':':
			/* As typed: --file, or -f alone or in a cluster. */
			if (strncmp(argv[optind - 1], "--", 2))
				fprintf(stderr, "tpagerctl: option '-%c' needs a value (try --help)\n",
					optopt);
			else
				fprintf(stderr, "tpagerctl: option '%s' needs a value (try --help)\n",
					argv[optind - 1]);
			goto out;
		default:
			if (optopt)
				fprintf(stderr, "tpagerctl: unknown option '-%c' (try --help)\n",
					optopt);
			else
				fprintf(stderr, "tpagerctl: unknown option '%s' (try --help)\n",
					argv[optind - 1]);
			goto out;
		}
	}
	if ((file && (all || opts || optind < argc)) ||
	    (all && optind < argc) ||
	    (!file && !all && !opts && optind == argc)) {
		usage(stderr);
		goto out;
	}
	msgs.json = json;
	tp_set_log(log_fn, &msgs);

	status = 1;
	if (file) {
		status = check_file(file, json);
		goto out;
	}
	if (opts) {
		msgs.hold = true;
		src.ctx = tp_ctx_create(opts);
		if (!src.ctx) {
			int err = errno;

			if (json) {
				printf("{\"ok\": false, \"error\": ");
				json_string(stdout, strerror(err));
				fputs(", ", stdout);
				json_messages(stdout);
				fputs("}\n", stdout);
			} else {
				/* The user's settings, and the first reason. */
				fprintf(stderr, "tpagerctl: cannot create a context with %s: %s\n",
					with, msgs.n ? msgs.text[0] : strerror(err));
			}
			release_messages(1);
			goto out;
		}
		release_messages(0);
	} else if (tp_conf_load(&src.conf, NULL)) {
		if (json) {
			fputs("{\"ok\": false, ", stdout);
			json_messages(stdout);
			fputs("}\n", stdout);
		} else {
			fputs("tpagerctl: the configuration holds errors\n",
			      stderr);
		}
		goto out;
	}
	status = list(&src, argv + optind, (size_t)(argc - optind), json,
		      values_only, all || (opts && optind == argc));
	if (src.ctx)
		tp_ctx_destroy(src.ctx);
out:
	free(opts);
	free(with);
	free_messages();
	return status;
}
