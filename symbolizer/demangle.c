/* demangle.c - Itanium C++ ABI demangler (interface in hc_demangle.h).
 *
 * Purpose: turn "_ZNKSt6vectorIiSaIiEE4sizeEv" into
 * "std::vector<int, std::allocator<int> >::size() const" inside the
 * process, with no malloc and no libstdc++: static programs have no
 * __cxa_demangle to find, and loading libstdc++ just to print a report would
 * run its constructors in a program that never asked for them.
 *
 * Two passes over a node pool in the caller's work area:
 *  1. parse: a recursive-descent reader of the ABI grammar builds nodes and
 *     the substitution table (S_, S0_, ...) in the order the ABI defines;
 *     template parameters (T_) stay references;
 *  2. print: walks the tree into the bounded output buffer.  T_ is resolved
 *     here, against the template arguments of the enclosing function
 *     template (a generic lambda's own T_ prints "auto:N").  Types are
 *     printed with C's declarator rule: pointers, references and qualifiers
 *     collect on a small stack-allocated declarator chain (decl_t) that is
 *     rendered around the name, so "int (*(*)(char))()" comes out right.
 *
 * Invariants: every read is checked against the end of the input; every
 * node index and substitution id is checked; parse depth, print depth and
 * print steps are capped, so substitution chains that would expand
 * exponentially stop with a refusal.  What is not supported (fold
 * expressions, new/delete/throw and braced lists in expressions, srN
 * scopes, template conversion operators naming their own arguments,
 * lambdas with explicit template heads, modules) is refused: the caller
 * prints the mangled name instead.
 */
#include "hc_demangle.h"

#include <string.h>

enum {
  K_NAME,     /* s: identifier or fixed text */
  K_BUILTIN,  /* s: type name, f: literal print kind */
  K_STD,      /* s: "std::allocator"..., a: -1 */
  K_QUAL,     /* a::b */
  K_TEMPLATE, /* a<b>; b: list or -1 */
  K_LIST,     /* a: item, b: next cell */
  K_PACK,     /* argument pack: a: list or -1 */
  K_TPARM,    /* f unused, a: index */
  K_PTR, K_REF, K_RREF, K_CPLX, K_IMAG, /* a: child */
  K_CV,       /* a: child, s/len: qualifier letters (rVK) */
  K_VQUAL,    /* a: child, b: vendor qualifier name */
  K_FTYPE,    /* a: return type or -1, b: params, s/len: quals (K, V, r, Do, Dx), f: ref-qual */
  K_ARRAY,    /* a: element, b: dimension or -1 */
  K_VECTOR,   /* a: element, b: dimension */
  K_PTRMEM,   /* a: class, b: member type */
  K_TYPED,    /* a: name, b: K_FTYPE; s/len: method quals, f: ref-qual */
  K_SPECIAL,  /* s: prefix text, a: child */
  K_CTVTBL,   /* "construction vtable for " b "-in-" a */
  K_REFTEMP,  /* "reference temporary #" b " for " a */
  K_CTOR, K_DTOR, /* a: name */
  K_TAGGED,   /* a: name, b: tag */
  K_LOCAL,    /* a: encoding, b: entity */
  K_DEFARG,   /* f unused, a: entity, b: number */
  K_LAMBDA,   /* a: params list or -1, b: number */
  K_UNNAMED,  /* b: number */
  K_LITERAL,  /* a: type, s/len: value, f: negative */
  K_OPERATOR, /* f: operator index */
  K_LITOP,    /* operator"" : a: name */
  K_CONV,     /* conversion operator: a: type */
  K_CLONE,    /* a: child, s/len: suffix */
  K_PACKEXP,  /* a: pattern */
  K_DECLTYPE, /* a: expression */
  K_FPARM,    /* b: index (0 = this) */
  K_UNARY,    /* f: operator index, a: operand */
  K_BINARY,   /* f: operator index, a: left, b: right */
  K_TRINARY,  /* f: operator index, a: first, b: list of two */
  K_CAST,     /* a: type, b: operand (expression) */
  K_NUMBER,   /* b: value (printed in decimal) */
};

enum { P_DEFAULT, P_INT, P_UNSIGNED, P_LONG, P_ULONG, P_LLONG, P_ULLONG, P_BOOL, P_FLOAT, P_VOID };

typedef struct {
  char code[3];
  const char *name;
  uint8_t arity;
} op_t;

/* Operator codes and the text c++filt prints for them ("sizeof " keeps its
 * space in expressions; operator names drop it). */
static const op_t ops[] = {
  {"aN", "&=", 2}, {"aS", "=", 2}, {"aa", "&&", 2}, {"ad", "&", 1}, {"an", "&", 2},
  {"at", "alignof ", 1}, {"aw", "co_await ", 1}, {"az", "alignof ", 1}, {"cl", "()", 2},
  {"cm", ",", 2}, {"co", "~", 1}, {"dV", "/=", 2}, {"da", "delete[] ", 1}, {"de", "*", 1},
  {"dl", "delete ", 1}, {"dt", ".", 2}, {"dv", "/", 2}, {"eO", "^=", 2}, {"eo", "^", 2},
  {"eq", "==", 2}, {"ge", ">=", 2}, {"gt", ">", 2}, {"ix", "[]", 2}, {"lS", "<<=", 2},
  {"le", "<=", 2}, {"ls", "<<", 2}, {"lt", "<", 2}, {"mI", "-=", 2}, {"mL", "*=", 2},
  {"mi", "-", 2}, {"ml", "*", 2}, {"mm", "--", 1}, {"na", "new[]", 3}, {"ne", "!=", 2},
  {"ng", "-", 1}, {"nt", "!", 1}, {"nw", "new", 3}, {"oR", "|=", 2}, {"oo", "||", 2},
  {"or", "|", 2}, {"pL", "+=", 2}, {"pl", "+", 2}, {"pm", "->*", 2}, {"pp", "++", 1},
  {"ps", "+", 1}, {"pt", "->", 2}, {"qu", "?", 3}, {"rM", "%=", 2}, {"rS", ">>=", 2},
  {"rm", "%", 2}, {"rs", ">>", 2}, {"sZ", "sizeof...", 1}, {"ss", "<=>", 2},
  {"st", "sizeof ", 1}, {"sz", "sizeof ", 1},
};
#define NOPS (int)(sizeof ops / sizeof ops[0])

typedef struct {
  char c;
  const char *name;
  uint8_t print;
} builtin_t;

static const builtin_t builtins[] = {
  {'a', "signed char", P_DEFAULT}, {'b', "bool", P_BOOL}, {'c', "char", P_DEFAULT},
  {'d', "double", P_FLOAT}, {'e', "long double", P_FLOAT}, {'f', "float", P_FLOAT},
  {'g', "__float128", P_FLOAT}, {'h', "unsigned char", P_DEFAULT}, {'i', "int", P_INT},
  {'j', "unsigned int", P_UNSIGNED}, {'l', "long", P_LONG}, {'m', "unsigned long", P_ULONG},
  {'n', "__int128", P_DEFAULT}, {'o', "unsigned __int128", P_DEFAULT},
  {'s', "short", P_DEFAULT}, {'t', "unsigned short", P_DEFAULT}, {'v', "void", P_VOID},
  {'w', "wchar_t", P_DEFAULT}, {'x', "long long", P_LLONG},
  {'y', "unsigned long long", P_ULLONG}, {'z', "...", P_DEFAULT},
};

/* The std:: abbreviations: short text, the text used before a constructor
 * or destructor (c++filt spells the class out there), and the name such a
 * constructor gets. */
typedef struct {
  char c;
  const char *simple, *full, *last;
} stdsub_t;

static const stdsub_t stdsubs[] = {
  {'t', "std", "std", NULL},
  {'a', "std::allocator", "std::allocator", "allocator"},
  {'b', "std::basic_string", "std::basic_string", "basic_string"},
  {'s', "std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
   "basic_string"},
  {'i', "std::istream", "std::basic_istream<char, std::char_traits<char> >", "basic_istream"},
  {'o', "std::ostream", "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"},
  {'d', "std::iostream", "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"},
};

#define MAX_DEPTH 64         /* parse and print recursion: real names need <= 32;
                              * at most about 40 KiB of stack */
#define MAX_STEPS 400000     /* print node visits: stops exponential expansion */

typedef struct {
  const char *p, *end;
  hci_dm_node_t *n;
  int nn;
  int32_t *subs;
  int nsubs;
  int depth;
  int last_name;     /* ctor/dtor name: the last source name read (not inside template args) */
  bool in_conv;      /* parsing a conversion operator's type */
  bool in_expr;
  bool fail;
} parser_t;

/* ---------------------------------------------------------------- parse */

static int node(parser_t *ps, int k, int a, int b) {
  if (ps->fail || ps->nn >= HC_DM_MAX_NODES) {
    ps->fail = true;
    return -1;
  }
  hci_dm_node_t *x = &ps->n[ps->nn];
  x->k = (uint8_t)k;
  x->f = 0;
  x->len = 0;
  x->a = a;
  x->b = b;
  x->s = NULL;
  return ps->nn++;
}

