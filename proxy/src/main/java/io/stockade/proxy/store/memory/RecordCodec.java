package io.stockade.proxy.store.memory;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;

import io.stockade.proxy.fence.FenceState;

import org.jspecify.annotations.Nullable;

/**
 * The journal's record format. Every record is
 * <pre>
 *   length  int32   payload length in bytes
 *   crc     int32   CRC32C over the 4 length bytes followed by the payload
 *   payload:
 *     type     int8    1 = state of one scope, 2 = floor of a prefix (the "scope" is the prefix, no version),
 *                      3 = a scope retired (removed; token and version unused: 0 and -1)
 *     scopeLen int32   then scopeLen bytes of UTF-8
 *     token    int64   0 .. 2^63-1
 *     verLen   int32   -1 for a null (unknown) version, else verLen bytes of UTF-8
 * </pre>
 * all big-endian. The checksum covers the length, so a damaged length field is caught even when it happens to
 * point at a plausible span.
 */
final class RecordCodec {

    static final int HEADER_BYTES = 8;
    static final byte TYPE_STATE = 1;
    static final byte TYPE_FLOOR = 2;
    static final byte TYPE_RETIRE = 3;
    /** An operator's reset: the scope's token is this one, lower than before (replay: not the highest wins). */
    static final byte TYPE_RESET = 4;
    /** Longest scope or version accepted, in UTF-8 bytes. */
    static final int MAX_STRING_BYTES = 64 * 1024;
    static final int MIN_PAYLOAD = 1 + 4 + 8 + 4;
    static final int MAX_PAYLOAD = MIN_PAYLOAD + 2 * MAX_STRING_BYTES;
    static final int MAX_RECORD = HEADER_BYTES + MAX_PAYLOAD;

    private RecordCodec() {
    }

    /** Encodes a whole state record, header included. */
    static byte[] encode(String scope, long token, @Nullable String version) {
        return encode(TYPE_STATE, scope, token, version);
    }

    /** Encodes a floor record for {@code prefix}. */
    static byte[] encodeFloor(String prefix, long token) {
        return encode(TYPE_FLOOR, prefix, token, null);
    }

    /** Encodes the retirement of {@code scope}. */
    static byte[] encodeRetire(String scope) {
        return encode(TYPE_RETIRE, scope, 0, null);
    }

    /** Encodes an operator's reset of {@code scope} to {@code token}. */
    static byte[] encodeReset(String scope, long token) {
        return encode(TYPE_RESET, scope, token, null);
    }

    private static byte[] encode(byte type, String scope, long token, @Nullable String version) {
        byte[] s = utf8(scope, "scope");
        byte[] v = version == null ? null : utf8(version, "version");
        int payload = MIN_PAYLOAD + s.length + (v == null ? 0 : v.length);
        ByteBuffer b = ByteBuffer.allocate(HEADER_BYTES + payload);
        b.putInt(payload).putInt(0);
        b.put(type).putInt(s.length).put(s).putLong(token);
        if (v == null) {
            b.putInt(-1);
        } else {
            b.putInt(v.length).put(v);
        }
        byte[] out = b.array();
        ByteBuffer.wrap(out).putInt(4, crc(out, 0, payload));
        return out;
    }

    /** The checksum of a record whose length field starts at {@code offset} and whose payload has {@code len} bytes. */
    static int crc(byte[] record, int offset, int len) {
        CRC32C c = new CRC32C();
        c.update(record, offset, 4);
        c.update(record, offset + HEADER_BYTES, len);
        return (int) c.getValue();
    }

    /** Same as {@link #crc(byte[], int, int)} over a heap buffer (the replay's read window). */
    static int crc(ByteBuffer buf, int offset, int len) {
        return crc(buf.array(), buf.arrayOffset() + offset, len);
    }

    /** Whether {@code len} can be the payload length of a record. */
    static boolean plausibleLength(int len) {
        return len >= MIN_PAYLOAD && len <= MAX_PAYLOAD;
    }

    /**
     * Where the replay sends each record: the scope as bytes of the read buffer (valid only during the call), so
     * that replaying millions of records makes no string per record.
     */
    interface Sink {
        void record(byte type, byte[] a, int scopeOffset, int scopeLength, long token, @Nullable String version);
    }

    /**
     * Decodes a payload whose checksum already matched into {@code sink}, reading straight out of the array (no
     * slice, no copy of the scope).
     *
     * @throws IllegalArgumentException when the payload is malformed (a bug or a foreign format, never a torn write)
     */
    static void decode(byte[] a, int offset, int len, Sink sink) {
        int end = offset + len;
        int p = offset;
        byte type = a[p++];
        if (type != TYPE_STATE && type != TYPE_FLOOR && type != TYPE_RETIRE && type != TYPE_RESET) {
            throw new IllegalArgumentException("unknown record type " + type);
        }
        int scopeLen = intAt(a, p);
        p += 4;
        if (scopeLen < 0 || scopeLen > end - p - 12) {
            throw new IllegalArgumentException("scope length " + scopeLen + " out of range");
        }
        int scopeOffset = p;
        p += scopeLen;
        long token = ((long) intAt(a, p) << 32) | (intAt(a, p + 4) & 0xffffffffL);
        p += 8;
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        int verLen = intAt(a, p);
        p += 4;
        @Nullable String version;
        if (verLen == -1) {
            version = null;
        } else if (verLen < 0 || verLen != end - p) {
            throw new IllegalArgumentException("version length " + verLen + " out of range");
        } else {
            version = verLen == 0 ? FenceState.ABSENT : new String(a, p, verLen, StandardCharsets.UTF_8);
            p += verLen;
        }
        if (p != end) {
            throw new IllegalArgumentException((end - p) + " trailing bytes");
        }
        sink.record(type, a, scopeOffset, scopeLen, token, version);
    }

    private static int intAt(byte[] a, int p) {
        return ((a[p] & 0xff) << 24) | ((a[p + 1] & 0xff) << 16) | ((a[p + 2] & 0xff) << 8) | (a[p + 3] & 0xff);
    }

    /**
     * UTF-8 bytes of {@code s}. Unpaired surrogates are refused: {@link String#getBytes} would replace them with
     * '?', so two different scopes could come back from the journal as the same one.
     */
    static byte[] utf8(String s, String what) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(what + " contains an unpaired surrogate at index " + i);
            }
        }
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length > MAX_STRING_BYTES) {
            throw new IllegalArgumentException(what + " longer than " + MAX_STRING_BYTES + " UTF-8 bytes");
        }
        return b;
    }
}
