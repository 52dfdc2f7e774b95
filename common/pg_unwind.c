/* pg_unwind.c: the cached DWARF stack walk (pg_unwind.h).
 * - rule_for(): the unwind rule at one return address, from .eh_frame: the object containing
 *   it (dl_iterate_phdr), its .eh_frame_hdr's sorted table (binary search) to the FDE, the CIE's
 *   and FDE's call-frame instructions run up to the address.
 * - A fixed open-addressing table maps return addresses to packed rules. A slot's key is set
 *   once (0 -> address, compare-and-swap) and its rule published after it with a release store
 *   of a word whose VALID bit is set; slots never change again, so readers take no lock. */
#include "pg_unwind.h"

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

/* ---- packed rules ---------------------------------------------------------------------------- */
enum {
  R_VALID = 63,      /* published */
  R_OUTERMOST = 62,  /* the return address is undefined: no caller */
  R_CFA_FP = 61,     /* CFA = rbp + off (else rsp + off) */
  R_FP_SAVED = 60,   /* the caller's rbp is at CFA + fp_off (else rbp is unchanged) */
  R_UNSUPPORTED = 59,
  R_END = 58,        /* in code where a frame-pointer walk may end (pg_unwind_set_end_test) */
};
#define BIT(b) ((uint64_t)1 << (b))

static uint64_t pack(bool outermost, bool cfa_fp, int32_t cfa_off, bool fp_saved, int16_t fp_off) {
  return BIT(R_VALID) | (outermost ? BIT(R_OUTERMOST) : 0) | (cfa_fp ? BIT(R_CFA_FP) : 0) |
         (fp_saved ? BIT(R_FP_SAVED) : 0) | (uint64_t)(uint32_t)cfa_off |
         (uint64_t)(uint16_t)fp_off << 32;
}
static const uint64_t UNSUPPORTED = BIT(R_VALID) | BIT(R_UNSUPPORTED);

/* ---- reading DWARF ------------------------------------------------------------------------------ */
typedef struct cursor {
  const uint8_t *p, *end;
  bool bad;
} cursor_t;

static uint64_t uleb(cursor_t *c) {
  uint64_t v = 0;
  for (unsigned shift = 0; c->p < c->end && shift < 64; shift += 7) {
    uint8_t b = *c->p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  c->bad = true;
  return 0;
}

static int64_t sleb(cursor_t *c) {
  int64_t v = 0;
  unsigned shift = 0;
  for (; c->p < c->end && shift < 64;) {
    uint8_t b = *c->p++;
    v |= (int64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
      return v;
    }
  }
  c->bad = true;
  return 0;
}

static uint64_t fixed(cursor_t *c, unsigned size) {
  if ((size_t)(c->end - c->p) < size) {
    c->bad = true;
    return 0;
  }
  uint64_t v = 0;
  memcpy(&v, c->p, size); /* little-endian */
  c->p += size;
  return v;
}

/* A pointer in DW_EH_PE encoding `enc` (datarel relative to `data`). */
static uintptr_t encoded(cursor_t *c, uint8_t enc, uintptr_t data) {
  if (enc == 0xff) return 0; /* DW_EH_PE_omit */
  uintptr_t at = (uintptr_t)c->p, v;
  switch (enc & 0x0f) {
    case 0x00: v = (uintptr_t)fixed(c, 8); break;
    case 0x01: v = (uintptr_t)uleb(c); break;
    case 0x02: v = (uintptr_t)fixed(c, 2); break;
    case 0x03: v = (uintptr_t)fixed(c, 4); break;
    case 0x04: v = (uintptr_t)fixed(c, 8); break;
    case 0x09: v = (uintptr_t)sleb(c); break;
    case 0x0a: v = (uintptr_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uintptr_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = (uintptr_t)fixed(c, 8); break;
    default: c->bad = true; return 0;
  }
  switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += at; break;   /* pcrel */
    case 0x30: v += data; break; /* datarel */
    default: c->bad = true; return 0;
  }
  if (enc & 0x80) c->bad = true; /* indirect: not in the pointers we read */
  return v;
}

/* ---- finding the FDE ------------------------------------------------------------------------- */
typedef struct find {
  uintptr_t pc;
  const uint8_t *hdr; /* .eh_frame_hdr of the object containing pc */
  size_t hdr_len;
} find_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  find_t *f = data;
  const ElfW(Phdr) *eh = NULL;
  bool inside = false;
  for (unsigned i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD) {
      uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
      if (f->pc >= lo && f->pc < lo + ph->p_memsz) inside = true;
    } else if (ph->p_type == PT_GNU_EH_FRAME) {
      eh = ph;
    }
  }
  if (!inside) return 0;
  if (eh) {
    f->hdr = (const uint8_t *)(info->dlpi_addr + eh->p_vaddr);
    f->hdr_len = eh->p_memsz;
  }
  return 1;
}

