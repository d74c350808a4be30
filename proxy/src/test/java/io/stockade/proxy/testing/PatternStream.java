package io.stockade.proxy.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * A deterministic, non-repeating-looking byte stream of a given size, made on the fly, and the checks that what came
 * out of a relay is that stream: {@link #assertIsPattern} compares a stream byte for byte and names the first offset
 * that differs; {@link #crc32c(long)} is the pattern's CRC32C, for a receiver that kept only a checksum.
 *
 * <p>Neither is a SHA-256 on purpose: the test JVMs run on C1 alone (the root POM's {@code stockade.test.jvm}),
 * where SHA-256 has no intrinsic and digests ~150 MiB/s (7 s a GiB, measured 2026-12-05); the comparison here runs at
 * the pattern's own pace (~1.4 s a GiB on C1) and CRC32C is an intrinsic on every tier (0.04 s a GiB).
 */
public final class PatternStream extends InputStream {
    private static final int BLOCK = 1 << 16;

    private long left;
    private long i;

    public PatternStream(long size) {
        this.left = size;
    }

    /** The pattern's byte at {@code offset}. */
    static byte at(long offset) {
        return (byte) ((offset * 2654435761L) >>> 13);
    }

    @Override
    public int read() {
        if (left == 0) {
            return -1;
        }
        left--;
        return at(i++) & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) {
        if (left == 0) {
            return -1;
        }
        int n = (int) Math.min(len, left);
        for (int k = 0; k < n; k++) {
            b[off + k] = at(i++);
        }
        left -= n;
        return n;
    }

    /** The CRC32C of the first {@code size} bytes of the pattern. */
    public static long crc32c(long size) {
        CRC32C crc = new CRC32C();
        byte[] buf = new byte[BLOCK];
        try (PatternStream in = new PatternStream(size)) {
            for (int n; (n = in.read(buf, 0, BLOCK)) != -1; ) {
                crc.update(buf, 0, n);
            }
        }
        return crc.getValue();
    }

    /**
     * Reads {@code in} to its end and fails unless it is exactly the first {@code size} bytes of the pattern: the
     * message names {@code what}, the first offset that differs and both bytes, or where the stream ended.
     */
    public static void assertIsPattern(InputStream in, long size, String what) {
        byte[] got = new byte[BLOCK];
        byte[] want = new byte[BLOCK];
        PatternStream pattern = new PatternStream(size);
        long offset = 0;
        try {
            while (true) {
                int n = in.readNBytes(got, 0, BLOCK);
                if (n == 0) {
                    break;
                }
                int expected = pattern.readNBytes(want, 0, n);
                int mismatch = Arrays.mismatch(got, 0, expected, want, 0, expected);
                if (mismatch >= 0) {
                    throw new AssertionError(what + ": byte " + (offset + mismatch) + " is 0x"
                            + Integer.toHexString(got[mismatch] & 0xff) + ", the pattern's is 0x"
                            + Integer.toHexString(want[mismatch] & 0xff));
                }
                if (expected < n) {
                    throw new AssertionError(what + ": more than the pattern's " + size + " bytes");
                }
                offset += n;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(what + ": the stream failed after " + offset + " bytes", e);
        }
        if (offset != size) {
            throw new AssertionError(what + ": ended after " + offset + " of the pattern's " + size + " bytes");
        }
    }

    @Override
    public void close() {
        // nothing held
    }
}
