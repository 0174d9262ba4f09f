/* scopetool._speedups: the common path of `Contract.prepare` in C.
 *
 * It is optional. `scopetool._contract` installs `prepare` from here when the module imports (and
 * SCOPETOOL_PURE_PYTHON is not set); the pure-Python `prepare` stays the reference and does every
 * part this path does not: wrong types, another name, long or blank arguments, rejections other
 * than pydantic's, and every document the scan below cannot vouch for. The two must agree on every
 * input (tests/test_speedups.py and the fuzzer compare them).
 *
 * The scan replaces the Python member count: after pydantic-core accepted a document (so it is JSON:
 * the grammar holds, and NaN or Infinity are the only tokens beyond the standard), it reads the raw
 * text once and vouches that no object holds a member name twice, that every number is plain (no
 * exponent, at most 15 digits: exact in a double, never overflowing one), that no NaN or Infinity
 * token appears and that the strings are well-formed Unicode. Whatever it cannot vouch for goes to the
 * Python checks.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define OK 0
#define UNSURE 1
#define FAILED (-1)

/* Deeper documents go to the Python checks (pydantic-core's own limit is higher). */
#define MAX_DEPTH 100
/* At most 15 digits: any such integer is exact in a double, and no such number overflows one. */
#define MAX_PLAIN_DIGITS 15
/* Up to this many members, names are compared pairwise; beyond, through a hash table. */
#define PAIRWISE_MEMBERS 16

/* -- member names of the open objects, as spans of the raw text */

typedef struct {
    const char *start;
    Py_ssize_t size; /* in bytes */
} Span;

typedef struct {
    Span *spans;
    Py_ssize_t count;
    Py_ssize_t capacity;
    Span inline_spans[32];
} Names;

static void names_init(Names *names)
{
    names->spans = names->inline_spans;
    names->count = 0;
    names->capacity = 32;
}

static void names_free(Names *names)
{
    if (names->spans != names->inline_spans) {
        PyMem_Free(names->spans);
    }
}