static int text_node(parser_t *ps, int k, const char *s, size_t len) {
  int i = node(ps, k, -1, -1);
  if (i < 0) return -1;
  ps->n[i].s = s;
  ps->n[i].len = (uint16_t)len;
  return i;
}

static int fixed(parser_t *ps, const char *s) { return text_node(ps, K_NAME, s, strlen(s)); }

static bool bad(parser_t *ps) {
  ps->fail = true;
  return false;
}

static char peek(const parser_t *ps) { return ps->p < ps->end ? *ps->p : 0; }
static char peek2(const parser_t *ps) { return ps->p + 1 < ps->end ? ps->p[1] : 0; }

static bool eat(parser_t *ps, char c) {
  if (peek(ps) != c) return false;
  ps->p++;
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }

static void add_sub(parser_t *ps, int i) {
  if (i < 0 || ps->nsubs >= HC_DM_MAX_SUBS) {
    ps->fail = true;
    return;
  }
  ps->subs[ps->nsubs++] = i;
}

/* [n] <decimal>; -1 on overflow or no digits when required. */
static long number(parser_t *ps, bool *neg) {
  bool n = eat(ps, 'n');
  if (neg) *neg = n;
  else if (n) return -1;
  long v = 0;
  while (is_digit(peek(ps))) {
    v = v * 10 + (*ps->p++ - '0');
    if (v > 0x7fffffff) return -1;
  }
  return v;
}

/* "_" -> 0, "<n>_" -> n + 1 (the ABI's <seq> style numbers) */
static long compact(parser_t *ps) {
  if (eat(ps, '_')) return 0;
  if (!is_digit(peek(ps))) return -1;
  long v = number(ps, NULL);
  if (v < 0 || !eat(ps, '_')) return -1;
  return v + 1;
}

/* <discriminator> ::= _ <digit> | __ <number> _ (read and dropped; a bare
 * "_" counts as 0, as c++filt reads "_ZGRZ1fvE1x_") */
static bool discriminator(parser_t *ps) {
  if (!eat(ps, '_')) return true;
  bool two = eat(ps, '_');
  long v = number(ps, NULL);
  if (v < 0) return bad(ps);
  if (two && v >= 10 && !eat(ps, '_')) return bad(ps);
  return true;
}

static int parse_type(parser_t *ps);
static int parse_encoding(parser_t *ps, bool top);
static int parse_name(parser_t *ps, bool substable);
static int parse_template_args(parser_t *ps);
static int parse_expression(parser_t *ps);
static int parse_prefix(parser_t *ps, bool substable);

static int source_name(parser_t *ps) {
  if (!is_digit(peek(ps))) return bad(ps), -1;
  long len = number(ps, NULL);
  if (len <= 0 || len > ps->end - ps->p) return bad(ps), -1;
  const char *s = ps->p;
  ps->p += len;
  int i;
  if (len >= 10 && memcmp(s, "_GLOBAL_", 8) == 0 && (s[8] == '.' || s[8] == '_' || s[8] == '$') &&
      s[9] == 'N')
    i = fixed(ps, "(anonymous namespace)");
  else
    i = text_node(ps, K_NAME, s, (size_t)len);
  ps->last_name = i;
  return i;
}

static int find_op(const char *c) {
  for (int i = 0; i < NOPS; i++)
    if (ops[i].code[0] == c[0] && ops[i].code[1] == c[1]) return i;
  return -1;
}

/* <operator-name>; in an expression "cv" is a cast (K_CAST, no operand yet) */
static int operator_name(parser_t *ps) {
  if (ps->end - ps->p < 2) return bad(ps), -1;
  if (ps->p[0] == 'c' && ps->p[1] == 'v') {
    ps->p += 2;
    bool was = ps->in_conv;
    ps->in_conv = !ps->in_expr;
    int t = parse_type(ps);
    ps->in_conv = was;
    return node(ps, ps->in_expr ? K_CAST : K_CONV, t, -1);
  }
  if (ps->p[0] == 'l' && ps->p[1] == 'i') {
    ps->p += 2;
    return node(ps, K_LITOP, source_name(ps), -1);
  }
  int o = find_op(ps->p);
  if (o < 0) return bad(ps), -1;
  ps->p += 2;
  int i = node(ps, K_OPERATOR, -1, -1);
  if (i >= 0) ps->n[i].f = (uint8_t)o;
  return i;
}

/* <template-param> ::= T_ | T <number> _ */
static int template_param(parser_t *ps) {
  if (!eat(ps, 'T')) return bad(ps), -1;
  long v = compact(ps);
  if (v < 0) return bad(ps), -1;
  return node(ps, K_TPARM, (int)v, -1);
}

/* <bare-function-type> parameters up to E / end / '.'; a lone v is () */
static int parse_params(parser_t *ps) {
  int head = -1, tail = -1, count = 0;
  for (;;) {
    char c = peek(ps);
    if (c == 0 || c == 'E' || c == '.' || c == 'Q') break;
    if ((c == 'R' || c == 'O') && peek2(ps) == 'E') break;
    int t = parse_type(ps);
    int cell = node(ps, K_LIST, t, -1);
    if (ps->fail) return -1;
    if (tail < 0) head = cell;
    else ps->n[tail].b = cell;
    tail = cell;
    count++;
  }
  if (count == 0) return bad(ps), -1;
  int first = ps->n[head].a;
  if (count == 1 && ps->n[first].k == K_BUILTIN && ps->n[first].f == P_VOID) return node(ps, K_LIST, -1, -1);
  return head;
}

static int lambda(parser_t *ps) {
  ps->p += 2; /* Ul */
  char t = peek2(ps);
  if (peek(ps) == 'T' && (t == 'y' || t == 'n' || t == 't' || t == 'p'))
    return bad(ps), -1; /* explicit template head (Ty, Tn, Tt, Tp): not supported */
  int params = parse_params(ps);
  if (!eat(ps, 'E')) return bad(ps), -1;
  long num = compact(ps);
  if (num < 0) return bad(ps), -1;
  return node(ps, K_LAMBDA, params, (int)num);
}

static int unnamed_type(parser_t *ps) {
  ps->p += 2; /* Ut */
  long num = compact(ps);
  if (num < 0) return bad(ps), -1;
  int i = node(ps, K_UNNAMED, -1, (int)num);
  add_sub(ps, i);
  return i;
}

static int abi_tags(parser_t *ps, int name) {
  int hold = ps->last_name;
  while (!ps->fail && eat(ps, 'B')) name = node(ps, K_TAGGED, name, source_name(ps));
  ps->last_name = hold;
  return name;
}

static int ctor_dtor(parser_t *ps) {
  char c = peek(ps);
  ps->p++;
  if (c == 'C') {
    bool inheriting = eat(ps, 'I');
    char d = peek(ps);
    if (d < '1' || d > '5') return bad(ps), -1;
    ps->p++;
    if (inheriting) parse_type(ps);
    if (ps->last_name < 0) return bad(ps), -1;
    return node(ps, K_CTOR, ps->last_name, -1);
  }
  char d = peek(ps);
  if (d != '0' && d != '1' && d != '2' && d != '4' && d != '5') return bad(ps), -1;
  ps->p++;
  if (ps->last_name < 0) return bad(ps), -1;
  return node(ps, K_DTOR, ps->last_name, -1);
}

/* <unqualified-name> [<abi-tags>], joined to scope when there is one */
static int unqualified_name(parser_t *ps, int scope) {
  char c = peek(ps);
  int r;
  if (is_digit(c)) r = source_name(ps);
  else if (is_lower(c)) {
    if (c == 'o' && peek2(ps) == 'n') ps->p += 2;
    bool was = ps->in_expr;
    ps->in_expr = false;
    r = operator_name(ps);
    ps->in_expr = was;
  } else if (c == 'D' && peek2(ps) == 'C') return bad(ps), -1; /* structured binding */
  else if (c == 'C' || c == 'D') r = ctor_dtor(ps);
  else if (c == 'L') {
    ps->p++;
    r = source_name(ps);
    discriminator(ps);
  } else if (c == 'U' && peek2(ps) == 'l') r = lambda(ps);
  else if (c == 'U' && peek2(ps) == 't') r = unnamed_type(ps);
  else return bad(ps), -1;
  if (peek(ps) == 'B') r = abi_tags(ps, r);
  if (scope >= 0) r = node(ps, K_QUAL, scope, r);
  return r;
}

