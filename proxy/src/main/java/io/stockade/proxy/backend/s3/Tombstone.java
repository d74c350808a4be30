package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The bytes of a tombstone: the object a fenced delete leaves so that an older token cannot recreate the key.
 * <p>
 * Its metadata says what it is ({@value ObjectMeta#DELETED_META}, the token in {@value ObjectMeta#TOKEN_META}); its
 * bytes are there to make its <em>ETag</em> unique. A fenced write is conditional on the ETag the proxy read
 * ({@code If-Match}), and S3 stores (AWS, MinIO, s3proxy) make the ETag of a plain PUT the MD5 of its bytes: were
 * every tombstone zero bytes long, every tombstone would have the same ETag, and a write judged against tombstone 10
 * in one replica would still match after another replica had written tombstone 12 between its read and its write;
 * the stale write would land (S3ReplicaRaceIT). So each tombstone holds a fixed text with a random nonce:
 * {@value #SIZE} bytes, no two alike. Zero-byte tombstones written by earlier versions are still recognised.
 */
final class Tombstone {
    private static final String TEXT = "stockade tombstone ";
    /** A tombstone's length in bytes: the text, 32 hex digits, a newline. */
    static final int SIZE = TEXT.length() + 32 + 1;

    private Tombstone() {
    }

    /** New bytes for a tombstone, never the same twice (16 random bytes). */
    static byte[] body() {
        byte[] nonce = new byte[16];
        ThreadLocalRandom.current().nextBytes(nonce);
        return (TEXT + HexFormat.of().formatHex(nonce) + "\n").getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * Whether a listed entry of this size may be a tombstone (and must be read with HEAD to tell): the size of
     * today's tombstones, or zero (an earlier version's).
     */
    static boolean maySize(long size) {
        return size == SIZE || size == 0;
    }
}