static int names_push(Names *names, const char *start, Py_ssize_t size)
{
    if (names->count == names->capacity) {
        Py_ssize_t capacity = names->capacity * 2;
        Span *spans = PyMem_Malloc((size_t)capacity * sizeof(Span));
        if (spans == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(spans, names->spans, (size_t)names->count * sizeof(Span));
        names_free(names);
        names->spans = spans;
        names->capacity = capacity;
    }
    names->spans[names->count].start = start;
    names->spans[names->count].size = size;
    names->count++;
    return 0;
}

static inline int spans_equal(const Span *a, const Span *b)
{
    /* Names are short and mostly differ early: a byte loop beats a call to memcmp. */
    if (a->size != b->size) {
        return 0;
    }
    for (Py_ssize_t k = 0; k < a->size; k++) {
        if (a->start[k] != b->start[k]) {
            return 0;
        }
    }
    return 1;
}

static size_t span_hash(const Span *span)
{
    /* FNV-1a: the table only spreads names, equality is always checked in full. */
    size_t hash = 2166136261u;
    for (Py_ssize_t k = 0; k < span->size; k++) {
        hash = (hash ^ (unsigned char)span->start[k]) * 16777619u;
    }
    return hash;
}

static int names_distinct(Names *names, Py_ssize_t first)
{
    /* OK when the names from `first` on are all different, UNSURE when two are equal. */
    const Span *spans = names->spans + first;
    Py_ssize_t count = names->count - first;
    if (count <= PAIRWISE_MEMBERS) {
        for (Py_ssize_t a = 1; a < count; a++) {
            for (Py_ssize_t b = 0; b < a; b++) {
                if (spans_equal(&spans[a], &spans[b])) {
                    return UNSURE;
                }
            }
        }
        return OK;
    }
    size_t slots = 64;
    while (slots < (size_t)count * 2) {
        slots *= 2;
    }
    Py_ssize_t *table = PyMem_Malloc(slots * sizeof(Py_ssize_t));
    if (table == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    for (size_t k = 0; k < slots; k++) {
        table[k] = -1;
    }
    int result = OK;
    for (Py_ssize_t a = 0; a < count && result == OK; a++) {
        size_t slot = span_hash(&spans[a]) & (slots - 1);
        while (table[slot] >= 0) {
            if (spans_equal(&spans[table[slot]], &spans[a])) {
                result = UNSURE;
                break;
            }
            slot = (slot + 1) & (slots - 1);
        }
        table[slot] = a;
    }
    PyMem_Free(table);
    return result;
}

static int close_innermost(Names *names, const Py_ssize_t *first, int *depth)
{
    /* A '}' outside strings ends the innermost open object (its names start at first[*depth]): OK when
     * its names are all different (they are dropped), UNSURE when two are equal or none is open. */
    if (*depth == 0) {
        return UNSURE;
    }
    Py_ssize_t start = first[(*depth)--];
    int result = names_distinct(names, start);
    names->count = start;
    return result;
}

static inline int is_space(Py_UCS4 c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* -- characters a string holds as they are: not '"', not '\\', not a control, ASCII */

static unsigned char plain_ascii[128];

static void plain_init(void)
{
    for (int c = 0x20; c < 0x80; c++) {
        plain_ascii[c] = c != '"' && c != '\\';
    }
}

#define PLAIN(c) ((Py_UCS4)(c) < 0x80 && plain_ascii[(c)])

/* -- UTF-8 (bytes only): the width of the well-formed sequence at s[i] (s[i] >= 0x80), or 0 */

static Py_ssize_t utf8_sequence(const Py_UCS1 *s, Py_ssize_t n, Py_ssize_t i)
{
    Py_UCS1 lead = s[i];
    Py_ssize_t width;
    Py_UCS1 low = 0x80, high = 0xBF; /* the range of the second byte (RFC 3629, table 3-7 of Unicode) */
    if (lead >= 0xC2 && lead <= 0xDF) {
        width = 2;
    }
    else if (lead >= 0xE0 && lead <= 0xEF) {
        width = 3;
        if (lead == 0xE0) {
            low = 0xA0; /* no overlong forms */
        }
        else if (lead == 0xED) {
            high = 0x9F; /* no surrogates */
        }
    }
    else if (lead >= 0xF0 && lead <= 0xF4) {
        width = 4;
        if (lead == 0xF0) {
            low = 0x90;
        }
        else if (lead == 0xF4) {
            high = 0x8F; /* nothing above U+10FFFF */
        }
    }
    else {
        return 0;
    }
    if (n - i < width || s[i + 1] < low || s[i + 1] > high) {
        return 0;
    }
    for (Py_ssize_t k = 2; k < width; k++) {
        if (s[i + k] < 0x80 || s[i + k] > 0xBF) {
            return 0;
        }
    }
    return width;
}

/* -- the scan, once per code-unit width */

#define CH Py_UCS1
#define CH_BYTES 1
#define FN(name) name##_utf8
#define UTF8 1
#include "_speedups_scan.h"
#undef CH
#undef FN
#undef UTF8

#define CH Py_UCS1
#define FN(name) name##_ucs1
#define UTF8 0
#include "_speedups_scan.h"
#undef CH
#undef CH_BYTES
#undef FN

#define CH Py_UCS2
#define CH_BYTES 2
#define FN(name) name##_ucs2
#include "_speedups_scan.h"
#undef CH
#undef CH_BYTES
#undef FN

#define CH Py_UCS4
#define CH_BYTES 4
#define FN(name) name##_ucs4
#include "_speedups_scan.h"
#undef CH
#undef CH_BYTES
#undef FN
#undef UTF8

#if defined(__SSE2__) && defined(__GNUC__)
/* -- the same scan, 64 bytes at a time, for one-byte text without a backslash (most arguments)
 *
 * Bit masks over each block tell where the quotes, the structure (":", "{", "}"), the digits and dots,
 * the letters e and E, and the N and I that start NaN and Infinity are; a prefix XOR of the quotes marks
 * what lies inside strings. The text is JSON, so outside strings an "e" or "E" right after a digit is
 * an exponent and anywhere else belongs to true or false. Only the structure is visited one by one. A
 * backslash anywhere sends the text to the scalar scan. */

#define RESCAN 2

typedef struct {
    __m128i part[4];
} Block;

static inline uint64_t block_bits(const Block *block, __m128i (*test)(__m128i))
{
    uint64_t bits = 0;
    for (int k = 0; k < 4; k++) {
        bits |= (uint64_t)(uint32_t)_mm_movemask_epi8(test(block->part[k])) << (16 * k);
    }
    return bits;
}

static inline __m128i is_quote(__m128i v) { return _mm_cmpeq_epi8(v, _mm_set1_epi8('"')); }
static inline __m128i is_backslash(__m128i v) { return _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')); }
static inline __m128i is_any_of(__m128i v, char a, char b, char c)
{
    return _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(a)),
                        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(b)), _mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
}
static inline __m128i is_structure(__m128i v) { return is_any_of(v, ':', '{', '}'); }
/* '.', '/' and the digits: outside strings only numbers hold them (a '/' is never there). */
static inline __m128i is_numeric(__m128i v)
{
    return _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('.' - 1)), _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
}
/* "e" or "E": outside strings, an exponent right after a digit, else part of true or false. */
static inline __m128i is_e(__m128i v) { return _mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8('e')); }
/* Outside strings these start NaN or Infinity. */
static inline __m128i is_n_or_i(__m128i v)
{
    return _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('N')), _mm_cmpeq_epi8(v, _mm_set1_epi8('I')));
}

static inline int block_has(const Block *block, __m128i (*test)(__m128i))
{
    /* Whether any byte of the block passes `test`: one mask instead of four. */
    return _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(test(block->part[0]), test(block->part[1])),
                                          _mm_or_si128(test(block->part[2]), test(block->part[3])))) != 0;
}

static inline uint64_t prefix_xor(uint64_t bits)
{
    bits ^= bits << 1;
    bits ^= bits << 2;
    bits ^= bits << 4;
    bits ^= bits << 8;
    bits ^= bits << 16;
    bits ^= bits << 32;
    return bits;
}

static inline void note_quotes(uint64_t quotes, Py_ssize_t base, Py_ssize_t *last, Py_ssize_t *before)
{
    /* Keep the positions of the last two quotes seen, for a name that a later block's ":" ends. */
    if (quotes != 0) {
        int top = 63 - __builtin_clzll(quotes);
        uint64_t rest = quotes & ~(UINT64_C(1) << top);
        *before = rest != 0 ? base + 63 - __builtin_clzll(rest) : *last;
        *last = base + top;
    }
}

