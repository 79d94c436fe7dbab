/* aa.mirror._restamp: re-encode one Kafka record batch (v2) of local records with the provenance
 * headers added, in one call (see aa/mirror/restamp.py, which is the only caller and holds the
 * pure-Python equivalent: decoding with aiokafka and routing record by record).
 *
 * restamp(src, start, out, n, first_ts, max_ts, batch_size, pre, src_prefix, post, mark, screen,
 *         body)
 *
 *   src         the whole source batch as fetched (61-byte header, then its records, compressed
 *               or not)
 *   start       index of the first record to write (a later call continues a batch that did
 *               not fit in one target batch)
 *   out         the target batch's bytearray (aiokafka's pure-Python record batch builder's
 *               buffer); records are appended to it
 *   n           records already in the target batch (the next record's offset delta)
 *   first_ts    the target batch's first timestamp, None while it is empty
 *   max_ts      its largest timestamp so far (None while empty)
 *   batch_size  the builder's size limit: a record that would reach it is not written, unless
 *               the target batch is empty (the rules of aiokafka's C builder, which the record
 *               path uses: `>=`, and a first timestamp of -1 counts as none)
 *   pre         encoded headers aa-origin and aa-path, then the encoded key "aa-src"
 *   src_prefix  the aa-src value before the offset digits ("SF/topic/3/")
 *   post        the encoded aa-ts header
 *   mark        the encoded aa-batch header of a target batch's first record (b"" for none)
 *   screen      None, or (room, no_null_key, oldest, newest) of the target's limits: room is
 *               the most bytes one record may take written alone in a batch (aa's headers and
 *               the mark included; max.message.bytes less the batch header)
 *   body        None when the batch is uncompressed (its records follow the header in src), else
 *               its records decompressed (the caller decompresses once per source batch)
 *
 * Returns None when the batch is not one this path takes (then nothing was written): a control
 * or LogAppendTime batch, a compressed one without its body, offsets with gaps, a record that
 * is malformed, has a header key that is not ASCII or starts with "aa-", or is outside the
 * screen. Otherwise (written, first_ts, max_ts, key_value_bytes): `written` records from
 * `start` on were appended; fewer than the rest when the target batch is full.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HEADER 61

typedef struct {
    int64_t ts_delta, offset_delta, key_len, value_len, hcount;
    const uint8_t *key, *value, *headers, *end;
} record;

static uint64_t be(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static int read_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && p < end; shift += 7) {
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = (int64_t)((v >> 1) ^ (0 - (v & 1)));
            *pp = p;
            return 0;
        }
    }
    return -1;
}

static int size_varlong(int64_t v) {
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static uint8_t *write_varlong(uint8_t *q, int64_t v) {
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    while (u >= 0x80) {
        *q++ = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    *q++ = (uint8_t)u;
    return q;
}

/* A length-prefixed field: -1 (null) or 0..remaining bytes. */
static int read_bytes(const uint8_t **pp, const uint8_t *end, int64_t *len, const uint8_t **at) {
    if (read_varlong(pp, end, len) < 0 || *len < -1 || (*len > 0 && *len > end - *pp)) return -1;
    *at = *pp;
    if (*len > 0) *pp += *len;
    return 0;
}

/* Parse the record at *pp; 0 when it is one this path takes. */
static int parse(const uint8_t **pp, const uint8_t *end, record *r) {
    int64_t len;
    const uint8_t *p = *pp;
    if (read_varlong(&p, end, &len) < 0 || len < 1 || len > end - p) return -1;
    const uint8_t *rend = p + len;
    p++; /* attributes: unused in v2, written as 0 */
    if (read_varlong(&p, rend, &r->ts_delta) < 0 || read_varlong(&p, rend, &r->offset_delta) < 0)
        return -1;
    if (read_bytes(&p, rend, &r->key_len, &r->key) < 0) return -1;
    if (read_bytes(&p, rend, &r->value_len, &r->value) < 0) return -1;
    if (read_varlong(&p, rend, &r->hcount) < 0 || r->hcount < 0 || r->hcount > len) return -1;
    r->headers = p;
    for (int64_t h = 0; h < r->hcount; h++) {
        int64_t klen, vlen;
        const uint8_t *k, *v;
        if (read_bytes(&p, rend, &klen, &k) < 0 || klen < 0) return -1;
        if (klen >= 3 && k[0] == 'a' && k[1] == 'a' && k[2] == '-') return -1; /* provenance */
        for (int64_t i = 0; i < klen; i++)
            if (k[i] >= 0x80) return -1; /* aiokafka decodes keys as UTF-8: keep it ASCII */
        if (read_bytes(&p, rend, &vlen, &v) < 0) return -1;
    }
    if (p != rend) return -1;
    r->end = rend;
    *pp = rend;
    return 0;
}

