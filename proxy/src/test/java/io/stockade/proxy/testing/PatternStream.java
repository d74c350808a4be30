package io.stockade.proxy.testing;

import java.io.InputStream;

/** A deterministic, non-repeating-looking byte stream of a given size, made on the fly. */
public final class PatternStream extends InputStream {
    private long left;
    private long i;

    public PatternStream(long size) {
        this.left = size;
    }

    @Override
    public int read() {
        if (left == 0) {
            return -1;
        }
        left--;
        return (int) ((i++ * 2654435761L) >>> 13) & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) {
        if (left == 0) {
            return -1;
        }
        int n = (int) Math.min(len, left);
        for (int k = 0; k < n; k++) {
            b[off + k] = (byte) ((i++ * 2654435761L) >>> 13);
        }
        left -= n;
        return n;
    }
}