static int vouch_blocks(const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t first[MAX_DEPTH + 1];
    int depth = 0;
    uint64_t inside = 0;                  /* all ones while a string is open across a block boundary */
    uint64_t numeric_before = 0;          /* 1 when the previous block ended with a digit or a dot */
    Py_ssize_t run = 0;                   /* digits and dots reaching the end of the previous block */
    Py_ssize_t last_quote = -1, quote_before = -1; /* the last two quotes of the earlier blocks */
    Names names;
    names_init(&names);
    int result = UNSURE;
    Py_ssize_t i = skip_space_ucs1(s, n, 0);
    if (i >= n || s[i] != '{') {
        goto done;
    }
    for (Py_ssize_t base = 0; base < n; base += 64) {
        Py_UCS1 padded[64];
        const Py_UCS1 *p = s + base;
        if (n - base < 64) {
            memset(padded, ' ', sizeof padded); /* whitespace: nothing to see */
            memcpy(padded, p, (size_t)(n - base));
            p = padded;
        }
        Block block;
        for (int k = 0; k < 4; k++) {
            block.part[k] = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        }
        if (block_has(&block, is_backslash)) {
            result = RESCAN;
            goto done;
        }
        uint64_t quotes = block_bits(&block, is_quote);
        uint64_t in_string = prefix_xor(quotes) ^ inside; /* opening quotes and what strings hold */
        inside = (uint64_t)((int64_t)in_string >> 63);
        uint64_t outside = ~(in_string | quotes);
        if (outside == 0) {
            /* All string: nothing else to look at (quotes, if any, were tracked above). */
            numeric_before = 0;
            run = 0;
            note_quotes(quotes, base, &last_quote, &quote_before);
            continue;
        }
        uint64_t numeric = block_bits(&block, is_numeric) & outside;
        uint64_t exponent = block_bits(&block, is_e) & outside & ((numeric << 1) | numeric_before);
        if (exponent != 0 || (block_has(&block, is_n_or_i) && (block_bits(&block, is_n_or_i) & outside) != 0)) {
            goto done;
        }
        numeric_before = numeric >> 63;
        /* A number of 16 digits and dots may still hold only 15 digits: the scalar scan counts them. */
        Py_ssize_t leading = numeric == ~(uint64_t)0 ? 64 : __builtin_ctzll(~numeric);
        uint64_t long_run = numeric;
        long_run &= long_run >> 1;
        long_run &= long_run >> 2;
        long_run &= long_run >> 4;
        long_run &= long_run >> 8;
        if (run + leading >= 16 || long_run != 0) {
            result = RESCAN;
            goto done;
        }
        run = numeric == ~(uint64_t)0 ? run + 64 : __builtin_clzll(~numeric);
        uint64_t events = block_bits(&block, is_structure) & outside;
        while (events != 0) {
            int bit = __builtin_ctzll(events);
            events &= events - 1;
            Py_ssize_t at = base + bit;
            if (s[at] == ':') {
                /* The name is the string just before: between the last two quotes. */
                uint64_t before = quotes & ((UINT64_C(1) << bit) - 1);
                Py_ssize_t close = last_quote, open = quote_before;
                if (before != 0) {
                    int top = 63 - __builtin_clzll(before);
                    close = base + top;
                    before &= ~(UINT64_C(1) << top);
                    open = before != 0 ? base + 63 - __builtin_clzll(before) : last_quote;
                }
                if (open < 0 || close <= open) {
                    goto done;
                }
                if (depth == 0 || names_push(&names, (const char *)(s + open + 1), close - open - 1) < 0) {
                    result = depth == 0 ? UNSURE : FAILED;
                    goto done;
                }
            }
            else if (s[at] == '{') {
                if (depth == MAX_DEPTH) {
                    goto done;
                }
                first[++depth] = names.count;
            }
            else {
                int closed = close_innermost(&names, first, &depth);
                if (closed != OK) {
                    result = closed;
                    goto done;
                }
                if (depth == 0) {
                    /* The top object is closed: only whitespace may follow. */
                    result = skip_space_ucs1(s, n, at + 1) == n ? OK : UNSURE;
                    goto done;
                }
            }
        }
        note_quotes(quotes, base, &last_quote, &quote_before);
    }
done:
    names_free(&names);
    return result;
}
#endif

static int vouch(PyObject *raw)
{
    /* OK, UNSURE or FAILED for exact str or bytes (the callers check the type). */
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_CheckExact(raw) && PyUnicode_READY(raw) < 0) {
        return FAILED;
    }
#endif
    if (PyBytes_CheckExact(raw)) {
        const Py_UCS1 *bytes = (const Py_UCS1 *)PyBytes_AS_STRING(raw);
#if defined(__SSE2__) && defined(__GNUC__)
        int fast = vouch_blocks(bytes, PyBytes_GET_SIZE(raw));
        if (fast != RESCAN) {
            return fast;
        }
#endif
        return vouch_utf8(bytes, PyBytes_GET_SIZE(raw));
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(raw);
    switch (PyUnicode_KIND(raw)) {
    case PyUnicode_1BYTE_KIND: {
#if defined(__SSE2__) && defined(__GNUC__)
        int fast = vouch_blocks(PyUnicode_1BYTE_DATA(raw), n);
        if (fast != RESCAN) {
            return fast;
        }
#endif
        return vouch_ucs1(PyUnicode_1BYTE_DATA(raw), n);
    }
    case PyUnicode_2BYTE_KIND:
        return vouch_ucs2(PyUnicode_2BYTE_DATA(raw), n);
    default:
        return vouch_ucs4(PyUnicode_4BYTE_DATA(raw), n);
    }
}

static PyObject *scan(PyObject *module, PyObject *raw)
{
    if (!PyBytes_CheckExact(raw) && !PyUnicode_CheckExact(raw)) {
        PyErr_Format(PyExc_TypeError, "scan() takes str or bytes, not %.100s", Py_TYPE(raw)->tp_name);
        return NULL;
    }
    int result = vouch(raw);
    if (result == FAILED) {
        return NULL;
    }
    return PyBool_FromLong(result == OK);
}

/* -- base32 */

