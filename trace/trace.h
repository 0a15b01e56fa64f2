/* SPDX-License-Identifier: MIT */
/*
 * The in-memory form of an op trace: what a training iteration did to
 * memory, independent of where it was recorded (tpager-trace(5) text, a DTR
 * JSON-lines log, the synthetic generator). tpager-sim replays it; the
 * accounting pass measures it.
 *
 * Everything lives in a few flat arrays indexed by 32-bit ids, so a trace
 * of a million records costs tens of megabytes and no pointer chasing:
 *
 *   tensors[]   one per tensor version (an in-place write makes a new one)
 *   storages[]  the memory behind tensors; views and in-place results
 *               share their source's storage and add no bytes
 *   ops[]       with their inputs in args[] and outputs in outs[]
 *   events[]    the program order: tensor creation, op, free, iteration
 *               boundary, backward-pass start, measured-region marks
 *
 * A trace is built by appending (tp_trace_add_*); the builder checks that
 * every reference is to a live tensor, so a built trace is well-formed
 * whatever produced it.
 */
#ifndef TP_TRACE_TRACE_H
#define TP_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TP_TRACE_NONE UINT32_MAX

/* Tensor flags. The role bits say what the program used the tensor for. */
enum tp_trace_flag {
	TP_TRACE_INPUT		= 1u << 0,	/* batch data from outside */
	TP_TRACE_PARAM		= 1u << 1,	/* a model parameter */
	TP_TRACE_GRAD		= 1u << 2,	/* a gradient */
	TP_TRACE_OPTSTATE	= 1u << 3,	/* optimizer state (moments) */
	TP_TRACE_ACTIVATION	= 1u << 4,	/* forward result kept */
	/* Regenerable by replaying its producer (lineage may evict it). */
	TP_TRACE_COMPUTABLE	= 1u << 5,
};
#define TP_TRACE_FLAGS_ALL	0x3fu

/* How an op output relates to the op's inputs. */
enum tp_trace_out_kind {
	TP_TRACE_OUT_FRESH,	/* new storage of the output's size */
	TP_TRACE_OUT_VIEW,	/* shares input k's storage; input stays valid */
	/*
	 * Overwrites input k in place: the output takes input k's storage and
	 * input k's version ends there (it can only come back by recompute,
	 * Coop's recomputable in-place).
	 */
	TP_TRACE_OUT_INPLACE,
};

enum tp_trace_event_kind {
	TP_TRACE_EV_TENSOR,	/* arg: tensor created from outside */
	TP_TRACE_EV_OP,		/* arg: op */
	TP_TRACE_EV_FREE,	/* arg: tensor dropped by the program */
	TP_TRACE_EV_ITER,	/* arg: number of the iteration that begins */
	TP_TRACE_EV_BACKWARD,	/* the backward pass of this iteration begins */
	TP_TRACE_EV_MEASURE_BEGIN, /* the measured region begins */
	TP_TRACE_EV_MEASURE_END,   /* and ends (else at the end of the trace) */
};

enum tp_trace_tensor_state {
	TP_TRACE_LIVE,
	TP_TRACE_FREED,		/* dropped by a free event */
	TP_TRACE_OVERWRITTEN,	/* consumed by an in-place op */
};

struct tp_trace_tensor {
	uint64_t size;		/* logical bytes */
	uint32_t storage;
	uint32_t producer;	/* op, or TP_TRACE_NONE for a created tensor */
	uint32_t view_of;	/* tensor whose storage this one shares, or NONE */
	uint16_t flags;		/* enum tp_trace_flag */
	uint8_t state;		/* enum tp_trace_tensor_state, after the trace */
};

struct tp_trace_storage {
	uint64_t size;		/* bytes: the size of the tensor that made it */
	uint32_t base;		/* that tensor */
};

struct tp_trace_out {
	uint32_t tensor;
	uint8_t kind;		/* enum tp_trace_out_kind */
	uint8_t alias;		/* input index for VIEW and INPLACE */
};