/* Re-encode the app headers with canonical varints (as aiokafka's builder writes them). */
static uint8_t *write_headers(uint8_t *q, const record *r) {
    const uint8_t *p = r->headers;
    for (int64_t h = 0; h < r->hcount; h++) {
        int64_t klen, vlen;
        const uint8_t *k, *v;
        read_bytes(&p, r->end, &klen, &k);
        q = write_varlong(q, klen);
        memcpy(q, k, (size_t)klen);
        q += klen;
        read_bytes(&p, r->end, &vlen, &v);
        q = write_varlong(q, vlen);
        if (vlen > 0) {
            memcpy(q, v, (size_t)vlen);
            q += vlen;
        }
    }
    return q;
}

static int64_t headers_len(const record *r) {
    const uint8_t *p = r->headers;
    int64_t total = 0;
    for (int64_t h = 0; h < r->hcount; h++) {
        int64_t klen, vlen;
        const uint8_t *k, *v;
        read_bytes(&p, r->end, &klen, &k);
        read_bytes(&p, r->end, &vlen, &v);
        total += size_varlong(klen) + klen + size_varlong(vlen) + (vlen > 0 ? vlen : 0);
    }
    return total;
}

static int as_int64(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = (int64_t)v;
    return 0;
}

/* The bytes of record `r` as written (its length prefix not included): offset delta `n`,
 * timestamp delta `delta`, the source offset's `ndigits` digits in aa-src, the mark when
 * `with_mark`. */
static int64_t record_body(const record *r, int64_t delta, int64_t n, int ndigits, int with_mark,
                           const Py_buffer *pre, const Py_buffer *prefix, const Py_buffer *post,
                           const Py_buffer *mark) {
    int64_t src_len = prefix->len + ndigits;
    int64_t added = pre->len + size_varlong(src_len) + src_len + post->len +
                    (with_mark ? mark->len : 0);
    return 1 + size_varlong(delta) + size_varlong(n) + size_varlong(r->key_len) +
           (r->key_len > 0 ? r->key_len : 0) + size_varlong(r->value_len) +
           (r->value_len > 0 ? r->value_len : 0) + size_varlong(r->hcount + 4 + with_mark) +
           headers_len(r) + added;
}

