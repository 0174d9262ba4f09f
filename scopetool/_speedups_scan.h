/* The vouching scan of `_speedups.c`, written once for one code-unit width and included three times:
 * with CH = Py_UCS1 for bytes (UTF-8, checked here) and for one-byte str, Py_UCS2 and Py_UCS4 for the
 * wider str kinds. FN(name) makes the per-width name; UTF8 is 1 only for bytes.
 *
 * Each function returns OK when it vouches for the part it read, UNSURE when it cannot (the caller then
 * asks the Python checks), FAILED with an exception set (memory only). Nothing here is trusted to
 * reject: UNSURE means "ask Python", never "invalid". The text was accepted by a JSON parser before
 * (pydantic-core's), so the grammar is not checked again; every read stays within the text whatever
 * it holds.
 */

static inline Py_ssize_t FN(skip_space)(const CH *s, Py_ssize_t n, Py_ssize_t i)
{
    /* The index of the first character at or after s[i] that is not JSON whitespace (n when none). */
    while (i < n && is_space(s[i])) {
        i++;
    }
    return i;
}

static inline int FN(read_hex4)(const CH *s, Py_ssize_t n, Py_ssize_t at, Py_UCS4 *unit)
{
    /* The four hex digits of a \u escape at s[at]. */
    Py_UCS4 value = 0;
    if (n - at < 4) {
        return UNSURE;
    }
    for (Py_ssize_t k = at; k < at + 4; k++) {
        Py_UCS4 c = s[k];
        int digit = c >= '0' && c <= '9' ? (int)(c - '0')
                    : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10)
                    : c >= 'A' && c <= 'F' ? (int)(c - 'A' + 10) : -1;
        if (digit < 0) {
            return UNSURE;
        }
        value = value * 16 + (Py_UCS4)digit;
    }
    *unit = value;
    return OK;
}

static inline __attribute__((always_inline)) int FN(skip_string)(const CH *s, Py_ssize_t n, Py_ssize_t *at, int *escaped)
{
    /* s[*at] is the opening quote; on OK *at is just past the closing one. */
    Py_ssize_t i = *at + 1;
    for (;;) {
        /* The plain characters of a string: all but the quote, the backslash, controls and (for the
         * checks below) non-ASCII. Sixteen at a time where SSE2 can, while far from the end. */
#if CH_BYTES == 1 && defined(__SSE2__)
        while (i + 16 <= n) {
            __m128i chunk = _mm_loadu_si128((const __m128i *)(s + i));
            /* As signed bytes, controls and non-ASCII are exactly the ones below 0x20. */
            int special = _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')), _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\'))),
                _mm_cmplt_epi8(chunk, _mm_set1_epi8(0x20))));
            if (special != 0) {
                i += __builtin_ctz((unsigned int)special);
                break;
            }
            i += 16;
        }
#endif
        while (i < n && PLAIN(s[i])) {
            i++;
        }
        if (i >= n) {
            return UNSURE;
        }
        Py_UCS4 c = s[i];
        if (c == '"') {
            *at = i + 1;
            return OK;
        }
        if (c < 0x20) {
            return UNSURE;
        }
        if (c == '\\') {
            *escaped = 1;
            if (i + 1 >= n) {
                return UNSURE;
            }
            Py_UCS4 e = s[i + 1];
            if (e == 'u') {
                Py_UCS4 unit;
                if (FN(read_hex4)(s, n, i + 2, &unit) != OK) {
                    return UNSURE;
                }
                i += 6;
                if (unit >= 0xDC00 && unit <= 0xDFFF) {
                    return UNSURE; /* a low surrogate alone */
                }
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    Py_UCS4 low;
                    if (i + 1 >= n || s[i] != '\\' || s[i + 1] != 'u'
                        || FN(read_hex4)(s, n, i + 2, &low) != OK || low < 0xDC00 || low > 0xDFFF) {
                        return UNSURE; /* a high surrogate not followed by a low one */
                    }
                    i += 6;
                }
                continue;
            }
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                i += 2;
                continue;
            }
            return UNSURE;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
#if UTF8
        {
            Py_ssize_t width = utf8_sequence(s, n, i);
            if (width == 0) {
                return UNSURE;
            }
            i += width;
        }
#else
        if (c >= 0xD800 && c <= 0xDFFF) {
            return UNSURE; /* a surrogate code point in a str: not Unicode text */
        }
        i++;