struct tp_trace_op {
	uint64_t cost_ns;	/* measured or modelled compute time */
	/*
	 * Split marks (tp_trace_set_split()): the op may run in parts, each
	 * a run of the split_rows rows of the inputs whose bit is set in
	 * split_in and of the outputs whose bit is set in split_out (bit k:
	 * the op's k-th); 0 rows: it always runs whole.
	 */
	uint64_t split_in, split_out;
	uint64_t split_rows;
	/*
	 * How the parts read (tp_trace_set_split_kind()): split_local, each
	 * its own rows alone (TP_OP_SPLIT_LOCAL); and where the parts above
	 * do not fit, they may sum instead (struct tp_op_split, sums), in
	 * split_passes passes over the rows (0: they may not), beginning at
	 * multiples of split_granule rows (0: any).
	 */
	uint32_t split_passes, split_granule;
	uint32_t name;		/* offset of the NUL-terminated name in names */
	uint32_t first_arg;	/* inputs: args[first_arg .. + n_args) */
	uint32_t first_out;	/* outputs: outs[first_out .. + n_outs) */
	uint8_t n_args;
	uint8_t n_outs;
	uint8_t split_local;
};

/* Operand limits: a record with more is rejected, not truncated. */
#define TP_TRACE_MAX_ARGS	255
#define TP_TRACE_MAX_OUTS	255

struct tp_trace_event {
	uint32_t kind;		/* enum tp_trace_event_kind */
	uint32_t arg;
};

struct tp_trace_name_table;

struct tp_trace {
	struct tp_trace_tensor *tensors;
	struct tp_trace_storage *storages;
	struct tp_trace_op *ops;
	uint32_t *args;
	struct tp_trace_out *outs;
	struct tp_trace_event *events;
	char *names;		/* interned op names, NUL-separated */
	size_t n_tensors, n_storages, n_ops, n_args, n_outs, n_events;
	size_t names_len;
	size_t cap_tensors, cap_storages, cap_ops, cap_args, cap_outs;
	size_t cap_events, cap_names;
	struct tp_trace_name_table *name_table;
	uint32_t iterations;	/* ITER events seen */
	bool measure_open;	/* between MEASURE_BEGIN and MEASURE_END */
	bool measured;		/* a MEASURE_BEGIN was seen */
	uint64_t records;	/* source records parsed into this trace */
	/* DTR logs: RELEASEs ignored, of a name never defined or with no
	 * reference left (longer logs release some names twice). */
	uint64_t releases_ignored;
	/* Sizes counted to the byte by the simulator that recorded it (DTR
	 * logs): a replay's default chunk is small (tp_replay_chunk()). */
	bool byte_accounted;
};

/* One output to create with tp_trace_add_op(). */
struct tp_trace_out_spec {
	uint64_t size;
	uint16_t flags;
	uint8_t kind;		/* enum tp_trace_out_kind */
	uint8_t alias;		/* input index for VIEW and INPLACE */
};

/* Where and why a parser gave up. */
struct tp_trace_error {
	char file[128];
	unsigned long line;	/* 1-based; 0 when not about a line */
	char reason[160];
};

/**
 * tp_trace_new() - an empty trace.
 *
 * Return: the trace, or NULL with errno = ENOMEM.
 */
struct tp_trace *tp_trace_new(void);

/** tp_trace_free() - free @t and everything in it; NULL is allowed. */
void tp_trace_free(struct tp_trace *t);

/**
 * tp_trace_add_tensor() - a tensor created from outside the traced ops.
 * @t:     the trace
 * @size:  logical bytes (may be 0)
 * @flags: enum tp_trace_flag bits
 * @view_of: a live tensor whose storage it shares, or TP_TRACE_NONE for
 *         fresh storage of @size bytes
 * @id:    set to the new tensor's id
 *
 * Return: 0; -EINVAL bad flags; -ENOENT @view_of does not exist; -ESTALE
 * @view_of is not live; -E2BIG id space exhausted; -ENOMEM. On error the
 * trace is unchanged.
 */
int tp_trace_add_tensor(struct tp_trace *t, uint64_t size, unsigned flags,
			uint32_t view_of, uint32_t *id);

/* Longest op name. */
#define TP_TRACE_MAX_NAME	255

/**
 * tp_trace_name_ok() - whether @name (@len bytes) can name an op: 1 to
 * TP_TRACE_MAX_NAME bytes, none of them a blank, control byte or '#'.
 */