/* The FDE covering pc (its address), or NULL. */
static const uint8_t *find_fde(uintptr_t pc) {
  find_t f = {.pc = pc};
  if (!dl_iterate_phdr(find_object, &f) || !f.hdr || f.hdr_len < 12) return NULL;
  const uint8_t *h = f.hdr;
  if (h[0] != 1 || h[3] != 0x3b) return NULL; /* version 1; table of datarel sdata4 pairs */
  cursor_t c = {h + 4, h + f.hdr_len, false};
  encoded(&c, h[1], (uintptr_t)h); /* the .eh_frame pointer */
  uint64_t count = encoded(&c, h[2], (uintptr_t)h);
  if (c.bad || count == 0) return NULL;
  const int32_t *table = (const int32_t *)c.p; /* pairs: initial location, FDE */
  if ((size_t)(c.end - c.p) < count * 8) return NULL;
  size_t lo = 0, hi = count;
  while (hi - lo > 1) { /* the last entry whose start is <= pc */
    size_t mid = lo + (hi - lo) / 2;
    if ((uintptr_t)h + (intptr_t)table[2 * mid] <= pc) lo = mid;
    else hi = mid;
  }
  if ((uintptr_t)h + (intptr_t)table[2 * lo] > pc) return NULL;
  return h + (intptr_t)table[2 * lo + 1];
}

/* ---- running the call-frame instructions ------------------------------------------------------ */
enum { REG_RBP = 6, REG_RSP = 7 };
typedef struct frame_rules {
  unsigned cfa_reg;
  int64_t cfa_off;
  bool cfa_expr;
  int fp_how; /* 0: same value, 1: saved at CFA + fp_off, 2: something else */
  int64_t fp_off;
  int ra_how; /* 0: saved at CFA + ra_off (the usual -8), 1: undefined, 2: something else */
  int64_t ra_off;
} frame_rules_t;

typedef struct cie {
  uint64_t code_align;
  int64_t data_align;
  unsigned ra_reg;
  uint8_t fde_enc;
  bool has_aug;
  cursor_t insns;
} cie_t;

static bool parse_cie(const uint8_t *p, cie_t *cie) {
  uint32_t len;
  memcpy(&len, p, 4);
  if (len == 0 || len == 0xffffffffu) return false;
  cursor_t c = {p + 4, p + 4 + len, false};
  if (fixed(&c, 4) != 0) return false; /* CIE id */
  uint8_t version = (uint8_t)fixed(&c, 1);
  const char *aug = (const char *)c.p;
  size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
  c.p += aug_len + 1;
  if (strstr(aug, "eh")) return false;
  cie->code_align = uleb(&c);
  cie->data_align = sleb(&c);
  cie->ra_reg = version == 1 ? (unsigned)fixed(&c, 1) : (unsigned)uleb(&c);
  cie->fde_enc = 0; /* absptr */
  cie->has_aug = aug[0] == 'z';
  if (cie->has_aug) {
    uint64_t n = uleb(&c);
    cursor_t a = {c.p, c.p + n, false};
    if (a.end > c.end) return false;
    for (const char *s = aug + 1; *s; s++) {
      if (*s == 'R') cie->fde_enc = (uint8_t)fixed(&a, 1);
      else if (*s == 'L') fixed(&a, 1);
      else if (*s == 'P') {
        uint8_t enc = (uint8_t)fixed(&a, 1);
        encoded(&a, enc & 0x7f, 0);
      } else if (*s != 'S' && *s != 'B') return false;
    }
    if (a.bad) return false;
    c.p += n;
  }
  cie->insns = c;
  return !c.bad;
}