/* S_, S<seq>_, St, Sa, Sb, Ss, Si, So, Sd.  prefix: before C/D the long form. */
static int substitution(parser_t *ps, bool prefix) {
  if (!eat(ps, 'S')) return bad(ps), -1;
  char c = peek(ps);
  if (c == '_' || is_digit(c) || is_upper(c)) {
    unsigned long id = 0;
    if (!eat(ps, '_')) {
      for (;;) {
        c = peek(ps);
        if (c == '_') break;
        if (is_digit(c)) id = id * 36 + (unsigned long)(c - '0');
        else if (is_upper(c)) id = id * 36 + (unsigned long)(c - 'A' + 10);
        else return bad(ps), -1;
        if (id > HC_DM_MAX_SUBS) return bad(ps), -1;
        ps->p++;
      }
      ps->p++;
      id++;
    }
    if (id >= (unsigned long)ps->nsubs) return bad(ps), -1;
    return ps->subs[id];
  }
  for (size_t i = 0; i < sizeof stdsubs / sizeof stdsubs[0]; i++) {
    if (stdsubs[i].c != c) continue;
    ps->p++;
    if (stdsubs[i].last) ps->last_name = fixed(ps, stdsubs[i].last);
    (void)prefix;
    const char *t = stdsubs[i].full; /* c++filt runs in verbose mode */
    return text_node(ps, K_STD, t, strlen(t));
  }
  return bad(ps), -1;
}

/* <prefix> components until E (the caller eats it) */
static int parse_prefix(parser_t *ps, bool substable) {
  int r = -1;
  for (;;) {
    if (ps->fail) return -1;
    char c = peek(ps);
    if (c == 'D' && (peek2(ps) == 'T' || peek2(ps) == 't')) {
      if (r >= 0) return bad(ps), -1;
      r = parse_type(ps);
    } else if (c == 'I') {
      if (r < 0) return bad(ps), -1;
      r = node(ps, K_TEMPLATE, r, parse_template_args(ps));
    } else if (c == 'T') {
      if (r >= 0) return bad(ps), -1;
      r = template_param(ps);
    } else if (c == 'M') {
      if (r < 0) return bad(ps), -1;
      ps->p++;
      continue;
    } else if (c == 'S') {
      if (r >= 0) return bad(ps), -1;
      r = substitution(ps, true);
      continue;
    } else if (c == 'E' || c == 0) {
      /* a prefix ends after an unqualified name or template arguments, not
       * after a substitution or an M */
      return bad(ps), -1;
    } else {
      r = unqualified_name(ps, r);
    }
    if (ps->fail) return -1;
    if (peek(ps) == 'E') break;
    if (substable) add_sub(ps, r);
  }
  return r;
}

/* qualifier letters r V K at p; returns how many */
static size_t cv_letters(parser_t *ps) {
  const char *s = ps->p;
  while (peek(ps) == 'r' || peek(ps) == 'V' || peek(ps) == 'K') ps->p++;
  return (size_t)(ps->p - s);
}

/* N [<CV-qualifiers>] [<ref-qualifier>] <prefix> E: qualifiers go to q, qlen and ref */
static int nested_name(parser_t *ps, const char **q, size_t *qlen, int *ref) {
  ps->p++; /* N */
  *q = ps->p;
  *qlen = cv_letters(ps);
  *ref = 0;
  if (peek(ps) == 'R') *ref = 1, ps->p++;
  else if (peek(ps) == 'O') *ref = 2, ps->p++;
  int r = parse_prefix(ps, true);
  if (!eat(ps, 'E')) return bad(ps), -1;
  return r;
}

typedef struct mquals mquals_t;
static int parse_name_q(parser_t *ps, bool substable, mquals_t *mq);

/* Z <encoding> E <entity> [<discriminator>]; the entity's method qualifiers
 * (a lambda's "const" operator()) go to mq */
static int local_name(parser_t *ps, mquals_t *mq) {
  ps->p++; /* Z */
  int fn = parse_encoding(ps, false);
  if (ps->fail || !eat(ps, 'E')) return bad(ps), -1;
  int entity;
  if (eat(ps, 's')) {
    discriminator(ps);
    entity = fixed(ps, "string literal");
  } else {
    long num = -1;
    if (eat(ps, 'd')) {
      num = compact(ps);
      if (num < 0) return bad(ps), -1;
    }
    entity = parse_name_q(ps, false, mq);
    if (ps->fail) return -1;
    int ek = ps->n[entity].k;
    if (ek != K_LAMBDA && ek != K_UNNAMED) discriminator(ps);
    if (num >= 0) entity = node(ps, K_DEFARG, entity, (int)num);
  }
  if (ps->fail) return -1;
  /* the containing function's return type is not printed (c++filt) */
  if (ps->n[fn].k == K_TYPED) {
    int ft = ps->n[fn].b;
    ps->n[ft].a = -1;
  }
  return node(ps, K_LOCAL, fn, entity);
}

/* Method qualifiers of the last nested name parsed by parse_name. */
struct mquals {
  const char *q;
  size_t qlen;
  int ref;
};

static int parse_name_q(parser_t *ps, bool substable, mquals_t *mq) {
  char c = peek(ps);
  int dc = -1;
  bool subst = false;
  if (mq) mq->q = NULL, mq->qlen = 0, mq->ref = 0;
  if (c == 'N') {
    mquals_t dummy;
    dc = nested_name(ps, mq ? &mq->q : &dummy.q, mq ? &mq->qlen : &dummy.qlen, mq ? &mq->ref : &dummy.ref);
    if (!mq && dummy.qlen + (size_t)dummy.ref != 0) return bad(ps), -1; /* "N K ... E" as a type */
    if (substable) add_sub(ps, dc);
    return dc;
  }
  if (c == 'Z') {
    dc = local_name(ps, mq);
    if (substable) add_sub(ps, dc);
    return dc;
  }
  if (c == 'U') {
    dc = unqualified_name(ps, -1);
    if (substable) add_sub(ps, dc);
    return dc;
  }
  if (c == 'S') {
    if (peek2(ps) == 't') {
      ps->p += 2;
      dc = fixed(ps, "std");
      dc = unqualified_name(ps, dc);
    } else {
      dc = substitution(ps, false);
      subst = true;
    }
  } else {
    dc = unqualified_name(ps, -1);
  }
  if (ps->fail) return -1;
  if (peek(ps) == 'I') {
    if (!subst) add_sub(ps, dc);
    dc = node(ps, K_TEMPLATE, dc, parse_template_args(ps));
    subst = false;
  }
  if (substable && !subst) add_sub(ps, dc);
  return dc;
}

static int parse_name(parser_t *ps, bool substable) { return parse_name_q(ps, substable, NULL); }

static bool is_ctor_dtor_conv(const parser_t *ps, int i) {
  for (int guard = 0; i >= 0 && guard < MAX_DEPTH; guard++) {
    int k = ps->n[i].k;
    if (k == K_QUAL || k == K_LOCAL) i = ps->n[i].b;
    else return k == K_CTOR || k == K_DTOR || k == K_CONV;
  }
  return false;
}

static bool has_return_type(const parser_t *ps, int i) {
  for (int guard = 0; i >= 0 && guard < MAX_DEPTH; guard++) {
    int k = ps->n[i].k;
    if (k == K_LOCAL) i = ps->n[i].b;
    else if (k == K_TEMPLATE) return !is_ctor_dtor_conv(ps, ps->n[i].a);
    else return false;
  }
  return false;
}

static int special_name(parser_t *ps) {
  char c = peek(ps), d = peek2(ps);
  ps->p += 2;
  const char *text = NULL;
  int child = -1;
  if (c == 'T') {
    switch (d) {
      case 'V': text = "vtable for "; child = parse_type(ps); break;
      case 'T': text = "VTT for "; child = parse_type(ps); break;
      case 'I': text = "typeinfo for "; child = parse_type(ps); break;
      case 'S': text = "typeinfo name for "; child = parse_type(ps); break;
      case 'F': text = "typeinfo fn for "; child = parse_type(ps); break;
      case 'H': text = "TLS init function for "; child = parse_name(ps, false); break;
      case 'W': text = "TLS wrapper function for "; child = parse_name(ps, false); break;
      case 'h':
      case 'v':
      case 'c': {
        int offsets = d == 'c' ? 2 : 1;
        char kind = d;
        for (int o = 0; o < offsets; o++) {
          if (d == 'c') {
            kind = peek(ps);
            if (kind == 0) return bad(ps), -1;
            ps->p++;
          }
          bool neg;
          if (kind == 'h') {
            if (number(ps, &neg) < 0) return bad(ps), -1;
          } else if (kind == 'v') {
            if (number(ps, &neg) < 0 || !eat(ps, '_')) return bad(ps), -1;
            if (number(ps, &neg) < 0) return bad(ps), -1;
          } else return bad(ps), -1;
          if (!eat(ps, '_')) return bad(ps), -1;
        }
        text = d == 'h' ? "non-virtual thunk to " : d == 'v' ? "virtual thunk to " : "covariant return thunk to ";
        child = parse_encoding(ps, false);
        break;
      }
      case 'C': {
        int derived = parse_type(ps);
        long off = number(ps, NULL);
        if (off < 0 || !eat(ps, '_')) return bad(ps), -1;
        int base = parse_type(ps);
        return node(ps, K_CTVTBL, base, derived);
      }
      default: return bad(ps), -1;
    }
  } else {
    switch (d) {
      case 'V': text = "guard variable for "; child = parse_name(ps, false); break;
      case 'R': {
        int name = parse_name(ps, false);
        bool neg;
        long v = number(ps, &neg);
        if (v < 0 || neg) return bad(ps), -1;
        int num = node(ps, K_NUMBER, -1, (int)v);
        return node(ps, K_REFTEMP, name, num);
      }
      case 'A': text = "hidden alias for "; child = parse_encoding(ps, false); break;
      case 'T':
        if (eat(ps, 'n')) text = "non-transaction clone for ";
        else if (eat(ps, 't')) text = "transaction clone for ";
        else return bad(ps), -1;
        child = parse_encoding(ps, false);
        break;
      default: return bad(ps), -1;
    }
  }
  int i = node(ps, K_SPECIAL, child, -1);
  if (i >= 0) {
    ps->n[i].s = text;
    ps->n[i].len = (uint16_t)strlen(text);
  }
  return i;
}