bool tp_trace_name_ok(const char *name, size_t len);

/**
 * tp_trace_add_op() - an op that ran.
 * @t:       the trace
 * @name:    op name, @name_len bytes (see tp_trace_name_ok())
 * @cost_ns: its compute time
 * @args:    @n_args live input tensors (repeats allowed)
 * @outs:    @n_outs outputs to create
 * @first:   set to the id of the first output (the others follow in order)
 *
 * An INPLACE output ends the life of its input's version; two INPLACE
 * outputs may not overwrite the same tensor.
 *
 * Return: 0; -EINVAL bad name, alias index, flags or duplicate in-place
 * target;
 * -ENOENT an input does not exist; -ESTALE an input is not live; -E2BIG
 * too many operands; -ENOMEM. On error the trace is unchanged.
 */
int tp_trace_add_op(struct tp_trace *t, const char *name, size_t name_len,
		    uint64_t cost_ns, const uint32_t *args, unsigned n_args,
		    const struct tp_trace_out_spec *outs, unsigned n_outs,
		    uint32_t *first);

/**
 * tp_trace_add_free() - the program drops tensor @id.
 *
 * Return: 0; -ENOENT no such tensor; -ESTALE not live; -ENOMEM.
 */
int tp_trace_add_free(struct tp_trace *t, uint32_t id);

/**
 * tp_trace_add_mark() - an iteration boundary, backward start or measured
 * region mark (@kind one of the TP_TRACE_EV_ITER .. MEASURE_END).
 *
 * ITER numbers its iterations itself, from 0. MEASURE_BEGIN is allowed
 * once; MEASURE_END only after it.
 *
 * Return: 0; -EINVAL wrong kind or order; -ENOMEM.
 */
int tp_trace_add_mark(struct tp_trace *t, enum tp_trace_event_kind kind);

/**
 * tp_trace_set_split() - mark op @op as one that may run in parts along
 * the outermost dimension of some of its tensors (struct tp_op_split).
 * @t:    the trace
 * @op:   the op, an index of t->ops
 * @rows: rows of the cut tensors, at least 2
 * @in:   bit k: the op's input k is cut into row ranges
 * @out:  bit k: the op's output k is cut; the tensors not named are
 *        whole in every part
 *
 * Every cut tensor's size must be a multiple of @rows and every cut
 * output fresh storage; an op with an in-place output is never split. A
 * second call replaces the first one's marks.
 *
 * Return: 0; -EINVAL no such op, fewer than 2 rows, nothing cut, a bit
 * past the op's inputs or outputs, a cut output that is a view or in
 * place, an in-place output, or a cut size not a multiple of @rows. On
 * error the trace is unchanged.
 */
int tp_trace_set_split(struct tp_trace *t, uint32_t op, uint64_t rows,
		       uint64_t in, uint64_t out);

/**
 * tp_trace_set_split_kind() - say how the parts of op @op, split by
 * tp_trace_set_split(), read: with @local, each its own rows alone
 * (TP_OP_SPLIT_LOCAL); with @passes (0: not), where the parts do not fit
 * so, they may instead sum into the whole outputs (struct tp_op_split,
 * sums) in that many passes over the rows, beginning at multiples of
 * @granule rows (0: any; else fewer than the split's rows).
 *
 * Return: 0; -EINVAL no such op, an op without split marks, a granule
 * without passes, or one of the split's rows or more. On error the trace
 * is unchanged.
 */
int tp_trace_set_split_kind(struct tp_trace *t, uint32_t op, bool local,
			    uint32_t passes, uint32_t granule);

/** tp_trace_op_name() - the NUL-terminated name of op @op. */
static inline const char *tp_trace_op_name(const struct tp_trace *t,
					   uint32_t op)
{
	return t->names + t->ops[op].name;
}

/**
 * tp_trace_equal() - whether two traces describe the same program: same
 * tensors, storages, ops (names, costs, operands, split marks) and events.
 */
bool tp_trace_equal(const struct tp_trace *a, const struct tp_trace *b);

/* -------------------------------------------------------------------- */
/* tpager-trace(5) text */

