package io.stockade.proxy.sql.wire;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/** Reading and writing the fields of a message body: int16, int32, NUL-terminated UTF-8 strings, bytes. */
public final class Body {
    private final byte[] bytes;
    private int at;

    public Body(byte[] bytes) {
        this.bytes = bytes;
    }

    public int int32() throws MessageReader.ProtocolException {
        need(4);
        int v = ((bytes[at] & 0xff) << 24) | ((bytes[at + 1] & 0xff) << 16) | ((bytes[at + 2] & 0xff) << 8)
                | (bytes[at + 3] & 0xff);
        at += 4;
        return v;
    }

    public int int16() throws MessageReader.ProtocolException {
        need(2);
        int v = ((bytes[at] & 0xff) << 8) | (bytes[at + 1] & 0xff);
        at += 2;
        return v;
    }

    public byte int8() throws MessageReader.ProtocolException {
        need(1);
        return bytes[at++];
    }

    /** A NUL-terminated string. */
    public String string() throws MessageReader.ProtocolException {
        int end = at;
        while (end < bytes.length && bytes[end] != 0) {
            end++;
        }
        if (end >= bytes.length) {
            throw new MessageReader.ProtocolException("a string without its terminating NUL");
        }
        String s = new String(bytes, at, end - at, StandardCharsets.UTF_8);
        at = end + 1;
        return s;
    }

    /** {@code n} bytes. */
    public byte[] bytes(int n) throws MessageReader.ProtocolException {
        if (n < 0) {
            throw new MessageReader.ProtocolException("a negative length " + n);
        }
        need(n);
        byte[] out = new byte[n];
        System.arraycopy(bytes, at, out, 0, n);
        at += n;
        return out;
    }

    /** Everything not read yet. */
    public byte[] rest() {
        byte[] out = new byte[bytes.length - at];
        System.arraycopy(bytes, at, out, 0, out.length);
        at = bytes.length;
        return out;
    }

    public boolean atEnd() {
        return at >= bytes.length;
    }

    private void need(int n) throws MessageReader.ProtocolException {
        if (at + n > bytes.length) {
            throw new MessageReader.ProtocolException("a message shorter than its fields");
        }
    }

    /** Builds a body. */
    public static final class Builder {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream(64);

        public Builder int32(int v) {
            out.write(v >>> 24);
            out.write(v >>> 16);
            out.write(v >>> 8);
            out.write(v);
            return this;
        }

        public Builder int16(int v) {
            out.write(v >>> 8);
            out.write(v);
            return this;
        }

        public Builder int8(int v) {
            out.write(v);
            return this;
        }

        public Builder string(String s) {
            out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
            out.write(0);
            return this;
        }

        public Builder bytes(byte[] b) {
            out.writeBytes(b);
            return this;
        }

        public byte[] build() {
            return out.toByteArray();
        }
    }

    /** Writes a typed message. */
    public static void write(OutputStream out, byte type, byte[] body) throws IOException {
        out.write(type);
        MessageReader.writeInt(out, body.length + 4);
        out.write(body);
    }
}