static int parse_encoding(parser_t *ps, bool top) {
  if (++ps->depth > MAX_DEPTH) return bad(ps), -1;
  int r;
  char c = peek(ps);
  if (c == 'G' || c == 'T') {
    r = special_name(ps);
  } else {
    mquals_t mq;
    r = parse_name_q(ps, false, &mq);
    c = peek(ps);
    if (!ps->fail && c != 0 && c != 'E' && !(top && c == '.')) {
      int ret = -1;
      if (has_return_type(ps, r)) ret = parse_type(ps);
      int params = parse_params(ps);
      int ft = node(ps, K_FTYPE, ret, params);
      r = node(ps, K_TYPED, r, ft);
      if (r >= 0) {
        ps->n[r].s = mq.q;
        ps->n[r].len = (uint16_t)mq.qlen;
        ps->n[r].f = (uint8_t)mq.ref;
      }
    } else if (!ps->fail && mq.qlen + (size_t)mq.ref != 0) {
      return bad(ps), -1; /* method qualifiers on a data name */
    }
  }
  ps->depth--;
  return ps->fail ? -1 : r;
}

/* F [Y] <return> <params> [R|O] E, with qualifiers read before the F */
static int function_type(parser_t *ps, const char *q, size_t qlen) {
  ps->p++; /* F */
  eat(ps, 'Y');
  int ret = parse_type(ps);
  int params = parse_params(ps);
  int ref = 0;
  if (eat(ps, 'R')) ref = 1;
  else if (eat(ps, 'O')) ref = 2;
  if (!eat(ps, 'E')) return bad(ps), -1;
  int i = node(ps, K_FTYPE, ret, params);
  if (i >= 0) {
    ps->n[i].s = q;
    ps->n[i].len = (uint16_t)qlen;
    ps->n[i].f = (uint8_t)ref;
  }
  return i;
}

static int parse_type_inner(parser_t *ps) {
  char c = peek(ps);
  int r = -1;
  bool can_subst = true;
  /* qualifiers: r V K, and the function-only Do / Dx */
  if (c == 'r' || c == 'V' || c == 'K' || (c == 'D' && (peek2(ps) == 'o' || peek2(ps) == 'x'))) {
    const char *q = ps->p;
    for (;;) {
      char e = peek(ps);
      if (e == 'r' || e == 'V' || e == 'K') ps->p++;
      else if (e == 'D' && (peek2(ps) == 'o' || peek2(ps) == 'x')) ps->p += 2;
      else break;
    }
    size_t qlen = (size_t)(ps->p - q);
    if (peek(ps) == 'F') {
      r = function_type(ps, q, qlen);
    } else {
      for (size_t i = 0; i < qlen; i++)
        if (q[i] == 'D') return bad(ps), -1; /* noexcept on a non-function */
      int t = parse_type(ps);
      r = node(ps, K_CV, t, -1);
      if (r >= 0) {
        ps->n[r].s = q;
        ps->n[r].len = (uint16_t)qlen;
      }
    }
    add_sub(ps, r);
    return r;
  }
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
    if (builtins[i].c != c) continue;
    ps->p++;
    r = text_node(ps, K_BUILTIN, builtins[i].name, strlen(builtins[i].name));
    if (r >= 0) ps->n[r].f = builtins[i].print;
    return r;
  }
  switch (c) {
    case 'u':
      ps->p++;
      r = source_name(ps);
      if (r >= 0) ps->n[r].k = K_BUILTIN, ps->n[r].f = P_DEFAULT;
      break;
    case 'F': r = function_type(ps, NULL, 0); break;
    case 'N':
    case 'Z':
    case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
      r = parse_name(ps, false);
      break;
    case 'A': {
      ps->p++;
      int dim = -1;
      if (is_digit(peek(ps))) {
        const char *s = ps->p;
        while (is_digit(peek(ps))) ps->p++;
        dim = text_node(ps, K_NAME, s, (size_t)(ps->p - s));
      } else if (peek(ps) != '_') {
        dim = parse_expression(ps);
      }
      if (!eat(ps, '_')) return bad(ps), -1;
      r = node(ps, K_ARRAY, parse_type(ps), dim);
      break;
    }
    case 'M': {
      ps->p++;
      int cl = parse_type(ps);
      int mem = parse_type(ps);
      r = node(ps, K_PTRMEM, cl, mem);
      break;
    }
    case 'T':
      r = template_param(ps);
      if (peek(ps) == 'I') {
        if (ps->in_conv) return bad(ps), -1;
        add_sub(ps, r);
        r = node(ps, K_TEMPLATE, r, parse_template_args(ps));
      }
      break;
    case 'S':
      if (is_digit(peek2(ps)) || peek2(ps) == '_' || is_upper(peek2(ps))) {
        r = substitution(ps, false);
        if (peek(ps) == 'I') r = node(ps, K_TEMPLATE, r, parse_template_args(ps));
        else can_subst = false;
      } else {
        r = parse_name(ps, false);
        if (r >= 0 && ps->n[r].k == K_STD) can_subst = false;
      }
      break;
    case 'P': ps->p++; r = node(ps, K_PTR, parse_type(ps), -1); break;
    case 'R': ps->p++; r = node(ps, K_REF, parse_type(ps), -1); break;
    case 'O': ps->p++; r = node(ps, K_RREF, parse_type(ps), -1); break;
    case 'C': ps->p++; r = node(ps, K_CPLX, parse_type(ps), -1); break;
    case 'G': ps->p++; r = node(ps, K_IMAG, parse_type(ps), -1); break;
    case 'U': {
      ps->p++;
      int name = source_name(ps);
      if (peek(ps) == 'I') return bad(ps), -1;
      int t = parse_type(ps);
      r = node(ps, K_VQUAL, t, name);
      break;
    }
    case 'D': {
      char d = peek2(ps);
      ps->p += 2;
      can_subst = false;
      const char *name = NULL;
      switch (d) {
        case 'T':
        case 't':
          r = node(ps, K_DECLTYPE, parse_expression(ps), -1);
          if (!eat(ps, 'E')) return bad(ps), -1;
          can_subst = true;
          break;
        case 'p':
          r = node(ps, K_PACKEXP, parse_type(ps), -1);
          can_subst = true;
          break;
        case 'a': r = fixed(ps, "auto"); break;
        case 'c': r = fixed(ps, "decltype(auto)"); break;
        case 'f': name = "decimal32"; break;
        case 'd': name = "decimal64"; break;
        case 'e': name = "decimal128"; break;
        case 'h': name = "half"; break;
        case 'u': name = "char8_t"; break;
        case 's': name = "char16_t"; break;
        case 'i': name = "char32_t"; break;
        case 'n': name = "decltype(nullptr)"; break;
        case 'F': {
          static const char *const fl[] = {"_Float16", "_Float32", "_Float64", "_Float128",
                                            "_Float32x", "_Float64x", "_Float128x"};
          long bits = number(ps, NULL);
          int idx = bits == 16 ? 0 : bits == 32 ? 1 : bits == 64 ? 2 : bits == 128 ? 3 : -1;
          if (eat(ps, 'x')) idx = idx >= 1 ? idx + 3 : -1;
          else if (!eat(ps, '_')) idx = -1;
          if (idx < 0) return bad(ps), -1;
          r = text_node(ps, K_BUILTIN, fl[idx], strlen(fl[idx]));
          if (r >= 0) ps->n[r].f = P_FLOAT;
          break;
        }
        case 'v': {
          if (!is_digit(peek(ps))) return bad(ps), -1;
          const char *s = ps->p;
          while (is_digit(peek(ps))) ps->p++;
          int dim = text_node(ps, K_NAME, s, (size_t)(ps->p - s));
          if (!eat(ps, '_')) return bad(ps), -1;
          r = node(ps, K_VECTOR, parse_type(ps), dim);
          can_subst = true;
          break;
        }
        default: return bad(ps), -1;
      }
      if (name) {
        r = text_node(ps, K_BUILTIN, name, strlen(name));
        if (r >= 0) ps->n[r].f = d == 'h' ? P_FLOAT : P_DEFAULT;
      }
      break;
    }
    default: return bad(ps), -1;
  }
  if (ps->fail) return -1;
  if (can_subst) add_sub(ps, r);
  return r;
}