/* Runs insns while the location stays <= target. initial: the CIE's rules (for restore). */
static bool run(cursor_t c, const cie_t *cie, uintptr_t loc, uintptr_t target, frame_rules_t *r,
                const frame_rules_t *initial) {
  frame_rules_t stack[8];
  unsigned depth = 0;
  while (c.p < c.end && !c.bad) {
    uint8_t op = *c.p++;
    uint64_t reg = 0;
    int64_t off = 0;
    uint64_t delta = 0;
    switch (op & 0xc0) {
      case 0x40: delta = op & 0x3f; goto advance;
      case 0x80:
        reg = op & 0x3f;
        off = (int64_t)uleb(&c) * cie->data_align;
        goto set_offset;
      case 0xc0:
        reg = op & 0x3f;
        goto restore;
      default: break;
    }
    switch (op) {
      case 0x00: break;
      case 0x01: return true; /* set_loc: rare; treated as the end of what applies */
      case 0x02: delta = fixed(&c, 1); goto advance;
      case 0x03: delta = fixed(&c, 2); goto advance;
      case 0x04: delta = fixed(&c, 4); goto advance;
      case 0x05: reg = uleb(&c); off = (int64_t)uleb(&c) * cie->data_align; goto set_offset;
      case 0x06: reg = uleb(&c); goto restore;
      case 0x07: /* undefined */
        reg = uleb(&c);
        if (reg == cie->ra_reg) r->ra_how = 1;
        else if (reg == REG_RBP) r->fp_how = 2;
        break;
      case 0x08: /* same value */
        reg = uleb(&c);
        if (reg == REG_RBP) r->fp_how = 0;
        else if (reg == cie->ra_reg) r->ra_how = 2;
        break;
      case 0x09: /* register */
        reg = uleb(&c);
        uleb(&c);
        if (reg == REG_RBP) r->fp_how = 2;
        else if (reg == cie->ra_reg) r->ra_how = 2;
        break;
      case 0x0a:
        if (depth == 8) return false;
        stack[depth++] = *r;
        break;
      case 0x0b:
        if (depth == 0) return false;
        {
          frame_rules_t saved = stack[--depth];
          /* restore_state brings back the register rules; the CFA rule too (as GCC emits it) */
          *r = saved;
        }
        break;
      case 0x0c: r->cfa_reg = (unsigned)uleb(&c); r->cfa_off = (int64_t)uleb(&c); r->cfa_expr = false; break;
      case 0x0d: r->cfa_reg = (unsigned)uleb(&c); r->cfa_expr = false; break;
      case 0x0e: r->cfa_off = (int64_t)uleb(&c); break;
      case 0x0f: /* def_cfa_expression */
        c.p += uleb(&c);
        r->cfa_expr = true;
        break;
      case 0x10: /* expression */
      case 0x16: /* val_expression */
        reg = uleb(&c);
        c.p += uleb(&c);
        if (reg == REG_RBP) r->fp_how = 2;
        else if (reg == cie->ra_reg) r->ra_how = 2;
        break;
      case 0x11: reg = uleb(&c); off = sleb(&c) * cie->data_align; goto set_offset;
      case 0x12:
        r->cfa_reg = (unsigned)uleb(&c);
        r->cfa_off = sleb(&c) * cie->data_align;
        r->cfa_expr = false;
        break;
      case 0x13: r->cfa_off = sleb(&c) * cie->data_align; break;
      case 0x14: /* val_offset */
      case 0x15:
        reg = uleb(&c);
        if (op == 0x14) uleb(&c);
        else sleb(&c);
        if (reg == REG_RBP) r->fp_how = 2;
        else if (reg == cie->ra_reg) r->ra_how = 2;
        break;
      case 0x2e: uleb(&c); break; /* GNU_args_size */
      case 0x2f: reg = uleb(&c); off = -(int64_t)uleb(&c) * cie->data_align; goto set_offset;
      default: return false;
    }
    continue;
  advance:
    loc += delta * cie->code_align;
    if (loc > target) return true;
    continue;
  set_offset:
    if (reg == REG_RBP) r->fp_how = 1, r->fp_off = off;
    else if (reg == cie->ra_reg) r->ra_how = 0, r->ra_off = off;
    continue;
  restore:
    if (!initial) continue; /* inside the CIE itself: nothing to restore to */
    if (reg == REG_RBP) r->fp_how = initial->fp_how, r->fp_off = initial->fp_off;
    else if (reg == cie->ra_reg) r->ra_how = initial->ra_how, r->ra_off = initial->ra_off;
    continue;
  }
  return !c.bad;
}