static PyObject *base32(PyObject *module, PyObject *digest)
{
    /* Lowercase, unpadded RFC 4648 base32 of bytes: the driver's key text (see scopetool.driver). */
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    if (!PyBytes_CheckExact(digest)) {
        PyErr_Format(PyExc_TypeError, "base32() takes bytes, not %.100s", Py_TYPE(digest)->tp_name);
        return NULL;
    }
    const unsigned char *in = (const unsigned char *)PyBytes_AS_STRING(digest);
    Py_ssize_t size = PyBytes_GET_SIZE(digest);
    if (size > PY_SSIZE_T_MAX / 8 - 1) {
        return PyErr_NoMemory();
    }
    PyObject *text = PyUnicode_New((size * 8 + 4) / 5, 127);
    if (text == NULL) {
        return NULL;
    }
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(text);
    uint32_t buffer = 0;
    int bits = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        buffer = (buffer << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            *out++ = (Py_UCS1)alphabet[(buffer >> bits) & 31];
        }
    }
    if (bits > 0) {
        *out++ = (Py_UCS1)alphabet[(buffer << (5 - bits)) & 31];
    }
    return text;
}

/* -- canonical JSON of a parsed value (the driver's call digest) */

/* The bytes `scopetool._json.canonical_json` gives, for the values jiter parses (exact dicts with str
 * names, lists, str, int, True/False/None, LosslessFloat); anything else, an object with a name beyond
 * the BMP (where UTF-16 order and UTF-8 order differ) or any error makes `canonical` return None, and
 * the Python encoder, the reference, does the whole value. */

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
    char inline_data[256];
} Out;

static int out_reserve(Out *out, Py_ssize_t more)
{
    if (out->size + more <= out->capacity) {
        return 0;
    }
    if (more > PY_SSIZE_T_MAX / 4 - out->size) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t capacity = (out->size + more) * 2;
    char *data = out->data == out->inline_data ? PyMem_Malloc(capacity) : PyMem_Realloc(out->data, capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (out->data == out->inline_data) {
        memcpy(data, out->inline_data, out->size);
    }
    out->data = data;
    out->capacity = capacity;
    return 0;
}

static inline int out_write(Out *out, const char *bytes, Py_ssize_t size)
{
    if (out_reserve(out, size) < 0) {
        return -1;
    }
    memcpy(out->data + out->size, bytes, size);
    out->size += size;
    return 0;
}

/* `json.encoder.encode_basestring` of the text, in UTF-8 (its escapes, everything else raw). */
static int out_string(Out *out, const char *text, Py_ssize_t size)
{
    static const char hex[] = "0123456789abcdef";
    if (out_reserve(out, size * 6 + 2) < 0) {
        return -1;
    }
    char *w = out->data + out->size;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *w++ = (char)c;
            continue;
        }
        *w++ = '\\';
        switch (c) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        default:
            *w++ = 'u';
            *w++ = '0';
            *w++ = '0';
            *w++ = hex[c >> 4];
            *w++ = hex[c & 15];
        }
    }
    *w++ = '"';
    out->size = w - out->data;
    return 0;
}

typedef struct {
    const char *name;
    Py_ssize_t size;
    PyObject *value;
} Member;

static int member_order(const void *a, const void *b)
{
    const Member *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->size < y->size ? x->size : y->size);
    return c != 0 ? c : (x->size > y->size) - (x->size < y->size);
}

#define CANONICAL_UNSURE 1

static int canonical_value(Out *out, PyObject *value, PyObject *lossless, int depth);

static int canonical_object(Out *out, PyObject *value, PyObject *lossless, int depth)
{
    Py_ssize_t count = PyDict_GET_SIZE(value);
    Member inline_members[16];
    Member *members = count <= 16 ? inline_members : PyMem_Malloc(sizeof(Member) * count);
    if (members == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int status = 0;
    Py_ssize_t position = 0, k = 0;
    PyObject *name, *member;
    while (PyDict_Next(value, &position, &name, &member)) {
        if (!PyUnicode_CheckExact(name)) {
            status = CANONICAL_UNSURE;
            goto done;
        }
        members[k].name = PyUnicode_AsUTF8AndSize(name, &members[k].size);
        if (members[k].name == NULL) {
            status = -1;
            goto done;
        }
        if (!PyUnicode_IS_ASCII(name) && PyUnicode_MAX_CHAR_VALUE(name) > 0xFFFF) {
            status = CANONICAL_UNSURE; /* UTF-16 order differs from code point order beyond the BMP */
            goto done;
        }
        members[k].value = member;
        k++;
    }
    if (k != count) {
        status = CANONICAL_UNSURE;
        goto done;
    }
    qsort(members, count, sizeof(Member), member_order);
    if (out_write(out, "{", 1) < 0) {
        status = -1;
        goto done;
    }
    for (k = 0; k < count; k++) {
        if ((k && out_write(out, ",", 1) < 0) || out_string(out, members[k].name, members[k].size) < 0 ||
            out_write(out, ":", 1) < 0) {
            status = -1;
            goto done;
        }
        status = canonical_value(out, members[k].value, lossless, depth + 1);
        if (status != 0) {
            goto done;
        }
    }
    status = out_write(out, "}", 1);
done:
    if (members != inline_members) {
        PyMem_Free(members);
    }
    return status;
}

static int canonical_value(Out *out, PyObject *value, PyObject *lossless, int depth)
{
    if (depth > MAX_DEPTH) {
        return CANONICAL_UNSURE;
    }
    if (PyDict_CheckExact(value)) {
        return canonical_object(out, value, lossless, depth);
    }
    if (PyList_CheckExact(value)) {
        if (out_write(out, "[", 1) < 0) {
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            if (i && out_write(out, ",", 1) < 0) {
                return -1;
            }
            int status = canonical_value(out, PyList_GET_ITEM(value, i), lossless, depth + 1);
            if (status != 0) {
                return status;
            }
        }
        return out_write(out, "]", 1);
    }
    if (PyUnicode_CheckExact(value)) {
        Py_ssize_t size;
        const char *text = PyUnicode_AsUTF8AndSize(value, &size);
        return text == NULL ? -1 : out_string(out, text, size);
    }
    if (value == Py_True) {
        return out_write(out, "true", 4);
    }
    if (value == Py_False) {
        return out_write(out, "false", 5);
    }
    if (value == Py_None) {
        return out_write(out, "null", 4);
    }
    PyObject *text;
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (!overflow && !(number == -1 && PyErr_Occurred())) {
            char digits[24], *end = digits + sizeof digits, *w = end;
            unsigned long long magnitude = number < 0 ? 0ULL - (unsigned long long)number : (unsigned long long)number;
            do {
                *--w = (char)('0' + magnitude % 10);
                magnitude /= 10;
            } while (magnitude);
            if (number < 0) {
                *--w = '-';
            }
            return out_write(out, w, end - w);
        }
        PyErr_Clear();
        text = PyObject_Str(value);
    } else if ((PyObject *)Py_TYPE(value) == lossless) {
        text = PyObject_Bytes(value);
    } else {
        return CANONICAL_UNSURE;
    }
    if (text == NULL) {
        return -1;
    }
    int status;
    if (PyBytes_Check(text)) {
        status = out_write(out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
    } else {
        Py_ssize_t size;
        const char *digits = PyUnicode_AsUTF8AndSize(text, &size);
        status = digits == NULL ? -1 : out_write(out, digits, size);
    }
    Py_DECREF(text);
    return status;
}

static PyObject *canonical(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "canonical() takes a bytes prefix, a parsed JSON value and jiter's LosslessFloat");
        return NULL;
    }
    Out out = {.data = NULL, .size = 0, .capacity = sizeof out.inline_data};
    out.data = out.inline_data;
    int status = out_write(&out, PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]));
    if (status == 0) {
        status = canonical_value(&out, args[1], args[2], 0);
    }
    PyObject *result = NULL;
    if (status == 0) {
        result = PyBytes_FromStringAndSize(out.data, out.size);
    } else {
        PyErr_Clear(); /* the Python encoder does the value again, and raises what it raises */
        result = Py_NewRef(Py_None);
    }
    if (out.data != out.inline_data) {
        PyMem_Free(out.data);
    }
    return result;
}