static int parse_type(parser_t *ps) {
  if (ps->fail) return -1;
  if (++ps->depth > MAX_DEPTH) return bad(ps), -1;
  int r = parse_type_inner(ps);
  ps->depth--;
  return ps->fail ? -1 : r;
}

/* L <type> <value> E | L _Z <encoding> E */
static int expr_primary(parser_t *ps) {
  ps->p++; /* L */
  if (peek(ps) == '_' || peek(ps) == 'Z') {
    if (eat(ps, '_') && peek(ps) != 'Z') return bad(ps), -1;
    ps->p++; /* Z */
    int enc = parse_encoding(ps, false);
    if (!eat(ps, 'E')) return bad(ps), -1;
    return enc;
  }
  int t = parse_type(ps);
  if (ps->fail) return -1;
  bool neg = eat(ps, 'n');
  const char *s = ps->p;
  while (ps->p < ps->end && *ps->p != 'E') ps->p++;
  if (!eat(ps, 'E')) return bad(ps), -1;
  if (ps->p - 1 == s) {
    /* no value: only "LDnE", which c++filt prints as the type */
    const hci_dm_node_t *x = &ps->n[t];
    if (!neg && x->k == K_BUILTIN && x->len == 17 && memcmp(x->s, "decltype(nullptr)", 17) == 0) return t;
    return bad(ps), -1;
  }
  int r = node(ps, K_LITERAL, t, -1);
  if (r >= 0) {
    ps->n[r].s = s;
    ps->n[r].len = (uint16_t)(ps->p - 1 - s);
    ps->n[r].f = neg;
  }
  return r;
}

/* what `item` reads up to an E (eaten), as a K_LIST chain; -1 if none */
static int list_until_e(parser_t *ps, int (*item)(parser_t *)) {
  int head = -1, tail = -1;
  while (!ps->fail && !eat(ps, 'E')) {
    if (ps->p >= ps->end) return bad(ps), -1;
    int cell = node(ps, K_LIST, item(ps), -1);
    if (ps->fail) return -1;
    if (tail < 0) head = cell;
    else ps->n[tail].b = cell;
    tail = cell;
  }
  return head;
}

static int expr_list(parser_t *ps) {
  int head = list_until_e(ps, parse_expression);
  return head < 0 ? node(ps, K_LIST, -1, -1) : head; /* "()" */
}

static int parse_expression_inner(parser_t *ps) {
  char c = peek(ps), d = peek2(ps);
  if (c == 'L') return expr_primary(ps);
  if (c == 'T') return template_param(ps);
  if (c == 's' && d == 'r') {
    /* sr <qualifier-level>+ E <base-unresolved-name> (sr <type> ... is refused) */
    ps->p += 2;
    int type;
    char t = peek(ps);
    if (t == 'S' || t == 'T' || (t == 'D' && (peek2(ps) == 't' || peek2(ps) == 'T'))) {
      type = parse_type(ps); /* sr <unresolved-type> <base-unresolved-name> */
    } else {
      if (!is_digit(t)) return bad(ps), -1; /* srN and operator names: not supported */
      type = parse_prefix(ps, false);
      if (!eat(ps, 'E')) return bad(ps), -1;
    }
    int name = unqualified_name(ps, type); /* std::declval<T> is a template of a qualified name */
    if (peek(ps) == 'I') name = node(ps, K_TEMPLATE, name, parse_template_args(ps));
    return name;
  }
  if (c == 's' && d == 'p') {
    ps->p += 2;
    return node(ps, K_PACKEXP, parse_expression(ps), -1);
  }
  if (c == 'f' && d == 'p') {
    ps->p += 2;
    if (eat(ps, 'T')) return node(ps, K_FPARM, -1, 0);
    cv_letters(ps);
    long v = compact(ps);
    if (v < 0) return bad(ps), -1;
    return node(ps, K_FPARM, -1, (int)v + 1);
  }
  if (is_digit(c) || (c == 'o' && d == 'n')) {
    if (c == 'o') ps->p += 2;
    int name = unqualified_name(ps, -1);
    if (peek(ps) == 'I') name = node(ps, K_TEMPLATE, name, parse_template_args(ps));
    return name;
  }
  int op = operator_name(ps);
  if (ps->fail) return -1;
  if (ps->n[op].k == K_CAST) {
    /* cv <type> <expression>, or cv <type> _ <expression>* E: "(T)(a, b)" */
    ps->n[op].b = eat(ps, '_') ? expr_list(ps) : parse_expression(ps);
    return op;
  }
  if (ps->n[op].k != K_OPERATOR) return bad(ps), -1;
  int o = ps->n[op].f;
  const char *code = ops[o].code;
  if (strcmp(code, "st") == 0 || strcmp(code, "at") == 0) {
    int r = node(ps, K_UNARY, parse_type(ps), -1);
    if (r >= 0) ps->n[r].f = (uint8_t)o;
    return r;
  }
  if (code[0] == 'p' && code[1] == 'p') return bad(ps), -1;
  if (code[0] == 'm' && code[1] == 'm') return bad(ps), -1;
  int r = -1;
  switch (ops[o].arity) {
    case 1: r = node(ps, K_UNARY, parse_expression(ps), -1); break;
    case 2: {
      if (strcmp(code, "cl") == 0) {
        int callee = parse_expression(ps);
        r = node(ps, K_BINARY, callee, expr_list(ps));
      } else if (strcmp(code, "dt") == 0 || strcmp(code, "pt") == 0) {
        int left = parse_expression(ps);
        int name = unqualified_name(ps, -1);
        if (peek(ps) == 'I') name = node(ps, K_TEMPLATE, name, parse_template_args(ps));
        r = node(ps, K_BINARY, left, name);
      } else {
        int left = parse_expression(ps);
        r = node(ps, K_BINARY, left, parse_expression(ps));
      }
      break;
    }
    case 3:
      if (strcmp(code, "qu") != 0) return bad(ps), -1;
      {
        int x = parse_expression(ps);
        int y = parse_expression(ps);
        int z = parse_expression(ps);
        r = node(ps, K_TRINARY, x, node(ps, K_LIST, y, node(ps, K_LIST, z, -1)));
      }
      break;
    default: return bad(ps), -1;
  }
  if (r >= 0) ps->n[r].f = (uint8_t)o;
  return r;
}

static int parse_expression(parser_t *ps) {
  if (ps->fail) return -1;
  if (++ps->depth > MAX_DEPTH) return bad(ps), -1;
  bool was = ps->in_expr;
  ps->in_expr = true;
  int r = parse_expression_inner(ps);
  ps->in_expr = was;
  ps->depth--;
  return ps->fail ? -1 : r;
}

static int template_arg(parser_t *ps) {
  char c = peek(ps);
  if (c == 'X') {
    ps->p++;
    int e = parse_expression(ps);
    if (!eat(ps, 'E')) return bad(ps), -1;
    return e;
  }
  if (c == 'L') return expr_primary(ps);
  if (c == 'J' || c == 'I') return node(ps, K_PACK, parse_template_args(ps), -1);
  return parse_type(ps);
}

/* I <arg>+ E (or J ... E for a pack); the ctor/dtor name is kept */
static int parse_template_args(parser_t *ps) {
  if (++ps->depth > MAX_DEPTH) return bad(ps), -1;
  int hold = ps->last_name;
  ps->p++; /* I or J */
  int head = list_until_e(ps, template_arg);
  ps->last_name = hold;
  ps->depth--;
  return head;
}

/* ---------------------------------------------------------------- print */

typedef struct tctx {
  int tmpl;                 /* K_TEMPLATE node whose arguments T_ refers to */
  const struct tctx *next;
} tctx_t;

enum { D_PTR, D_REF, D_RREF, D_CV, D_PTRMEM, D_VQUAL, D_CPLX, D_IMAG, D_VECTOR, D_PAREN, D_FUNC, D_ARRAY, D_NAME };

/* ctx: the template context the operator was met in; its nodes (parameters,
 * class, dimension) print in that context wherever the chain is rendered. */
typedef struct decl {
  int op;
  int node;
  const struct decl *next;
  const struct tctx *ctx;
} decl_t;

/* A template parameter first printed under a reference keeps the template
 * context it was printed in; printed again through a substitution, it uses
 * that context (c++filt does, and prints "void (&)()" where the context at
 * hand would give another type). */
#define MAX_SCOPES 32
#define MAX_SCOPE_DEPTH 8
typedef struct {
  int node;
  int ntmpl;
  int tmpl[MAX_SCOPE_DEPTH];
} scope_t;

typedef struct {
  const hci_dm_node_t *n;
  char *out;
  size_t cap, len;
  const tctx_t *ctx;
  int cur_template;
  int pack_index;
  int lambda_arg;
  int depth;
  long steps;
  bool stale_last;   /* a ", " was taken back: the last character seen stays ' ' */
  const struct decl *pending; /* declarator of the type whose name is printing */
  bool fail;
  int nscopes;
  scope_t scopes[MAX_SCOPES];
} printer_t;

