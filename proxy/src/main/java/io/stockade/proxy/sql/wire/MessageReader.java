package io.stockade.proxy.sql.wire;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * Reads PostgreSQL protocol 3.0 messages: a type byte and a length (itself included), then the body. A body the
 * listener inspects is read whole, up to a bound; any other is copied to the peer as it arrives, never held.
 */
public final class MessageReader {
    private final InputStream in;
    private int type = -1;
    private int bodyLength;

    public MessageReader(InputStream in) {
        this.in = in;
    }

    /**
     * The next message's type; its body is then {@link #body} or {@link #copyBody}.
     *
     * @throws EOFException when the peer closed the connection between messages
     */
    public byte next() throws IOException {
        int t = in.read();
        if (t < 0) {
            throw new EOFException("the connection was closed");
        }
        int length = readInt(in);
        if (length < 4) {
            throw new ProtocolException("a message of type '" + (char) t + "' with length " + length);
        }
        type = t;
        bodyLength = length - 4;
        return (byte) t;
    }

    /** The length of the current message's body. */
    public int bodyLength() {
        return bodyLength;
    }

    /**
     * The current message's body.
     *
     * @param max the largest body the caller holds in memory
     * @throws ProtocolException when it is larger
     */
    public byte[] body(int max) throws IOException {
        if (bodyLength > max) {
            throw new ProtocolException("a message of type '" + (char) type + "' of " + bodyLength
                    + " bytes, more than the " + max + " the listener reads");
        }
        byte[] body = in.readNBytes(bodyLength);
        if (body.length < bodyLength) {
            throw new EOFException("the connection was closed inside a message");
        }
        return body;
    }

    /** Writes the current message, header and body, to {@code out} without holding its body. */
    public void copy(OutputStream out) throws IOException {
        out.write(type);
        writeInt(out, bodyLength + 4);
        copyBody(out);
    }

    private void copyBody(OutputStream out) throws IOException {
        byte[] buffer = new byte[Math.min(bodyLength, 65_536)];
        int left = bodyLength;
        while (left > 0) {
            int n = in.read(buffer, 0, Math.min(buffer.length, left));
            if (n < 0) {
                throw new EOFException("the connection was closed inside a message");
            }
            out.write(buffer, 0, n);
            left -= n;
        }
    }

    /** Whether bytes can be read without blocking (the peer sent more than this message). */
    public boolean moreBuffered() throws IOException {
        return in.available() > 0;
    }

    /** A big-endian int. */
    public static int readInt(InputStream in) throws IOException {
        int a = in.read();
        int b = in.read();
        int c = in.read();
        int d = in.read();
        if ((a | b | c | d) < 0) {
            throw new EOFException("the connection was closed");
        }
        return (a << 24) | (b << 16) | (c << 8) | d;
    }

    public static void writeInt(OutputStream out, int value) throws IOException {
        out.write(value >>> 24);
        out.write(value >>> 16);
        out.write(value >>> 8);
        out.write(value);
    }

    /** A message the protocol does not allow. */
    public static final class ProtocolException extends IOException {
        public ProtocolException(String message) {
            super(message);
        }
    }
}