/* -- prepare */

/* What `install` resolved once: the classes, the private slots' offsets and the Python fallbacks. */
static struct {
    PyTypeObject *contract, *invocation, *request, *admission, *error;
    PyObject *default_admission, *validation_error, *empty, *empty_text, *name_key, *arguments_key;
    PyObject *pure_prepare, *explain, *rejected_after, *check_members;
    Py_ssize_t contract_name, contract_validate, contract_flag_names, contract_flag_values;
    Py_ssize_t request_name, request_arguments;
    Py_ssize_t invocation_arguments, invocation_contract, invocation_admission, invocation_decoded;
    Py_ssize_t error_pending, error_pending_1, error_pending_2, error_pending_3;
    Py_ssize_t surely_small, max_bytes;
    PyMethodDef method;
    int installed;
} the;

#define SLOT(object, offset) (*(PyObject **)((char *)(object) + (offset)))

static PyObject *pure(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    /* The pure-Python prepare, with the same arguments. */
    Py_ssize_t total = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject *small[8];
    PyObject **stack = total < 8 ? small : PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
    if (stack == NULL) {
        return PyErr_NoMemory();
    }
    stack[0] = self;
    for (Py_ssize_t k = 0; k < total; k++) {
        stack[k + 1] = args[k];
    }
    PyObject *result = PyObject_Vectorcall(the.pure_prepare, stack, nargs + 1, kwnames);
    if (stack != small) {
        PyMem_Free(stack);
    }
    return result;
}

static PyObject *reject(PyObject *self, PyObject *raw)
{
    /* Validation failed: raise as the pure path does. Its ValidationError becomes a rejection whose
     * message is explained when first read; any other failure is classified by Python now. */
    PyObject *type, *failure, *traceback;
    PyErr_Fetch(&type, &failure, &traceback);
    /* pydantic-core raises its ValidationError as an instance, so the common case needs neither the
     * normalization nor a walk of the class hierarchy. */
    int validation = failure != NULL && type == the.validation_error && Py_TYPE(failure) == (PyTypeObject *)type;
    if (!validation) {
        PyErr_NormalizeException(&type, &failure, &traceback);
        if (failure == NULL) {
            Py_XDECREF(type);
            Py_XDECREF(traceback);
            return NULL;
        }
        if (!PyErr_GivenExceptionMatches(type, PyExc_Exception)) {
            /* KeyboardInterrupt, SystemExit and the like pass through untouched, as in the pure path. */
            PyErr_Restore(type, failure, traceback);
            return NULL;
        }
        validation = PyErr_GivenExceptionMatches(type, the.validation_error);
    }
    PyObject *error;
    if (validation) {
        /* Its traceback only leads into the validator: dropped, as the pure path does. */
        PyException_SetTraceback(failure, Py_None);
        error = the.error->tp_new(the.error, the.empty, NULL);
        if (error != NULL) {
            SLOT(error, the.error_pending) = Py_NewRef(the.explain);
            SLOT(error, the.error_pending_1) = Py_NewRef(self);
            SLOT(error, the.error_pending_2) = Py_NewRef(raw);
            SLOT(error, the.error_pending_3) = Py_NewRef(failure);
        }
    }
    else {
        if (traceback != NULL) {
            PyException_SetTraceback(failure, traceback);
        }
        error = PyObject_CallFunctionObjArgs(the.rejected_after, self, raw, failure, NULL);
    }
    Py_XDECREF(traceback);
    Py_DECREF(type);
    Py_DECREF(failure);
    if (error != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(error), error);
        Py_DECREF(error);
    }
    return NULL;
}