static void put(printer_t *pr, const char *s, size_t n) {
  if (pr->fail) return;
  if (n >= pr->cap - pr->len) {
    pr->fail = true;
    return;
  }
  memcpy(pr->out + pr->len, s, n);
  pr->len += n;
  if (n) pr->stale_last = false;
}

static void puts_(printer_t *pr, const char *s) { put(pr, s, strlen(s)); }
static void putc_(printer_t *pr, char c) { put(pr, &c, 1); }
static char last(const printer_t *pr) {
  if (pr->stale_last) return ' ';
  return pr->len ? pr->out[pr->len - 1] : 0;
}

static void put_num(printer_t *pr, long v) {
  char b[24];
  int i = (int)sizeof b;
  if (v < 0) {
    putc_(pr, '-');
    v = -v;
  }
  do b[--i] = (char)('0' + v % 10), v /= 10;
  while (v && i > 0);
  put(pr, b + i, sizeof b - (size_t)i);
}

static void print(printer_t *pr, int i);
static void print_decl(printer_t *pr, int i, const decl_t *inner);

/* pre, node i, post */
static void print_in(printer_t *pr, const char *pre, int i, const char *post) {
  puts_(pr, pre);
  print(pr, i);
  puts_(pr, post);
}

static bool enter(printer_t *pr) {
  if (pr->fail) return false;
  if (++pr->steps > MAX_STEPS || ++pr->depth > MAX_DEPTH) {
    pr->fail = true;
    pr->depth--;
    return false;
  }
  return true;
}

/* element `idx` of a list, -1 if out of range */
static int list_at(const printer_t *pr, int list, long idx) {
  for (long k = 0; list >= 0 && pr->n[list].a >= 0; k++, list = pr->n[list].b) {
    if (k == idx) return pr->n[list].a;
    if (k > HC_DM_MAX_NODES) break;
  }
  return -1;
}

static int list_len(const printer_t *pr, int list) {
  int k = 0;
  for (; list >= 0 && pr->n[list].a >= 0 && k <= HC_DM_MAX_NODES; list = pr->n[list].b) k++;
  return k;
}

/* The argument a T_ names in the current context, and that context's parent. */
static int lookup_tparm(printer_t *pr, int tp, const tctx_t **outer) {
  if (pr->ctx == NULL) return -1;
  int a = list_at(pr, pr->n[pr->ctx->tmpl].b, pr->n[tp].a);
  if (a >= 0 && pr->n[a].k == K_PACK) a = list_at(pr, pr->n[a].a, pr->pack_index);
  *outer = pr->ctx->next;
  return a;
}

/* Items separated by ", "; separators before a trailing run of items that
 * print nothing (empty packs) are taken back, as c++filt does. */
static void print_list(printer_t *pr, int list) {
  size_t run = (size_t)-1; /* where the trailing empty run's first ", " starts */
  bool first = true;
  for (int guard = 0; list >= 0 && pr->n[list].a >= 0 && !pr->fail; list = pr->n[list].b, guard++) {
    if (guard > HC_DM_MAX_NODES) {
      pr->fail = true;
      return;
    }
    size_t before = pr->len;
    if (!first) puts_(pr, ", ");
    size_t after = pr->len;
    print(pr, pr->n[list].a);
    if (!first && pr->len == after) {
      if (run == (size_t)-1) run = before;
    } else if (pr->len != after) {
      run = (size_t)-1;
    }
    first = false;
  }
  if (run != (size_t)-1 && !pr->fail) {
    pr->len = run;
    pr->stale_last = true;
  }
}

static void print_quals(printer_t *pr, const char *q, size_t len) {
  for (size_t k = len; k-- > 0;) {
    char c = q[k];
    if (c == 'K') puts_(pr, " const");
    else if (c == 'V') puts_(pr, " volatile");
    else if (c == 'r') puts_(pr, " restrict");
    else if (c == 'o' && k > 0 && q[k - 1] == 'D') puts_(pr, " noexcept"), k--;
    else if (c == 'x' && k > 0 && q[k - 1] == 'D') puts_(pr, " transaction_safe"), k--;
    else pr->fail = true;
  }
}

/* A type's qualifiers, innermost first; one already pending further out
 * (earlier in the letters, or in the qualifiers right outside: T_ = "int
 * const" under K) is printed once, by the outer one, as c++filt does. */
static void print_cv(printer_t *pr, const decl_t *d) {
  const hci_dm_node_t *x = &pr->n[d->node];
  for (size_t k = x->len; k-- > 0;) {
    char c = x->s[k];
    bool outer = memchr(x->s, c, k) != NULL;
    const decl_t *o = d->next;
    bool in_pending = false;
    for (;;) {
      if (o == NULL && !in_pending) {
        o = pr->pending;
        in_pending = true;
      }
      if (outer || o == NULL || o->op != D_CV) break;
      const hci_dm_node_t *y = &pr->n[o->node];
      outer = memchr(y->s, c, y->len) != NULL;
      o = o->next;
    }
    if (!outer) print_quals(pr, &x->s[k], 1);
  }
}

static void print_ref(printer_t *pr, int ref) {
  if (ref == 1) puts_(pr, " &");
  else if (ref == 2) puts_(pr, " &&");
}

static void print_function_suffix(printer_t *pr, int ft) {
  putc_(pr, '(');
  const decl_t *hold = pr->pending;
  pr->pending = NULL;
  print_list(pr, pr->n[ft].b);
  pr->pending = hold;
  putc_(pr, ')');
  print_quals(pr, pr->n[ft].s, pr->n[ft].len);
  print_ref(pr, pr->n[ft].f);
}

static bool is_prefix_op(int op) { return op <= D_VECTOR; }

/* The declarator chain around a type: prefix operators, parentheses,
 * function and array suffixes, and the name of a typed encoding. */
static void render(printer_t *pr, const decl_t *d, bool top) {
  if (d == NULL || !enter(pr)) return;
  const hci_dm_node_t *x = &pr->n[d->node];
  const tctx_t *hold = pr->ctx;
  pr->ctx = d->ctx;
  switch (d->op) {
    case D_PTR: putc_(pr, '*'); render(pr, d->next, top); break;
    case D_REF: putc_(pr, '&'); render(pr, d->next, top); break;
    case D_RREF: puts_(pr, "&&"); render(pr, d->next, top); break;
    case D_CV: print_cv(pr, d); render(pr, d->next, top); break;
    case D_CPLX: puts_(pr, " _Complex"); render(pr, d->next, top); break;
    case D_IMAG: puts_(pr, " _Imaginary"); render(pr, d->next, top); break;
    case D_VQUAL: print_in(pr, " ", x->b, ""); render(pr, d->next, top); break;
    case D_VECTOR: print_in(pr, " __vector(", x->b, ")"); render(pr, d->next, top); break;
    case D_PTRMEM:
      if (last(pr) != '(') putc_(pr, ' ');
      print(pr, x->a);
      puts_(pr, "::*");
      render(pr, d->next, top);
      break;
    case D_PAREN:
      /* after a return type printed whole: "int& (*)()" */
      if (top && pr->len > 0 && last(pr) != ' ') putc_(pr, ' ');
      putc_(pr, '(');
      render(pr, d->next, false);
      putc_(pr, ')');
      break;
    case D_FUNC:
      render(pr, d->next, top);
      /* after a return type printed whole: "int* (char)" */
      if (d->next == NULL && top && pr->len > 0 && last(pr) != ' ' && last(pr) != '(') putc_(pr, ' ');
      print_function_suffix(pr, d->node);
      break;
    case D_ARRAY:
      render(pr, d->next, top);
      if (d->next == NULL || d->next->op != D_ARRAY) putc_(pr, ' ');
      putc_(pr, '[');
      if (x->b >= 0) print(pr, x->b);
      putc_(pr, ']');
      break;
    case D_NAME: {
      /* a return type printed whole is followed by a space ("char* f()") */
      if (top && pr->len > 0 && last(pr) != ' ') putc_(pr, ' ');
      const hci_dm_node_t *t = &pr->n[d->node];
      print(pr, t->a);
      print_function_suffix(pr, t->b);
      print_quals(pr, t->s, t->len);
      print_ref(pr, t->f);
      break;
    }
  }
  pr->ctx = hold;
  pr->depth--;
}

/* base text then the declarator; a space between them unless the
 * declarator starts with * & or a space. */
static void join(printer_t *pr, const decl_t *inner) {
  if (inner == NULL) return;
  size_t at = pr->len;
  render(pr, inner, true);
  if (pr->fail || pr->len == at) return;
  char c = pr->out[at];
  if (c == '*' || c == '&' || c == ' ') return;
  if (pr->len + 1 >= pr->cap) {
    pr->fail = true;
    return;
  }
  memmove(pr->out + at + 1, pr->out + at, pr->len - at);
  pr->out[at] = ' ';
  pr->len++;
}