static bool (*_Atomic g_end_test)(uintptr_t ret);

void pg_unwind_set_end_test(bool (*is_end)(uintptr_t ret)) {
  atomic_store_explicit(&g_end_test, is_end, memory_order_release);
}

static uint64_t rule_for_frame(uintptr_t ret);

/* The packed rule for the frame whose return address is ret (its call is at ret - 1). */
static uint64_t rule_for(uintptr_t ret) {
  uint64_t r = rule_for_frame(ret);
  bool (*is_end)(uintptr_t) = atomic_load_explicit(&g_end_test, memory_order_acquire);
  return is_end && is_end(ret) ? r | BIT(R_END) : r;
}

static uint64_t rule_for_frame(uintptr_t ret) {
  uintptr_t target = ret - 1;
  const uint8_t *fde = find_fde(target);
  if (!fde) return UNSUPPORTED;
  uint32_t len;
  memcpy(&len, fde, 4);
  if (len == 0 || len == 0xffffffffu) return UNSUPPORTED;
  cursor_t c = {fde + 4, fde + 4 + len, false};
  int32_t cie_ptr = (int32_t)fixed(&c, 4);
  if (cie_ptr == 0) return UNSUPPORTED; /* a CIE, not an FDE */
  cie_t cie;
  if (!parse_cie(fde + 4 - cie_ptr, &cie)) return UNSUPPORTED;
  uintptr_t start = encoded(&c, cie.fde_enc, 0);
  uintptr_t range = encoded(&c, cie.fde_enc & 0x0f, 0);
  if (c.bad || target < start || target >= start + range) return UNSUPPORTED;
  if (cie.has_aug) c.p += uleb(&c);
  frame_rules_t r = {.cfa_reg = REG_RSP, .cfa_off = 8, .ra_off = -8};
  if (!run(cie.insns, &cie, start, (uintptr_t)-1, &r, NULL)) return UNSUPPORTED;
  frame_rules_t initial = r;
  if (!run(c, &cie, start, target, &r, &initial)) return UNSUPPORTED;
  if (r.ra_how == 1) return pack(true, false, 0, false, 0);
  if (r.cfa_expr || (r.cfa_reg != REG_RSP && r.cfa_reg != REG_RBP) || r.ra_how != 0 ||
      r.ra_off != -8 || r.fp_how == 2 || r.cfa_off < 0 || r.cfa_off > INT32_MAX ||
      (r.fp_how == 1 && (r.fp_off < INT16_MIN || r.fp_off > INT16_MAX)))
    return UNSUPPORTED;
  return pack(false, r.cfa_reg == REG_RBP, (int32_t)r.cfa_off, r.fp_how == 1,
              (int16_t)r.fp_off);
}

