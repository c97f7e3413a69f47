// SPDX-License-Identifier: MIT
/* libFuzzer's entry point, which every target in this folder defines.  The
 * same target is built two ways: with -fsanitize=fuzzer (clang, the fuzz
 * leg of scripts/test) and, in every normal build, with replay_main.c,
 * which feeds it each file of its corpus folder (seeds and every input that
 * once crashed it) as a regression test.
 *
 * A target aborts on anything the contract it checks forbids, beyond what
 * the sanitizers catch; inputs it does not accept are fine. */
#ifndef SLOTRUN_FUZZ_H
#define SLOTRUN_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the run on a broken contract, saying which (libFuzzer then saves
 * the input). */
#define FUZZ_CHECK(cond)                                                            \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                    \
		}                                                                   \
	} while (0)

#endif