/* first argument pack reachable from i (through T_), or -1 */
static int find_pack(printer_t *pr, int i, int depth) {
  if (i < 0 || depth > 64 || ++pr->steps > MAX_STEPS) return -1;
  const hci_dm_node_t *x = &pr->n[i];
  switch (x->k) {
    case K_TPARM: {
      if (pr->ctx == NULL) return -1;
      int a = list_at(pr, pr->n[pr->ctx->tmpl].b, x->a);
      return a >= 0 && pr->n[a].k == K_PACK ? a : -1;
    }
    case K_NAME: case K_BUILTIN: case K_STD: case K_LAMBDA: case K_UNNAMED: case K_OPERATOR:
    case K_FPARM: case K_NUMBER: case K_LITERAL: case K_CTOR: case K_DTOR: case K_TYPED:
      return -1;
    case K_PACKEXP: return -1;
    case K_CV: case K_PTR: case K_REF: case K_RREF: case K_CPLX: case K_IMAG: case K_DECLTYPE:
    case K_UNARY: case K_TAGGED: case K_CONV:
      return find_pack(pr, x->a, depth + 1);
    default: {
      int r = find_pack(pr, x->a, depth + 1);
      return r >= 0 ? r : find_pack(pr, x->b, depth + 1);
    }
  }
}

static void print_subexpr(printer_t *pr, int i) {
  int k = pr->n[i].k;
  bool simple = k == K_NAME || k == K_QUAL || k == K_FPARM;
  if (!simple) putc_(pr, '(');
  print(pr, i);
  if (!simple) putc_(pr, ')');
}

static void print_expr_op(printer_t *pr, int o) { puts_(pr, ops[o].name); }

/* the template of a typed name's function (for T_ in its types) */
static int typed_template(const printer_t *pr, int name) {
  if (name >= 0 && pr->n[name].k == K_LOCAL) {
    name = pr->n[name].b;
    if (name >= 0 && pr->n[name].k == K_DEFARG) name = pr->n[name].a;
  }
  return name >= 0 && pr->n[name].k == K_TEMPLATE ? name : -1;
}

/* First time: remember the context T_ node `tp` is printed in.  Later: make
 * that context current again (built in `room`, the caller's frame). */
static void scope_use(printer_t *pr, int tp, tctx_t room[MAX_SCOPE_DEPTH]) {
  for (int k = 0; k < pr->nscopes; k++) {
    scope_t *sc = &pr->scopes[k];
    if (sc->node != tp) continue;
    const tctx_t *next = NULL;
    for (int j = sc->ntmpl; j-- > 0;) {
      room[j].tmpl = sc->tmpl[j];
      room[j].next = next;
      next = &room[j];
    }
    pr->ctx = next;
    return;
  }
  if (pr->nscopes == MAX_SCOPES) {
    pr->fail = true;
    return;
  }
  scope_t *sc = &pr->scopes[pr->nscopes++];
  sc->node = tp;
  sc->ntmpl = 0;
  for (const tctx_t *c = pr->ctx; c; c = c->next) {
    if (sc->ntmpl == MAX_SCOPE_DEPTH) {
      pr->fail = true;
      return;
    }
    sc->tmpl[sc->ntmpl++] = c->tmpl;
  }
}

static void print_decl(printer_t *pr, int i, const decl_t *inner) {
  if (i < 0) {
    pr->fail = true;
    return;
  }
  if (!enter(pr)) return;
  const hci_dm_node_t *x = &pr->n[i];
  decl_t d = {D_PTR, i, inner, pr->ctx};
  switch (x->k) {
    case K_PTR: d.op = D_PTR; print_decl(pr, x->a, &d); break;
    case K_CPLX: d.op = D_CPLX; print_decl(pr, x->a, &d); break;
    case K_IMAG: d.op = D_IMAG; print_decl(pr, x->a, &d); break;
    case K_CV: d.op = D_CV; print_decl(pr, x->a, &d); break;
    case K_VQUAL: d.op = D_VQUAL; print_decl(pr, x->a, &d); break;
    case K_VECTOR: d.op = D_VECTOR; print_decl(pr, x->a, &d); break;
    case K_PTRMEM: d.op = D_PTRMEM; print_decl(pr, x->b, &d); break;
    case K_REF:
    case K_RREF: {
      /* reference collapsing (through a template parameter too): & + && = & */
      int sub = x->a;
      int kind = x->k;
      const tctx_t *hold = pr->ctx;
      tctx_t restored[MAX_SCOPE_DEPTH];
      if (!pr->lambda_arg && sub >= 0 && pr->n[sub].k == K_TPARM) {
        scope_use(pr, sub, restored);
        const tctx_t *outer;
        sub = lookup_tparm(pr, sub, &outer);
        if (sub < 0) {
          pr->fail = true;
          pr->ctx = hold;
          break;
        }
      }
      if (pr->n[sub].k == K_REF || pr->n[sub].k == kind) {
        /* the inner reference stands for both; its own referent prints
         * with the full rules (c++filt: T = "bool& &" under && gives "bool&&") */
        kind = pr->n[sub].k;
        sub = pr->n[sub].a;
      } else if (pr->n[sub].k == K_RREF) {
        sub = pr->n[sub].a;
      } else {
        sub = x->a;
      }
      d.op = kind == K_REF ? D_REF : D_RREF;
      print_decl(pr, sub, &d);
      pr->ctx = hold;
      break;
    }
    case K_FTYPE: {
      const decl_t *in = inner;
      decl_t paren = {D_PAREN, i, inner, pr->ctx};
      if (inner && is_prefix_op(inner->op)) in = &paren;
      d.op = D_FUNC;
      d.next = in;
      if (x->a >= 0) print_decl(pr, x->a, &d);
      else render(pr, &d, true);
      break;
    }
    case K_ARRAY: {
      /* qualifiers right on the array apply to its elements:
       * "char const (&) [14]" (c++filt prints the farthest first) */
      const decl_t *cvs[4];
      int ncv = 0;
      const decl_t *rest = inner;
      while (rest && rest->op == D_CV) {
        if (ncv == 4) {
          pr->fail = true;
          break;
        }
        cvs[ncv++] = rest;
        rest = rest->next;
      }
      decl_t paren = {D_PAREN, i, rest, pr->ctx};
      d.op = D_ARRAY;
      d.next = rest && is_prefix_op(rest->op) ? &paren : rest;
      decl_t moved[4];
      const decl_t *head = &d;
      for (int k = 0; k < ncv; k++) {
        moved[k] = (decl_t){D_CV, cvs[k]->node, head, cvs[k]->ctx};
        head = &moved[k];
      }
      print_decl(pr, x->a, head);
      break;
    }
    case K_TPARM: {
      if (pr->lambda_arg) {
        puts_(pr, "auto:");
        put_num(pr, x->a + 1);
        join(pr, inner);
        break;
      }
      const tctx_t *outer;
      int a = lookup_tparm(pr, i, &outer);
      if (a < 0) {
        pr->fail = true;
        break;
      }
      const tctx_t *hold = pr->ctx;
      pr->ctx = outer;
      print_decl(pr, a, inner);
      pr->ctx = hold;
      break;
    }
    case K_TYPED: {
      /* a function: return type, then the name and parameters as its declarator */
      tctx_t c = {typed_template(pr, x->a), pr->ctx};
      const tctx_t *hold = pr->ctx;
      if (c.tmpl >= 0) pr->ctx = &c;
      decl_t nd = {D_NAME, i, inner, pr->ctx};
      int ret = pr->n[x->b].a;
      if (ret >= 0) print_decl(pr, ret, &nd);
      else render(pr, &nd, false);
      pr->ctx = hold;
      break;
    }
    case K_PACKEXP: {
      int pack = find_pack(pr, x->a, 0);
      if (pack < 0) {
        if (inner) {
          pr->fail = true;
          break;
        }
        print_subexpr(pr, x->a);
        puts_(pr, "...");
        break;
      }
      int n = list_len(pr, pr->n[pack].a);
      if (inner && n != 1) {
        /* "PDpT_": c++filt puts the * on the last element only; refused */
        pr->fail = true;
        break;
      }
      for (int k = 0; k < n && !pr->fail; k++) {
        pr->pack_index = k;
        print_decl(pr, x->a, inner);
        if (k < n - 1) puts_(pr, ", ");
      }
      break;
    }
    default: {
      /* c++filt keeps the declarator's qualifiers pending while the name
       * prints: "PKNS1_1CE" with S1_ = "A::B const" is "A::B::C const*" */
      const decl_t *hold = pr->pending;
      pr->pending = inner;
      print(pr, i);
      pr->pending = hold;
      join(pr, inner);
      break;
    }
  }
  pr->depth--;
}

static void print_template_args(printer_t *pr, int list) {
  if (last(pr) == '<') putc_(pr, ' ');
  putc_(pr, '<');
  const decl_t *hold = pr->pending;
  pr->pending = NULL;
  print_list(pr, list);
  pr->pending = hold;
  if (last(pr) == '>') putc_(pr, ' ');
  putc_(pr, '>');
}

