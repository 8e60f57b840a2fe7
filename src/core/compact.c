/* Compaction of op records: copies every op of the program, in program
 * order (each block's ops in sequence, nested blocks right after their
 * op), into a fresh arena and frees the old one.
 *
 * Passes that add many ops (add_fp16_cast adds a cast on every side of
 * most ops) leave the op list jumping between old and new records; every
 * later walk then misses the cache at each step. On a 100k-op program that
 * doubles the cost of the walks of the remaining passes. After compaction,
 * a walk reads consecutive cache lines.
 *
 * An op record is referenced from: its neighbours (prev/next), its block
 * (first/last), the vars it defines (var->op), its operand slots
 * (args[k].use.op, in the op's input arrays) and its nested blocks
 * (block->parent). All of them are rewritten; op->aux (pass scratch, not
 * preserved across passes) carries the old-to-new mapping meanwhile.
 * Detached ops are not copied: nothing may refer to them between passes.
 */
#include <string.h>

#include "core/core_internal.h"

static bool copy_block(mil_block *b, ir_arena *to, int depth);

static bool copy_op(mil_op *op, ir_arena *to, int depth) {
  mil_op *n = ir_arena_alloc_aligned(to, sizeof *n, 64);
  if (!n) return false;
  memcpy(n, op, sizeof *n);
  op->aux = n;
  for (int32_t i = 0; i < op->n_blocks; i++)
    if (!copy_block(op->blocks[i], to, depth + 1)) return false;
  return true;
}

static bool copy_block(mil_block *b, ir_arena *to, int depth) {
  if (depth > 256) return false;
  for (mil_op *op = b->first; op; op = op->next)
    if (!copy_op(op, to, depth)) return false;
  return true;
}

#define NEW(o) ((o) ? (mil_op *)(o)->aux : NULL)

static void relink_block(mil_block *b) {
  mil_op *first = b->first, *last = b->last;
  for (mil_op *op = first; op; op = op->next) {
    mil_op *n = op->aux;
    n->prev = NEW(op->prev);
    n->next = NEW(op->next);
    for (int32_t i = 0; i < n->n_outputs; i++) n->outputs[i]->op = n;
    for (int32_t i = 0; i < n->n_inputs; i++)
      for (int32_t k = 0; k < n->inputs[i].n_args; k++) n->inputs[i].args[k].use.op = n;
    for (int32_t i = 0; i < n->n_blocks; i++) {
      n->blocks[i]->parent = n;
      relink_block(n->blocks[i]);
    }
  }
  b->first = NEW(first);
  b->last = NEW(last);
}

static void clear_aux(mil_block *b) {
  for (mil_op *op = b->first; op; op = op->next) {
    op->aux = NULL;
    for (int32_t i = 0; i < op->n_blocks; i++) clear_aux(op->blocks[i]);
  }
}

mil_status mil_program_compact_ops(mil_program *p) {
  ir_arena *to = ir_arena_new(p->alloc);
  if (!to) return MIL_ERR_NOMEM;
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs; s++)
      if (!copy_block(f->specs[s].block, to, 0)) {
        /* nothing was rewritten yet: the program is as it was */
        for (int32_t fj = 0; fj < p->n_functions; fj++)
          for (int32_t t = 0; t < p->functions[fj]->n_specs; t++) clear_aux(p->functions[fj]->specs[t].block);
        ir_arena_free(to);
        return MIL_ERR_NOMEM;
      }
  }
  /* every op now has its copy in op->aux; the copies still point at the old
   * records, which stay readable until the old arena is freed below */
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs; s++) relink_block(f->specs[s].block);
  }
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs; s++) clear_aux(f->specs[s].block);
  }
  ir_arena_free(p->ops);
  p->ops = to;
  p->ops_made = 0;
  return MIL_OK;
}

mil_status mil_program_compact_ops_if_worthwhile(mil_program *p) {
  /* a quarter of the ops are new since the last compaction (or the load) */
  if (p->ops_made < 64 || p->ops_made * 4 < p->n_ops) return MIL_OK;
  return mil_program_compact_ops(p);
}