/* ---- the table ------------------------------------------------------------------------------- */
#define SLOTS 16384 /* 256 KiB */
#define PROBES 16
static struct {
  _Atomic uintptr_t key;
  _Atomic uint64_t rule;
} g_slots[SLOTS];
static atomic_ulong g_cached, g_table_full;

static inline unsigned slot_of(uintptr_t pc) {
  return (unsigned)((pc * 0x9E3779B97F4A7C15ull) >> 50) % SLOTS;
}

/* The rule for ret if the table has it in its first slot (most do): 0 otherwise. */
static inline uint64_t cached_rule(uintptr_t ret) {
  unsigned s = slot_of(ret);
  if (atomic_load_explicit(&g_slots[s].key, memory_order_acquire) != ret) return 0;
  return atomic_load_explicit(&g_slots[s].rule, memory_order_acquire);
}

/* The rule for ret: from the table, else computed (and kept) unless cached_only. 0: not known
 * and not computed. */
__attribute__((noinline)) static uint64_t lookup(uintptr_t ret, bool cached_only) {
  unsigned s = slot_of(ret);
  for (unsigned i = 0; i < PROBES; i++, s = (s + 1) % SLOTS) {
    uintptr_t k = atomic_load_explicit(&g_slots[s].key, memory_order_acquire);
    if (k == ret) {
      uint64_t r = atomic_load_explicit(&g_slots[s].rule, memory_order_acquire);
      if (r) return r;
      break; /* being published by another thread */
    }
    if (k == 0) {
      if (cached_only) return 0;
      uintptr_t expected = 0;
      if (!atomic_compare_exchange_strong_explicit(&g_slots[s].key, &expected, ret,
                                                   memory_order_acq_rel, memory_order_acquire)) {
        if (expected != ret) continue; /* another address took it */
        break;
      }
      uint64_t r = rule_for(ret);
      atomic_store_explicit(&g_slots[s].rule, r, memory_order_release);
      atomic_fetch_add_explicit(&g_cached, 1, memory_order_relaxed);
      return r;
    }
  }
  if (cached_only) return 0;
  atomic_fetch_add_explicit(&g_table_full, 1, memory_order_relaxed);
  return rule_for(ret);
}

static inline void log_word(pg_unwind_log_t *log, uintptr_t at, uintptr_t val) {
  if (!log) return;
  if (log->n < PG_UNWIND_LOG_MAX) log->at[log->n] = at, log->val[log->n] = val;
  log->n++;
}

/* A saved rbp matters to the walk only if a later frame's CFA is computed from it, before the
 * next saved rbp replaces it: its word is logged, and taken out again (the log's last word moved
 * into its place: the check is of every word, in any order) when nothing used it. *unused is
 * the index of the logged rbp no frame has used yet (-1: none). */
static inline void log_fp(pg_unwind_log_t *log, int *unused, uintptr_t at, uintptr_t val) {
  if (!log) return;
  if (*unused >= 0) { /* the rbp before it was never used: this one takes its slot */
    log->at[*unused] = at, log->val[*unused] = val;
    return;
  }
  if (log->n < PG_UNWIND_LOG_MAX) *unused = (int)log->n;
  log_word(log, at, val);
}

static inline void log_drop_unused(pg_unwind_log_t *log, int unused) {
  if (!log || unused < 0 || log->n > PG_UNWIND_LOG_MAX) return; /* (a log too long is unused) */
  unsigned last = log->n - 1;
  log->at[unused] = log->at[last], log->val[unused] = log->val[last];
  log->n = last;
}