static void print_literal(printer_t *pr, const hci_dm_node_t *x) {
  const hci_dm_node_t *t = &pr->n[x->a];
  int kind = t->k == K_BUILTIN ? t->f : P_DEFAULT;
  static const char *const suffix[] = {[P_UNSIGNED] = "u", [P_LONG] = "l", [P_ULONG] = "ul",
                                       [P_LLONG] = "ll", [P_ULLONG] = "ull"};
  if (kind >= P_INT && kind <= P_ULLONG) {
    if (x->f) putc_(pr, '-');
    put(pr, x->s, x->len);
    if (suffix[kind]) puts_(pr, suffix[kind]);
    return;
  }
  if (kind == P_BOOL && x->len == 1 && !x->f && (x->s[0] == '0' || x->s[0] == '1')) {
    puts_(pr, x->s[0] == '0' ? "false" : "true");
    return;
  }
  putc_(pr, '(');
  print(pr, x->a);
  putc_(pr, ')');
  if (x->f) putc_(pr, '-');
  if (kind == P_FLOAT) putc_(pr, '[');
  put(pr, x->s, x->len);
  if (kind == P_FLOAT) putc_(pr, ']');
}

static void print(printer_t *pr, int i) {
  if (i < 0) {
    pr->fail = true;
    return;
  }
  if (!enter(pr)) return;
  const hci_dm_node_t *x = &pr->n[i];
  switch (x->k) {
    case K_NAME:
    case K_BUILTIN:
    case K_STD: put(pr, x->s, x->len); break;
    case K_QUAL:
      print(pr, x->a);
      puts_(pr, "::");
      print(pr, x->b);
      break;
    case K_TEMPLATE: {
      int hold = pr->cur_template;
      pr->cur_template = i;
      print(pr, x->a);
      print_template_args(pr, x->b);
      pr->cur_template = hold;
      break;
    }
    case K_LIST: print_list(pr, i); break;
    case K_PACK: print_list(pr, x->a); break;
    case K_TAGGED:
      print(pr, x->a);
      print_in(pr, "[abi:", x->b, "]");
      break;
    case K_CTOR: print(pr, x->a); break;
    case K_DTOR: putc_(pr, '~'); print(pr, x->a); break;
    case K_LOCAL:
      print(pr, x->a);
      puts_(pr, "::");
      print(pr, x->b);
      break;
    case K_DEFARG:
      puts_(pr, "{default arg#");
      put_num(pr, (long)x->b + 1);
      puts_(pr, "}::");
      print(pr, x->a);
      break;
    case K_LAMBDA:
      puts_(pr, "{lambda(");
      pr->lambda_arg++;
      print_list(pr, x->a);
      pr->lambda_arg--;
      puts_(pr, ")#");
      put_num(pr, (long)x->b + 1);
      putc_(pr, '}');
      break;
    case K_UNNAMED:
      puts_(pr, "{unnamed type#");
      put_num(pr, (long)x->b + 1);
      putc_(pr, '}');
      break;
    case K_OPERATOR: {
      const char *nm = ops[x->f].name;
      size_t len = strlen(nm);
      puts_(pr, "operator");
      if (is_lower(nm[0])) putc_(pr, ' ');
      if (nm[len - 1] == ' ') len--;
      put(pr, nm, len);
      break;
    }
    case K_LITOP:
      puts_(pr, "operator\"\" ");
      print(pr, x->a);
      break;
    case K_CONV: {
      puts_(pr, "operator ");
      tctx_t c = {pr->cur_template, pr->ctx};
      const tctx_t *hold = pr->ctx;
      if (c.tmpl >= 0) pr->ctx = &c;
      print_decl(pr, x->a, NULL);
      pr->ctx = hold;
      break;
    }
    case K_SPECIAL:
      put(pr, x->s, x->len);
      print_decl(pr, x->a, NULL);
      break;
    case K_CTVTBL:
      puts_(pr, "construction vtable for ");
      print_decl(pr, x->a, NULL);
      puts_(pr, "-in-");
      print_decl(pr, x->b, NULL);
      break;
    case K_REFTEMP:
      print_in(pr, "reference temporary #", x->b, " for ");
      print(pr, x->a);
      break;
    case K_NUMBER: put_num(pr, x->b); break;
    case K_CLONE:
      print(pr, x->a);
      puts_(pr, " [clone ");
      put(pr, x->s, x->len);
      putc_(pr, ']');
      break;
    case K_DECLTYPE: print_in(pr, "decltype (", x->a, ")"); break;
    case K_FPARM:
      if (x->b == 0) puts_(pr, "this");
      else {
        puts_(pr, "{parm#");
        put_num(pr, x->b);
        putc_(pr, '}');
      }
      break;
    case K_LITERAL: print_literal(pr, x); break;
    case K_UNARY: {
      const char *code = ops[x->f].code;
      int operand = x->a;
      if (strcmp(code, "sZ") == 0) {
        int pack = find_pack(pr, operand, 0);
        if (pack < 0) {
          pr->fail = true;
          break;
        }
        put_num(pr, list_len(pr, pr->n[pack].a));
        break;
      }
      if (strcmp(code, "ad") == 0 && pr->n[operand].k == K_TYPED &&
          pr->n[pr->n[operand].a].k == K_QUAL)
        operand = pr->n[operand].a;
      print_expr_op(pr, x->f);
      if (strcmp(code, "st") == 0 || strcmp(code, "at") == 0) {
        putc_(pr, '(');
        print_decl(pr, operand, NULL);
        putc_(pr, ')');
      } else {
        print_subexpr(pr, operand);
      }
      break;
    }
    case K_BINARY: {
      const char *code = ops[x->f].code;
      bool gt = strcmp(code, "gt") == 0;
      if (gt) putc_(pr, '(');
      if (strcmp(code, "cl") == 0 && pr->n[x->a].k == K_TYPED) print_subexpr(pr, pr->n[x->a].a);
      else print_subexpr(pr, x->a);
      if (strcmp(code, "ix") == 0) {
        putc_(pr, '[');
        print(pr, x->b);
        putc_(pr, ']');
      } else {
        if (strcmp(code, "cl") != 0) print_expr_op(pr, x->f);
        print_subexpr(pr, x->b);
      }
      if (gt) putc_(pr, ')');
      break;
    }
    case K_TRINARY: {
      print_subexpr(pr, x->a);
      putc_(pr, '?');
      print_subexpr(pr, pr->n[x->b].a);
      puts_(pr, " : ");
      print_subexpr(pr, pr->n[pr->n[x->b].b].a);
      break;
    }
    case K_CAST:
      putc_(pr, '(');
      print_decl(pr, x->a, NULL);
      putc_(pr, ')');
      print_subexpr(pr, x->b);
      break;
    default: print_decl(pr, i, NULL); break;
  }
  pr->depth--;
}

/* ---------------------------------------------------------------- entry */

/* .cold, .isra.0, .constprop.0, .lto_priv.0 ...: one " [clone ...]" each */
static int clone_suffixes(parser_t *ps, int r) {
  while (!ps->fail && peek(ps) == '.') {
    char c = peek2(ps);
    if (!(is_lower(c) || c == '_' || is_digit(c))) break;
    const char *s = ps->p;
    ps->p += 2;
    while (is_lower(peek(ps)) || is_digit(peek(ps)) || peek(ps) == '_') ps->p++;
    while (peek(ps) == '.' && is_digit(peek2(ps))) {
      ps->p += 2;
      while (is_digit(peek(ps))) ps->p++;
    }
    r = node(ps, K_CLONE, r, -1);
    if (r >= 0) {
      ps->n[r].s = s;
      ps->n[r].len = (uint16_t)(ps->p - s);
    }
  }
  return r;
}

bool hci_demangle(const char *mangled, char *out, size_t cap, hci_demangle_work_t *work) {
  if (out == NULL || cap == 0 || mangled == NULL || work == NULL) return false;
  out[0] = 0;
  size_t len = strnlen(mangled, HC_DM_MAX_INPUT + 1);
  if (len > HC_DM_MAX_INPUT || len < 3 || mangled[0] != '_' || mangled[1] != 'Z') return false;
  parser_t ps = {.p = mangled + 2, .end = mangled + len, .n = work->nodes, .subs = work->subs,
                 .last_name = -1};
  int root = parse_encoding(&ps, true);
  /* clones are of functions ("_ZN1A1xE.cold" is refused, as c++filt does) */
  if (root >= 0 && peek(&ps) == '.' && ps.n[root].k == K_TYPED) root = clone_suffixes(&ps, root);
  if (ps.fail || root < 0 || ps.p != ps.end) return false;
  printer_t pr = {.n = work->nodes, .out = out, .cap = cap, .cur_template = -1};
  print_decl(&pr, root, NULL);
  if (pr.fail || pr.len >= cap) {
    out[0] = 0;
    return false;
  }
  out[pr.len] = 0;
  return true;
}
