/* SPDX-License-Identifier: MIT */
/* The trace's records as Chrome trace JSON (see tracer_json.h). */
#include <inttypes.h>
#include <stdio.h>

#include "tracer/tracer_json.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static double us(uint64_t t0, uint64_t ns)
{
	return ns > t0 ? (double)(ns - t0) / 1e3 : 0.0;
}

void tp_tracer_json_begin(FILE *f, const char *backend,
			  const char *const *track, unsigned n)
{
	fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"tpager (%s)\"}}",
		TRACE_PID, backend);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,\"args\":{\"name\":\"%s\"}}",
			TRACE_PID, i + 1, track[i]);
}

void tp_tracer_rec_write(FILE *f, uint64_t t0, const struct trace_rec *r)
{
	fputs(",\n{", f);
	switch (r->ph) {
	case 'X':
		fputs("\"name\":", f);
		json_str(f, r->name);
		fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d",
			r->cat, us(t0, r->ts), (double)r->dur / 1e3, TRACE_PID,
			r->tid ? r->tid : (int)r->s + 1);
		/* Copies say which tensor moved and how much; ops what
		 * work they did, for device models (scripts/sim-calibrate). */
		if (r->bytes)
			fprintf(f, ",\"args\":{\"tensor\":%" PRIu64 ",\"bytes\":%" PRIu64 "}",
				r->tensor, r->bytes);
		else if (r->has_work)
			fprintf(f, ",\"args\":{\"flops\":%.17g,\"bytes\":%.17g}",
				r->work.flops, r->work.bytes);
		else if (r->units)
			fprintf(f, ",\"args\":{\"chunks\":%" PRIu64 "}",
				r->units);
		fputc('}', f);
		break;
	case 'i':
		fputs("\"name\":", f);
		json_str(f, r->name);
		fprintf(f, ",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"tensor\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}",
			r->cat, us(t0, r->ts), TRACE_PID, (int)r->s + 1,
			r->tensor, r->bytes);
		break;
	default:
		fprintf(f, "\"name\":\"memory\",\"ph\":\"C\",\"ts\":%.3f,\"pid\":%d,\"args\":{\"device_bytes\":%" PRIu64 ",\"host_swap_bytes\":%" PRIu64 "}}",
			us(t0, r->ts), TRACE_PID, r->dev, r->host);
		break;
	}
}