#endif
    }
}

static inline __attribute__((always_inline)) int FN(skip_number)(const CH *s, Py_ssize_t n, Py_ssize_t *at)
{
    /* Plain numbers only: -?(0|[1-9][0-9]*)(.[0-9]+)? with at most MAX_PLAIN_DIGITS digits. */
    Py_ssize_t i = *at;
    Py_ssize_t digits = 0;
    if (s[i] == '-') {
        i++;
    }
    if (i >= n || s[i] < '0' || s[i] > '9') {
        return UNSURE; /* -Infinity, or not a number */
    }
    if (s[i] == '0') {
        i++;
        digits = 1;
        if (i < n && s[i] >= '0' && s[i] <= '9') {
            return UNSURE; /* a leading zero */
        }
    }
    else {
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (i < n && s[i] == '.') {
        Py_ssize_t start = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            i++;
        }
        if (i == start) {
            return UNSURE;
        }
        digits += i - start;
    }
    if (digits > MAX_PLAIN_DIGITS || (i < n && (s[i] == 'e' || s[i] == 'E' || s[i] == '.'))) {
        return UNSURE;
    }
    *at = i;
    return OK;
}

static inline int FN(skip_literal)(const CH *s, Py_ssize_t n, Py_ssize_t *at, const char *word, Py_ssize_t length)
{
    Py_ssize_t i = *at;
    if (n - i < length) {
        return UNSURE;
    }
    for (Py_ssize_t k = 0; k < length; k++) {
        if (s[i + k] != (Py_UCS4)(unsigned char)word[k]) {
            return UNSURE;
        }
    }
    *at = i + length;
    return OK;
}

static int FN(vouch)(const CH *s, Py_ssize_t n)
{
    /* One pass over a text a JSON parser accepted, so the grammar is known to hold; only what the
     * grammar leaves open is checked. Every ":" outside strings ends a member name (the string just
     * read) of the innermost open object, so objects are all that is tracked: `first[depth]` is the
     * index in `names` of the first name of each open object. */
    Py_ssize_t first[MAX_DEPTH + 1];
    int depth = 0;
    Py_ssize_t last_start = 0, last_end = 0; /* the last string read, quotes excluded */
    int last_escaped = 0;
    Names names;
    names_init(&names);
    int result = UNSURE;
    Py_ssize_t i = FN(skip_space)(s, n, 0);
    if (i >= n || s[i] != '{') {
        goto done; /* not an object */
    }
    while (i < n) {
        Py_UCS4 c = s[i];
        switch (c) {
        case ' ':
        case '\n':
        case '\r':
        case '\t':
        case ',':
        case '[':
        case ']':
            i++;
            continue;
        case '"':
            last_start = i + 1;
            last_escaped = 0;
            if (FN(skip_string)(s, n, &i, &last_escaped) != OK) {
                goto done;
            }
            last_end = i - 1;
            continue;
        case ':':
            if (last_escaped) {
                goto done; /* escapes may spell one name two ways: Python compares decoded names */
            }
            if (depth == 0 || names_push(&names, (const char *)(s + last_start),
                                         (last_end - last_start) * (Py_ssize_t)sizeof(CH)) < 0) {
                result = depth == 0 ? UNSURE : FAILED;
                goto done;
            }
            i++;
            continue;
        case '{':
            if (depth == MAX_DEPTH) {
                goto done;
            }
            first[++depth] = names.count;
            i++;
            continue;
        case '}': {
            int closed = close_innermost(&names, first, &depth);
            if (closed != OK) {
                result = closed;
                goto done;
            }
            if (depth == 0) {
                /* The top object is closed: only whitespace may follow. */
                result = FN(skip_space)(s, n, i + 1) == n ? OK : UNSURE;
                goto done;
            }
            i++;
            continue;
        }
        case 't':
        case 'f':
        case 'n': {
            const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
            if (FN(skip_literal)(s, n, &i, word, (Py_ssize_t)strlen(word)) != OK) {
                goto done;
            }
            continue;
        }
        default:
            /* A number (a plain one, or UNSURE), or a token no plain JSON holds: NaN, Infinity. */
            if (FN(skip_number)(s, n, &i) != OK) {
                goto done;
            }
        }
    }
done:
    names_free(&names);
    return result;
}