/**
 * tp_trace_parse() - parse tpager-trace(5) text.
 * @buf, @len: the whole text (need not be NUL-terminated)
 * @file:  name used in error messages
 * @out:   set to the new trace on success
 * @err:   filled on failure (may be NULL)
 *
 * Versions 1 to 3 are read. From version 3 on, a text that stops before
 * its end record is truncated, an error naming its last line.
 *
 * Return: 0; -EINVAL malformed or truncated input (@err says the line and
 * why); -ENOMEM.
 */
int tp_trace_parse(const char *buf, size_t len, const char *file,
		   struct tp_trace **out, struct tp_trace_error *err);

/**
 * tp_trace_write() - write @t as tpager-trace(5) text to @f, in the
 * newest version (3), which closes with the end record.
 *
 * Tensor ids in the text are the trace's own ids, so parsing the output
 * gives a trace equal to @t.
 *
 * Return: 0 or -EIO.
 */
int tp_trace_write(const struct tp_trace *t, FILE *f);

/* -------------------------------------------------------------------- */
/* DTR JSON-lines logs */

/**
 * tp_trace_parse_dtr() - import a log of the DTR prototype (see
 * tpager-trace(5), section DTR LOGS, for the mapping).
 *
 * Same contract as tp_trace_parse().
 */
int tp_trace_parse_dtr(const char *buf, size_t len, const char *file,
		       struct tp_trace **out, struct tp_trace_error *err);

enum tp_trace_format {
	TP_TRACE_FMT_UNKNOWN,
	TP_TRACE_FMT_TEXT,	/* first line "tpager-trace N" */
	TP_TRACE_FMT_DTR,	/* first line a JSON object */
};

/** tp_trace_detect() - the format of @buf, judged by its first line. */
enum tp_trace_format tp_trace_detect(const char *buf, size_t len);

/**
 * tp_trace_read_file() - the contents of the file at @path, decompressed
 * when they are gzip (known by the magic bytes, whatever the name).
 * @path: a file, or anything open(2) reads once, such as /dev/stdin
 * @buf:  set to a malloc()ed buffer of the contents (not NUL-terminated)
 * @len:  set to their length
 * @err:  filled on failure (may be NULL); line 0
 *
 * Return: 0; -EIO a truncated or corrupt gzip stream (@err says which);
 * -ENOMEM; -errno when the file cannot be read.
 */
int tp_trace_read_file(const char *path, char **buf, size_t *len,
		       struct tp_trace_error *err);

/**
 * tp_trace_load() - read the file at @path (tp_trace_read_file()) and
 * parse it.
 * @fmt: the format to parse, or TP_TRACE_FMT_UNKNOWN to detect it from
 *       the first line; set to the format read
 *
 * Return: as tp_trace_parse(); as tp_trace_read_file() when the file
 * cannot be read.
 */
int tp_trace_load(const char *path, enum tp_trace_format *fmt,
		  struct tp_trace **out, struct tp_trace_error *err);

/** tp_trace_error_str() - "file:line: reason" into @buf of @len bytes. */
const char *tp_trace_error_str(const struct tp_trace_error *err, char *buf,
			       size_t len);

/* -------------------------------------------------------------------- */
/* Reference accounting */

struct tp_trace_summary {
	uint64_t peak_bytes;	/* largest live storage bytes in the region */
	uint64_t compute_ns;	/* sum of the costs of the region's ops */
	uint64_t region_ops;	/* ops in the region */
	uint64_t start_bytes;	/* live storage bytes when the region begins */
	uint64_t end_bytes;	/* and when it ends */
	uint32_t peak_event;	/* index of the event after which peak holds */
};

/**
 * tp_trace_peak() - the unconstrained peak as DTR defines it: the largest
 * sum of live storage sizes at any point of the measured region (the whole
 * trace when it has no MEASURE_BEGIN), and the total compute time of the
 * ops in it. A storage is live from the event that creates it until the
 * last tensor on it is freed. These are what budget ratios and overheads
 * are relative to. Byte counts beyond 2^64 - 1 read as UINT64_MAX.
 *
 * Return: 0, or -ENOMEM (@s is then zeroed).
 */
int tp_trace_peak(const struct tp_trace *t, struct tp_trace_summary *s);

#endif /* TP_TRACE_TRACE_H */