static int digits_of(int64_t v) {
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static PyObject *restamp(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "restamp() takes 13 arguments");
        return NULL;
    }
    PyObject *out = args[2];
    if (!PyByteArray_Check(out)) {
        PyErr_SetString(PyExc_TypeError, "restamp(): out must be a bytearray");
        return NULL;
    }
    int64_t start, n, first_ts = 0, max_ts = 0, batch_size;
    int have_first = args[4] != Py_None;
    if (as_int64(args[1], &start) < 0 || as_int64(args[3], &n) < 0 ||
        as_int64(args[6], &batch_size) < 0)
        return NULL;
    if (have_first && (as_int64(args[4], &first_ts) < 0 || as_int64(args[5], &max_ts) < 0))
        return NULL;
    int screened = args[11] != Py_None;
    int64_t cap = 0, oldest = 0, newest = 0;
    int no_null_key = 0;
    if (screened) {
        PyObject *s = args[11];
        if (!PyTuple_Check(s) || PyTuple_GET_SIZE(s) != 4) {
            PyErr_SetString(PyExc_TypeError, "restamp(): screen must be a 4-tuple or None");
            return NULL;
        }
        if (as_int64(PyTuple_GET_ITEM(s, 0), &cap) < 0 ||
            as_int64(PyTuple_GET_ITEM(s, 2), &oldest) < 0 ||
            as_int64(PyTuple_GET_ITEM(s, 3), &newest) < 0)
            return NULL;
        no_null_key = PyObject_IsTrue(PyTuple_GET_ITEM(s, 1));
        if (no_null_key < 0) return NULL;
    }
    PyObject *result = NULL;
    Py_buffer src, pre, prefix, post, mark, body;
    int has_body = args[12] != Py_None;
    if (has_body && PyObject_GetBuffer(args[12], &body, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[0], &src, PyBUF_SIMPLE) < 0) goto fail_body;
    if (PyObject_GetBuffer(args[7], &pre, PyBUF_SIMPLE) < 0) goto fail_src;
    if (PyObject_GetBuffer(args[8], &prefix, PyBUF_SIMPLE) < 0) goto fail_pre;
    if (PyObject_GetBuffer(args[9], &post, PyBUF_SIMPLE) < 0) goto fail_prefix;
    if (PyObject_GetBuffer(args[10], &mark, PyBUF_SIMPLE) < 0) goto fail_post;

    const uint8_t *b = (const uint8_t *)src.buf;
    if (src.len < HEADER) goto not_taken;
    int64_t base_offset = (int64_t)be(b, 8);
    int64_t batch_len = (int64_t)(int32_t)be(b + 8, 4);
    int magic = b[16];
    unsigned attributes = (unsigned)be(b + 21, 2);
    int64_t last_delta = (int64_t)(int32_t)be(b + 23, 4);
    int64_t src_first_ts = (int64_t)be(b + 27, 8);
    int64_t count = (int64_t)(int32_t)be(b + 57, 4);
    /* codec bits 0-2 (a compressed batch's records come decompressed in body), LogAppendTime
     * bit 3, transactional bit 4 (taken: the consumer dropped aborted batches), control bit 5 */
    if (magic != 2 || (attributes & 0x28) != 0 || ((attributes & 0x07) != 0) != has_body ||
        12 + batch_len != src.len || count < 1 || last_delta != count - 1 || base_offset < 0 ||
        start < 0 || start >= count)
        goto not_taken;
    const uint8_t *records = has_body ? (const uint8_t *)body.buf : b + HEADER;
    const uint8_t *end = has_body ? records + body.len : b + src.len;

    /* Pass 1: every record is one this path takes (nothing is written otherwise). */
    record r;
    const uint8_t *p = records;
    for (int64_t i = 0; i < count; i++) {
        if (parse(&p, end, &r) < 0 || r.offset_delta != i) goto not_taken;
        if (screened) {
            /* exactly as written alone in a batch (its first: deltas 0, the mark): what the
             * target's max.message.bytes is checked against, less the batch header (cap) */
            int64_t ts = src_first_ts + r.ts_delta;
            int64_t body = record_body(&r, 0, 0, digits_of(base_offset + i), mark.len > 0, &pre,
                                       &prefix, &post, &mark);
            if (body + size_varlong(body) > cap || (r.key_len < 0 && no_null_key) ||
                (ts != -1 && (ts < oldest || ts > newest)))
                goto not_taken;
        }
    }
    if (p != end) goto not_taken;

    /* Pass 2: write records from `start` while they fit. */
    char digits[24];
    int64_t written = 0, kv_bytes = 0;
    p = records;
    for (int64_t i = 0; i < count; i++) {
        parse(&p, end, &r);
        if (i < start) continue;
        int64_t ts = src_first_ts + r.ts_delta;
        int first = !have_first || first_ts == -1; /* aiokafka's C builder: -1 is "unset" */
        int64_t delta = first ? 0 : ts - first_ts;
        int ndigits = snprintf(digits, sizeof digits, "%lld", (long long)(base_offset + i));
        int64_t src_len = prefix.len + ndigits;
        int with_mark = n == 0 && mark.len > 0;
        int64_t body = record_body(&r, delta, n, ndigits, with_mark, &pre, &prefix, &post, &mark);
        int64_t required = body + size_varlong(body);
        Py_ssize_t at = PyByteArray_GET_SIZE(out);
        if (n != 0 && at + required >= batch_size) break; /* aiokafka's C builder's rule */
        if (PyByteArray_Resize(out, at + (Py_ssize_t)required) < 0) goto done;
        uint8_t *q = (uint8_t *)PyByteArray_AS_STRING(out) + at;
        q = write_varlong(q, body);
        *q++ = 0; /* attributes */
        q = write_varlong(q, delta);
        q = write_varlong(q, n);
        q = write_varlong(q, r.key_len);
        if (r.key_len > 0) {
            memcpy(q, r.key, (size_t)r.key_len);
            q += r.key_len;
        }
        q = write_varlong(q, r.value_len);
        if (r.value_len > 0) {
            memcpy(q, r.value, (size_t)r.value_len);
            q += r.value_len;
        }
        q = write_varlong(q, r.hcount + 4 + with_mark);
        q = write_headers(q, &r);
        memcpy(q, pre.buf, (size_t)pre.len);
        q += pre.len;
        q = write_varlong(q, src_len);
        memcpy(q, prefix.buf, (size_t)prefix.len);
        q += prefix.len;
        memcpy(q, digits, (size_t)ndigits);
        q += ndigits;
        memcpy(q, post.buf, (size_t)post.len);
        q += post.len;
        if (with_mark) {
            memcpy(q, mark.buf, (size_t)mark.len);
            q += mark.len;
        }
        if (first) {
            have_first = 1;
            first_ts = max_ts = ts;
        } else if (ts > max_ts) {
            max_ts = ts;
        }
        n++;
        written++;
        kv_bytes += (r.key_len > 0 ? r.key_len : 0) + (r.value_len > 0 ? r.value_len : 0);
    }
    if (have_first)
        result = Py_BuildValue("(LLLL)", (long long)written, (long long)first_ts,
                               (long long)max_ts, (long long)kv_bytes);
    else
        result = Py_BuildValue("(LOOL)", (long long)written, Py_None, Py_None, (long long)0);
    goto done;
