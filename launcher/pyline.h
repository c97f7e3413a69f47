// SPDX-License-Identifier: MIT
/* The source line of a CPython 3.11 instruction, from its code object's
 * location table (co_linetable).  Pure: the bytes come from the stack
 * collector, which read them from a worker's memory, so nothing in them is
 * trusted: a table that is cut short or malformed gives "no line", never a
 * read past its end.
 *
 * The format (CPython's Objects/locations.md for 3.11): a sequence of
 * entries, each covering 1 to 8 code units (2-byte instructions) and
 * starting with a byte that has its top bit set: bits 3-6 a code, bits 0-2
 * the units covered less one.  Code 15: no location; 14: a signed varint
 * line delta, then the end line and columns; 13: a signed varint line delta
 * alone; 10 to 12: the line moves by code - 10, two column bytes follow;
 * 0 to 9: the same line, one column byte follows.  A varint is 6-bit
 * groups, least significant first, 0x40 set on all but the last; a signed
 * one holds the magnitude above its lowest bit, which is the sign.  The
 * line starts at co_firstlineno. */
#ifndef SLOTRUN_PYLINE_H
#define SLOTRUN_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/* The line of the instruction at code unit `unit` (the frame's last
 * instruction: prev_instr less the start of the code, in units), given
 * the table's len bytes and co_firstlineno.  A unit before the first
 * (a frame that has not started) is on the first line.  Returns the line,
 * or -1 when the instruction has none (code 15) or the table does not
 * reach it. */
int pyline_find(const uint8_t *table, size_t len, int firstlineno, int unit);

#endif