static int read_validator(PyObject *self, PyObject **validate, PyObject **flag_names, PyObject **flag_values)
{
    /* The contract's validator and the keyword flags it needs on every call (nested prebuilt models):
     * 0 when they are as `install` expects (flag names NULL for none), -1 when not. */
    *validate = SLOT(self, the.contract_validate);
    *flag_names = SLOT(self, the.contract_flag_names);
    *flag_values = SLOT(self, the.contract_flag_values);
    if (*validate == NULL || *validate == Py_None) {
        return -1;
    }
    if (*flag_names == Py_None) {
        *flag_names = NULL;
        return 0;
    }
    if (*flag_names == NULL || *flag_values == NULL || !PyTuple_CheckExact(*flag_names)
        || !PyTuple_CheckExact(*flag_values) || PyTuple_GET_SIZE(*flag_values) > 7
        || PyTuple_GET_SIZE(*flag_names) != PyTuple_GET_SIZE(*flag_values)) {
        return -1;
    }
    return 0;
}

static PyObject *call_validator(PyObject *raw, PyObject *validate, PyObject *flag_names, PyObject *flag_values)
{
    /* The validator on raw, with the flags read by `read_validator` passed as keywords. */
    if (flag_names == NULL) {
        return PyObject_Vectorcall(validate, &raw, 1, NULL);
    }
    Py_ssize_t count = PyTuple_GET_SIZE(flag_values);
    PyObject *call[8];
    call[0] = raw;
    for (Py_ssize_t k = 0; k < count; k++) {
        call[k + 1] = PyTuple_GET_ITEM(flag_values, k);
    }
    return PyObject_Vectorcall(validate, call, 1, flag_names);
}

static PyObject *admit(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *raw,
                       int opens, PyObject *admission, PyObject *validate, PyObject *flag_names,
                       PyObject *flag_values)
{
    /* The common path once every input is held: validate, scan, make the Invocation. */
    PyObject *value = call_validator(raw, validate, flag_names, flag_values);
    if (value == NULL) {
        if (!opens) {
            /* Maybe blank (which means {}): the pure path decides, validating again. An interrupt or
             * an exit is not a validation failure: it passes through. */
            if (!PyErr_ExceptionMatches(PyExc_Exception)) {
                return NULL;
            }
            PyErr_Clear();
            return pure(self, args, nargs, kwnames);
        }
        return reject(self, raw);
    }

    int vouched = vouch(raw);
    if (vouched == FAILED) {
        Py_DECREF(value);
        return NULL;
    }
    if (vouched == UNSURE) {
        PyObject *checked = PyObject_CallFunctionObjArgs(the.check_members, self, raw, value, NULL);
        if (checked == NULL) {
            Py_DECREF(value);
            return NULL;
        }
        Py_DECREF(checked);
    }

    PyObject *decoded = PyList_New(1);
    if (decoded == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    PyList_SET_ITEM(decoded, 0, value);
    PyObject *invocation = the.invocation->tp_alloc(the.invocation, 0);
    if (invocation == NULL) {
        Py_DECREF(decoded);
        return NULL;
    }
    SLOT(invocation, the.invocation_arguments) = Py_NewRef(raw);
    SLOT(invocation, the.invocation_contract) = Py_NewRef(self);
    SLOT(invocation, the.invocation_admission) = Py_NewRef(admission);
    SLOT(invocation, the.invocation_decoded) = decoded;
    return invocation;
}

static PyObject *prepare(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames != NULL || nargs < 1 || nargs > 2) {
        return pure(self, args, nargs, kwnames);
    }
    PyObject *request = args[0];
    PyObject *admission = nargs == 2 ? args[1] : the.default_admission;
    if (Py_TYPE(request) != the.request || Py_TYPE(admission) != the.admission) {
        return pure(self, args, nargs, kwnames);
    }
    PyObject *name = SLOT(request, the.request_name);
    PyObject *own_name = SLOT(self, the.contract_name);
    if (name != own_name) {
        if (name == NULL || own_name == NULL || !PyUnicode_CheckExact(name)
            || PyUnicode_GET_LENGTH(name) != PyUnicode_GET_LENGTH(own_name) || PyUnicode_Compare(name, own_name) != 0) {
            return pure(self, args, nargs, kwnames);
        }
    }
    PyObject *raw = SLOT(request, the.request_arguments);
    PyObject *validate, *flag_names, *flag_values;
    if (raw == NULL || read_validator(self, &validate, &flag_names, &flag_values) < 0) {
        return pure(self, args, nargs, kwnames);
    }
    Py_ssize_t size;
    int opens;
    if (PyUnicode_CheckExact(raw)) {
        size = PyUnicode_GET_LENGTH(raw);
        if (size > the.surely_small) {
            return pure(self, args, nargs, kwnames); /* long: Python measures its UTF-8 size */
        }
        opens = size > 0 && PyUnicode_READ_CHAR(raw, 0) == '{';
    }
    else if (PyBytes_CheckExact(raw)) {
        size = PyBytes_GET_SIZE(raw);
        if (size > the.max_bytes) {
            return pure(self, args, nargs, kwnames);
        }
        opens = size > 0 && PyBytes_AS_STRING(raw)[0] == '{';
    }
    else {
        return pure(self, args, nargs, kwnames);
    }

    /* Held from here on: Python code runs inside the validator, and nothing it does to the request or
     * the contract may free what this call still reads. */
    Py_INCREF(raw);
    Py_INCREF(validate);
    Py_XINCREF(flag_names);
    Py_XINCREF(flag_values);
    PyObject *result = admit(self, args, nargs, kwnames, raw, opens, admission, validate, flag_names, flag_values);
    Py_DECREF(raw);
    Py_DECREF(validate);
    Py_XDECREF(flag_names);
    Py_XDECREF(flag_values);
    return result;
}