/* Both entry points; log NULL folds away in pg_unwind_continue. */
static inline __attribute__((always_inline)) pg_unwind_end_t
continue_walk(pg_unwind_regs_t r, void **pc, unsigned *np, unsigned max, uintptr_t lo,
              uintptr_t hi, unsigned flags, bool *only_end, pg_unwind_log_t *log) {
  unsigned n = *np, first = n;
  int fp_unused = -1; /* log_fp */
  if (log) log->n = 0;
  uint64_t all = ~(uint64_t)0; /* the rules of the frames recorded, ANDed: R_END if all are */
  uintptr_t span = hi - lo;
  pg_unwind_end_t end = PG_UNWIND_FULL;
  uint64_t stop = BIT(R_UNSUPPORTED) | BIT(R_OUTERMOST);
  if (flags & PG_UNWIND_STOP_AT_END) stop |= BIT(R_END); /* the first frame only */
  while (n < max) {
    uint64_t rule = cached_rule(r.pc);
    if (__builtin_expect(!rule, 0)) {
      rule = lookup(r.pc, flags & PG_UNWIND_CACHED_ONLY);
      if (!rule) rule = UNSUPPORTED;
    }
    if (n != first) all &= rule;
    if (__builtin_expect(rule & stop, 0)) {
      end = (rule & BIT(R_UNSUPPORTED)) ? PG_UNWIND_UNSUPPORTED
            : (rule & BIT(R_OUTERMOST)) ? PG_UNWIND_OUTERMOST
                                        : PG_UNWIND_END_FRAME;
      break;
    }
    stop &= ~BIT(R_END);
    if (rule & BIT(R_CFA_FP)) fp_unused = -1; /* the rbp's word counts */
    uintptr_t cfa = ((rule & BIT(R_CFA_FP)) ? r.fp : r.sp) + (uint32_t)rule;
    /* The return address at CFA - 8 and the saved rbp must lie in the stack. */
    if (__builtin_expect(cfa - lo - 8 > span - 8 || (cfa & 7), 0)) {
      end = PG_UNWIND_UNSUPPORTED;
      break;
    }
    uintptr_t ret = ((const uintptr_t *)cfa)[-1];
    log_word(log, cfa - 8, ret);
    if (rule & BIT(R_FP_SAVED)) {
      uintptr_t at = cfa + (uintptr_t)(intptr_t)(int16_t)(rule >> 32);
      if (__builtin_expect(at - lo > span - 8, 0)) {
        end = PG_UNWIND_UNSUPPORTED;
        break;
      }
      r.fp = *(const uintptr_t *)at;
      log_fp(log, &fp_unused, at, r.fp);
    }
    if (ret == 0) {
      end = PG_UNWIND_OUTERMOST;
      break;
    }
    pc[n++] = (void *)ret;
    r.pc = ret;
    r.sp = cfa;
  }
  log_drop_unused(log, fp_unused);
  if (only_end)
    *only_end = n != first && end == PG_UNWIND_OUTERMOST && (all & BIT(R_END));
  *np = n;
  return end;
}

pg_unwind_end_t pg_unwind_continue(pg_unwind_regs_t r, void **pc, unsigned *np, unsigned max,
                                   uintptr_t lo, uintptr_t hi, unsigned flags, bool *only_end) {
  return continue_walk(r, pc, np, max, lo, hi, flags, only_end, NULL);
}

pg_unwind_end_t pg_unwind_continue_logged(pg_unwind_regs_t r, void **pc, unsigned *np,
                                          unsigned max, uintptr_t lo, uintptr_t hi,
                                          unsigned flags, bool *only_end, pg_unwind_log_t *log) {
  return continue_walk(r, pc, np, max, lo, hi, flags, only_end, log);
}

void pg_unwind_stats(pg_unwind_stats_t *out) {
  out->cached = atomic_load_explicit(&g_cached, memory_order_relaxed);
  out->table_full = atomic_load_explicit(&g_table_full, memory_order_relaxed);
}