not_taken:
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&mark);
fail_post:
    PyBuffer_Release(&post);
fail_prefix:
    PyBuffer_Release(&prefix);
fail_pre:
    PyBuffer_Release(&pre);
fail_src:
    PyBuffer_Release(&src);
fail_body:
    if (has_body) PyBuffer_Release(&body);
    return result;
}

/* CRC-32C (Castagnoli), as record batches carry it: with the SSE4.2 instruction where the CPU
 * has it (aiokafka's own runs at about 0.5 GB/s here, twice per copied byte), else a table. */
static uint32_t crc_table[256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc_by_table(uint32_t crc, const uint8_t *p, size_t n) {
    while (n--) crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
__attribute__((target("sse4.2"))) static uint32_t crc_by_sse42(uint32_t crc, const uint8_t *p,
                                                               size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--) crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
static int have_sse42(void) { return __builtin_cpu_supports("sse4.2"); }
#else
static uint32_t crc_by_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    return crc_by_table(crc, p, n);
}
static int have_sse42(void) { return 0; }
#endif

static uint32_t (*crc_update)(uint32_t, const uint8_t *, size_t) = crc_by_table;

static PyObject *crc32c(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
    crc = ~crc_update(0xffffffffu, (const uint8_t *)b.buf, (size_t)b.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef methods[] = {
    {"restamp", (PyCFunction)(void (*)(void))restamp, METH_FASTCALL,
     "Append one source batch's records, provenance added, to a target batch."},
    {"crc32c", (PyCFunction)crc32c, METH_O, "CRC-32C of a bytes-like object."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "aa.mirror._restamp", NULL, -1, methods,
};

PyMODINIT_FUNC PyInit__restamp(void) {
    crc_init();
    if (have_sse42()) crc_update = crc_by_sse42;
    return PyModule_Create(&module);
}
