package io.stockade.proxy.io;

import java.io.IOException;
import java.io.InputStream;

/**
 * An {@link InputStream} whose subclasses write only the bulk {@link #read(byte[], int, int)}: the single-byte
 * {@link #read()} is one bulk read of one byte. The proxy's body streams (framed upstream bodies, S3 payloads and
 * form parts) read in blocks; a caller reading byte by byte is rare and gets the same checks, not a faster path.
 */
public abstract class BulkInputStream extends InputStream {

    @Override
    public final int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public abstract int read(byte[] b, int off, int len) throws IOException;
}