static PyObject *validate_as_prepare(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* validate(contract, raw): the contract's validator on raw, called as prepare calls it. */
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "validate() takes a contract and its raw arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *contract = args[0], *raw = args[1], *validator, *flag_names, *flag_values;
    if (!the.installed || Py_TYPE(contract) != the.contract) {
        PyErr_Format(PyExc_TypeError, "validate() takes a Contract, not %.100s", Py_TYPE(contract)->tp_name);
        return NULL;
    }
    if (read_validator(contract, &validator, &flag_names, &flag_values) < 0) {
        PyErr_SetString(PyExc_TypeError, "validate() needs a contract whose validator prepare calls in C");
        return NULL;
    }
    Py_INCREF(validator);
    Py_XINCREF(flag_names);
    Py_XINCREF(flag_values);
    PyObject *value = call_validator(raw, validator, flag_names, flag_values);
    Py_DECREF(validator);
    Py_XDECREF(flag_names);
    Py_XDECREF(flag_values);
    return value;
}

/* -- install */

static int slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *offset)
{
    /* The offset of `type`'s own __slots__ member `name`, read from its member descriptor. */
    PyObject *descriptor = PyDict_GetItemString(type->tp_dict, name);
    if (descriptor == NULL || !Py_IS_TYPE(descriptor, &PyMemberDescr_Type)
        || ((PyDescrObject *)descriptor)->d_type != type) {
        PyErr_Format(PyExc_TypeError, "%.100s has no slot %.100s of its own", type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "%.100s.%.100s is not a writable object slot", type->tp_name, name);
        return -1;
    }
    *offset = member->offset;
    return 0;
}

/* -- Request(name, arguments="")
 *
 * The frozen dataclass's constructor, in C: installed as the class's vectorcall, so building a request
 * costs an allocation and two slot writes instead of the generated __init__ and its two
 * object.__setattr__ calls. It takes exactly what that __init__ takes (name, then arguments, by
 * position or by keyword; arguments defaults to ""), checks no more than it does (nothing), and hands
 * anything else (a missing, repeated or unknown argument) to the class's own call, which raises the
 * dataclass's own TypeError. The instance is the same class with the same slots: still frozen. */

static PyObject *request_general(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* The class's ordinary call (type.__call__: object.__new__, then the dataclass's __init__). */
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *positional = PyTuple_New(nargs);
    if (positional == NULL) {
        return NULL;
    }
    for (Py_ssize_t k = 0; k < nargs; k++) {
        PyTuple_SET_ITEM(positional, k, Py_NewRef(args[k]));
    }
    PyObject *keywords = NULL;
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        keywords = PyDict_New();
        if (keywords == NULL) {
            Py_DECREF(positional);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            if (PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, k), args[nargs + k]) < 0) {
                Py_DECREF(positional);
                Py_DECREF(keywords);
                return NULL;
            }
        }
    }
    PyObject *made = PyType_Type.tp_call(type, positional, keywords);
    Py_DECREF(positional);
    Py_XDECREF(keywords);
    return made;
}

static int keyword_is(PyObject *key, PyObject *interned)
{
    return key == interned || (PyUnicode_Check(key) && PyUnicode_Compare(key, interned) == 0);
}

static PyObject *request_new(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if ((PyTypeObject *)type != the.request || nargs > 2) {
        return request_general(type, args, nargsf, kwnames);
    }
    PyObject *name = nargs > 0 ? args[0] : NULL;
    PyObject *arguments = nargs > 1 ? args[1] : NULL;
    Py_ssize_t count = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        if (name == NULL && keyword_is(key, the.name_key)) {
            name = args[nargs + k];
        }
        else if (arguments == NULL && keyword_is(key, the.arguments_key)) {
            arguments = args[nargs + k];
        }
        else {
            return request_general(type, args, nargsf, kwnames);
        }
    }
    if (name == NULL) {
        return request_general(type, args, nargsf, kwnames);
    }
    PyObject *request = the.request->tp_alloc(the.request, 0);
    if (request == NULL) {
        return NULL;
    }
    SLOT(request, the.request_name) = Py_NewRef(name);
    SLOT(request, the.request_arguments) = Py_NewRef(arguments == NULL ? the.empty_text : arguments);
    return request;
}

static int exact_class(PyObject *object, PyTypeObject **out)
{
    if (!PyType_Check(object) || !(((PyTypeObject *)object)->tp_flags & Py_TPFLAGS_HEAPTYPE)) {
        PyErr_SetString(PyExc_TypeError, "install() needs the classes scopetool defines");
        return -1;
    }
    *out = (PyTypeObject *)Py_NewRef(object);
    return 0;
}

