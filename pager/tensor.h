/* SPDX-License-Identifier: MIT */
/*
 * A tensor: a reserved virtual range and its pages. The fields under
 * "shared" are read by policy/ and lineage/ (never written, except their
 * own slots); everything else is the pager's.
 */
#ifndef TP_PAGER_TENSOR_H
#define TP_PAGER_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp_tensor {
	/* --- shared --------------------------------------------------- */
	uintptr_t va;			/* stable device address */
	size_t bytes;			/* size given at creation */
	size_t nr_pages;		/* chunks covering bytes */
	unsigned flags;			/* TP_* flags */
	uint64_t id;			/* unique, increasing */
	uint64_t last_access_ns;	/* tp_vmm_now_ns() at last acquire */
	uint64_t access_seq;		/* global acquire counter at last acquire */
	size_t resident_pages;		/* pages RESIDENT now */
	unsigned pins;			/* acquisitions outstanding */
	bool computable;		/* produced by an op (lineage sets it) */
	/* policy/'s slot: index in its candidate structure, or private data */
	struct {
		int64_t idx;
		void *p;
		double key;
	} pol;
	/* lineage/'s slot: the record that produced it and which output */
	struct {
		void *rec;
		unsigned out;
		void *p;
	} lin;

	/* --- the pager's ---------------------------------------------- */
	/* pages, states, references, hash node, slab and cache links are
	 * defined by pager/ below this line. */
#ifdef TP_PAGER_TENSOR_PRIVATE
	TP_PAGER_TENSOR_PRIVATE
#endif
};

#endif /* TP_PAGER_TENSOR_H */