static PyObject *install(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {
        "contract", "invocation", "request", "admission", "error", "default_admission", "validation_error",
        "pure_prepare", "explain", "rejected_after", "check_members", "surely_small", "max_bytes", NULL,
    };
    PyObject *contract, *invocation, *request, *admission, *error;
    if (the.installed) {
        PyErr_SetString(PyExc_RuntimeError, "install() runs once");
        return NULL;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$OOOOOOOOOOOnn:install", keywords, &contract, &invocation,
                                     &request, &admission, &error, &the.default_admission, &the.validation_error,
                                     &the.pure_prepare, &the.explain, &the.rejected_after, &the.check_members,
                                     &the.surely_small, &the.max_bytes)) {
        return NULL;
    }
    if (exact_class(contract, &the.contract) < 0 || exact_class(invocation, &the.invocation) < 0
        || exact_class(request, &the.request) < 0 || exact_class(admission, &the.admission) < 0
        || exact_class(error, &the.error) < 0) {
        return NULL;
    }
    if (slot_offset(the.contract, "_name", &the.contract_name) < 0
        || slot_offset(the.contract, "_validate", &the.contract_validate) < 0
        || slot_offset(the.contract, "_flag_names", &the.contract_flag_names) < 0
        || slot_offset(the.contract, "_flag_values", &the.contract_flag_values) < 0
        || slot_offset(the.request, "name", &the.request_name) < 0
        || slot_offset(the.request, "arguments", &the.request_arguments) < 0
        || slot_offset(the.invocation, "_arguments", &the.invocation_arguments) < 0
        || slot_offset(the.invocation, "_contract", &the.invocation_contract) < 0
        || slot_offset(the.invocation, "_admission", &the.invocation_admission) < 0
        || slot_offset(the.invocation, "_decoded", &the.invocation_decoded) < 0
        || slot_offset(the.error, "_pending", &the.error_pending) < 0
        || slot_offset(the.error, "_pending_1", &the.error_pending_1) < 0
        || slot_offset(the.error, "_pending_2", &the.error_pending_2) < 0
        || slot_offset(the.error, "_pending_3", &the.error_pending_3) < 0) {
        return NULL;
    }
    Py_INCREF(the.default_admission);
    Py_INCREF(the.validation_error);
    Py_INCREF(the.pure_prepare);
    Py_INCREF(the.explain);
    Py_INCREF(the.rejected_after);
    Py_INCREF(the.check_members);
    the.empty = PyTuple_New(0);
    the.empty_text = PyUnicode_FromStringAndSize("", 0);
    the.name_key = PyUnicode_InternFromString("name");
    the.arguments_key = PyUnicode_InternFromString("arguments");
    if (the.empty == NULL || the.empty_text == NULL || the.name_key == NULL || the.arguments_key == NULL) {
        return NULL;
    }
    /* The request's constructor (see request_new); its own call stays the fallback. */
    the.request->tp_vectorcall = request_new;
    /* The method keeps the pure prepare's docstring, so help() reads the same either way. */
    PyObject *doc = PyObject_GetAttrString(the.pure_prepare, "__doc__");
    if (doc == NULL) {
        return NULL;
    }
    if (PyUnicode_Check(doc)) {
        Py_ssize_t length;
        const char *text = PyUnicode_AsUTF8AndSize(doc, &length);
        char *copy = text == NULL ? NULL : PyMem_Malloc((size_t)length + 1);
        if (copy == NULL) {
            Py_DECREF(doc);
            return text == NULL ? NULL : PyErr_NoMemory();
        }
        memcpy(copy, text, (size_t)length + 1);
        the.method.ml_doc = copy; /* kept for the life of the process, as the method is */
    }
    Py_DECREF(doc);
    the.method.ml_name = "prepare";
    the.method.ml_meth = (PyCFunction)(void (*)(void))prepare;
    the.method.ml_flags = METH_FASTCALL | METH_KEYWORDS;
    the.installed = 1;
    return PyDescr_NewMethod(the.contract, &the.method);
}

static PyObject *build(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* build(cls, members, *values): a new cls made without its __init__, member descriptor members[i]
     * set to values[i] (what scopetool._native builds in Python, without a Python call per slot). */
    if (nargs < 2 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[1])
        || PyTuple_GET_SIZE(args[1]) != nargs - 2) {
        PyErr_SetString(PyExc_TypeError, "build(cls, members, *values) takes a class, a tuple and one value a member");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    PyObject *instance = type->tp_alloc(type, 0);
    if (instance == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs - 2; i++) {
        PyObject *member = PyTuple_GET_ITEM(args[1], i);
        descrsetfunc set = Py_TYPE(member)->tp_descr_set;
        if (set == NULL) {
            PyErr_Format(PyExc_TypeError, "build() members are slot descriptors, not %.100s", Py_TYPE(member)->tp_name);
            Py_DECREF(instance);
            return NULL;
        }
        if (set(member, instance, args[i + 2]) < 0) {
            Py_DECREF(instance);
            return NULL;
        }
    }
    return instance;
}

static PyObject *installed(PyObject *module, PyObject *unused)
{
    return PyBool_FromLong(the.installed);
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)scan, METH_O,
     "scan(raw, /)\n--\n\nWhether this module vouches for raw (str or bytes), a text a JSON parser accepted: one "
     "object, no repeated member name, no NaN, Infinity, exponent or number of more than 15 digits, well-formed "
     "strings. False means only 'cannot tell'; for text that is not JSON the answer means nothing."},
    {"validate", (PyCFunction)(void (*)(void))validate_as_prepare, METH_FASTCALL,
     "validate(contract, raw, /)\n--\n\nThe contract's validator on raw, called exactly as the C prepare calls it "
     "(with the keyword flags it needs on every call): its value, or its exception. For timing prepare's parts "
     "apart."},
    {"base32", (PyCFunction)base32, METH_O,
     "base32(digest, /)\n--\n\nLowercase, unpadded RFC 4648 base32 of bytes (the driver's key text)."},
    {"canonical", (PyCFunction)(void (*)(void))canonical, METH_FASTCALL,
     "canonical(prefix, value, lossless_float, /)\n--\n\nThe prefix and the canonical JSON of a parsed value, "
     "as scopetool._json.canonical_json writes it; None where that encoder must do it."},
    {"build", (PyCFunction)(void (*)(void))build, METH_FASTCALL,
     "build(cls, members, /, *values)\n--\n\nA new cls made without its __init__, each slot descriptor of members "
     "set to its value."},
    {"installed", installed, METH_NOARGS, "installed()\n--\n\nWhether install() has run in this process."},
    {"install", (PyCFunction)(void (*)(void))install, METH_VARARGS | METH_KEYWORDS,
     "Resolve the classes and slots once; return the C `prepare` as a method descriptor of the contract class."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "scopetool._speedups", "The common path of Contract.prepare in C (optional).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    plain_init();
    return PyModule_Create(&module_definition);
}
