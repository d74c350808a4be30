package io.stockade.proxy.backend.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;

import io.stockade.proxy.io.BulkInputStream;

import org.jspecify.annotations.Nullable;

/**
 * The body of a client request as the bytes the object will hold, checked while it streams.
 * <p>
 * {@code x-amz-content-sha256} says what the body is: a hex SHA-256 of it, {@code UNSIGNED-PAYLOAD}, or one of
 * the aws-chunked encodings the AWS SDKs send by default ({@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD},
 * {@code STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER}, {@code STREAMING-UNSIGNED-PAYLOAD-TRAILER}). Chunks are
 * decoded, each chunk signature is checked against the previous one (seeded by the request signature), and a
 * trailing checksum ({@code x-amz-checksum-crc32}, {@code -crc32c}, {@code -sha1}, {@code -sha256}) is compared
 * with the bytes that passed. A mismatch throws {@link Rejected} from {@code read}, before the last byte is
 * handed on: the upstream request is then cut short and never completes.
 */
final class PayloadReader extends BulkInputStream {
    private static final int MAX_LINE = 4096;

    /** The body was refused (bad signature, checksum or framing). */
    static final class Rejected extends IOException {
        final int status;
        final String code;

        Rejected(int status, String code, String message) {
            super(message);
            this.status = status;
            this.code = code;
        }

        /** The message it was made with: never null. */
        @Override
        public String getMessage() {
            return Objects.requireNonNull(super.getMessage(), "made with a message");
        }
    }

    private final InputStream in;
    private final boolean chunked;
    private final boolean signedChunks;
    private final ClientAuth.@Nullable Verified auth;
    private final @Nullable MessageDigest wholeHash;
    private final @Nullable String expectedWholeHash;
    private final @Nullable String trailerName;
    private final @Nullable Checksum crc;
    private final @Nullable MessageDigest digest;
    private final @Nullable MessageDigest chunkHash;
    private @Nullable String previousSignature;
    private long remainingInChunk;
    private @Nullable String chunkSignature;
    private boolean done;

    private PayloadReader(InputStream in, @Nullable String contentSha256, ClientAuth.@Nullable Verified auth,
                          @Nullable String trailer) throws Rejected {
        this.in = in;
        this.auth = auth;
        String mode = contentSha256 == null ? SigV4.UNSIGNED_PAYLOAD : contentSha256;
        this.chunked = mode.startsWith("STREAMING-");
        this.signedChunks = mode.startsWith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
        if (chunked && !mode.equals("STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
                && !mode.equals("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER")
                && !mode.equals("STREAMING-UNSIGNED-PAYLOAD-TRAILER")) {
            throw new Rejected(400, "InvalidArgument", "x-amz-content-sha256 '" + mode + "' is not supported");
        }
        if (signedChunks && auth == null) {
            // auth: none: signed chunks are decoded but their signatures cannot be checked (no key).
            this.previousSignature = null;
        } else {
            this.previousSignature = auth == null ? null : auth.seedSignature();
        }
        boolean hexHash = !chunked && mode.matches("[0-9a-f]{64}");
        this.wholeHash = hexHash && auth != null ? SigV4.sha256() : null;
        this.expectedWholeHash = hexHash ? mode : null;
        this.chunkHash = signedChunks && auth != null ? SigV4.sha256() : null;
        this.trailerName = trailer == null || trailer.isBlank() ? null : trailer.trim().toLowerCase(Locale.ROOT);
        Checksum c = null;
        MessageDigest d = null;
        if (trailerName != null) {
            try {
                switch (trailerName) {
                    case "x-amz-checksum-crc32" -> c = new CRC32();
                    case "x-amz-checksum-crc32c" -> c = new CRC32C();
                    case "x-amz-checksum-sha1" -> d = MessageDigest.getInstance("SHA-1");
                    case "x-amz-checksum-sha256" -> d = MessageDigest.getInstance("SHA-256");
                    default -> {
                        // e.g. x-amz-checksum-crc64nvme: passed over, not checked by the proxy.
                    }
                }
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
        this.crc = c;
        this.digest = d;
    }

    /**
     * The decoding stream for a request body.
     *
     * @param contentSha256 the {@code x-amz-content-sha256} header, or null
     * @param auth          the checked signature, or null with {@code auth: none}
     * @param trailer       the {@code x-amz-trailer} header, or null
     */
    static PayloadReader of(InputStream in, @Nullable String contentSha256, ClientAuth.@Nullable Verified auth,
                            @Nullable String trailer) throws Rejected {
        return new PayloadReader(in, contentSha256, auth, trailer);
    }

    static boolean isChunked(@Nullable String contentSha256) {
        return contentSha256 != null && contentSha256.startsWith("STREAMING-");
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (done) {
            return -1;
        }
        if (!chunked) {
            int n = in.read(b, off, len);
            if (n < 0) {
                done = true;
                if (wholeHash != null && !SigV4.hex(wholeHash.digest()).equals(expectedWholeHash)) {
                    throw new Rejected(400, "XAmzContentSHA256Mismatch",
                            "The provided 'x-amz-content-sha256' header does not match what was computed.");
                }
                return -1;
            }
            if (wholeHash != null) {
                wholeHash.update(b, off, n);
            }
            return n;
        }
        while (remainingInChunk == 0) {
            if (!nextChunk()) {
                done = true;
                return -1;
            }
        }
        int n = in.read(b, off, (int) Math.min(len, remainingInChunk));
        if (n < 0) {
            throw new Rejected(400, "IncompleteBody", "the body ended inside a chunk");
        }
        remainingInChunk -= n;
        if (chunkHash != null) {
            chunkHash.update(b, off, n);
        }
        if (crc != null) {
            crc.update(b, off, n);
        }
        if (digest != null) {
            digest.update(b, off, n);
        }
        if (remainingInChunk == 0) {
            endChunk();
        }
        return n;
    }

    /** Reads a chunk header; false at the final (zero-size) chunk, whose trailer is then read and checked. */
    private boolean nextChunk() throws IOException {
        String header = line();
        if (header == null) {
            throw new Rejected(400, "IncompleteBody", "the aws-chunked body ended without its final chunk");
        }
        int semicolon = header.indexOf(';');
        String size = semicolon < 0 ? header : header.substring(0, semicolon);
        chunkSignature = null;
        if (semicolon >= 0) {
            String ext = header.substring(semicolon + 1);
            if (ext.startsWith("chunk-signature=")) {
                chunkSignature = ext.substring("chunk-signature=".length());
            }
        }
        long length;
        try {
            length = Long.parseLong(size.trim(), 16);
        } catch (NumberFormatException e) {
            throw new Rejected(400, "InvalidChunkSizeError", "bad chunk size '" + size + "'");
        }
        if (length < 0) {
            throw new Rejected(400, "InvalidChunkSizeError", "bad chunk size '" + size + "'");
        }
        if (signedChunks && chunkSignature == null) {
            throw new Rejected(403, "SignatureDoesNotMatch", "a signed chunk has no chunk-signature");
        }
        if (length == 0) {
            checkChunkSignature(SigV4.EMPTY_SHA256);
            readTrailer();
            return false;
        }
        remainingInChunk = length;
        return true;
    }

    private void endChunk() throws IOException {
        String crlf = line();
        if (crlf == null || !crlf.isEmpty()) {
            throw new Rejected(400, "IncompleteBody", "a chunk is not followed by CRLF");
        }
        if (chunkHash != null) {
            checkChunkSignature(SigV4.hex(chunkHash.digest()));
        }
    }

    private void checkChunkSignature(String dataHash) throws Rejected {
        if (chunkHash == null || previousSignature == null) {
            return;
        }
        ClientAuth.Verified auth = Objects.requireNonNull(this.auth, "chunkHash is made only with auth");
        String stringToSign = "AWS4-HMAC-SHA256-PAYLOAD\n" + auth.amzDate() + "\n" + auth.scope() + "\n"
                + previousSignature + "\n" + SigV4.EMPTY_SHA256 + "\n" + dataHash;
        String expected = SigV4.signature(auth.signingKey(), stringToSign);
        if (!SigV4.same(expected, chunkSignature)) {
            throw new Rejected(403, "SignatureDoesNotMatch", "a chunk signature does not match");
        }
        previousSignature = chunkSignature;
    }

    private void readTrailer() throws IOException {
        Map<String, String> trailers = new LinkedHashMap<>();
        StringBuilder signedPart = new StringBuilder();
        String trailerSignature = null;
        while (true) {
            String line = line();
            if (line == null || line.isEmpty()) {
                break;
            }
            int colon = line.indexOf(':');
            if (colon <= 0) {
                throw new Rejected(400, "MalformedTrailerError", "bad trailer line");
            }
            String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = line.substring(colon + 1).trim();
            if (name.equals("x-amz-trailer-signature")) {
                trailerSignature = value;
            } else {
                trailers.put(name, value);
                signedPart.append(name).append(':').append(value).append('\n');
            }
        }
        if (trailerSignature != null && chunkHash != null && previousSignature != null) {
            ClientAuth.Verified auth = Objects.requireNonNull(this.auth, "chunkHash is made only with auth");
            String stringToSign = "AWS4-HMAC-SHA256-TRAILER\n" + auth.amzDate() + "\n" + auth.scope() + "\n"
                    + previousSignature + "\n" + SigV4.sha256Hex(signedPart.toString());
            if (!SigV4.same(SigV4.signature(auth.signingKey(), stringToSign), trailerSignature)) {
                throw new Rejected(403, "SignatureDoesNotMatch", "the trailer signature does not match");
            }
        }
        if (trailerName != null && (crc != null || digest != null)) {
            String sent = trailers.get(trailerName);
            if (sent == null) {
                throw new Rejected(400, "MalformedTrailerError", "the trailer " + trailerName + " was announced"
                        + " in x-amz-trailer but not sent");
            }
            byte[] actual;
            if (crc != null) {
                long v = crc.getValue();
                actual = new byte[]{(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
            } else {
                actual = Objects.requireNonNull(digest, "crc or digest, and crc is null").digest();
            }
            if (!Base64.getEncoder().encodeToString(actual).equals(sent)) {
                throw new Rejected(400, "BadDigest", "The " + trailerName.substring("x-amz-checksum-".length())
                        .toUpperCase(Locale.ROOT) + " you specified did not match the calculated checksum.");
            }
        }
    }

    /** A CRLF-terminated line, without the CRLF; null at end of stream. */
    private @Nullable String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(64);
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                byte[] bytes = b.toByteArray();
                int n = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                return new String(bytes, 0, n, StandardCharsets.ISO_8859_1);
            }
            if (b.size() >= MAX_LINE) {
                throw new Rejected(400, "IncompleteBody", "an aws-chunked line is longer than " + MAX_LINE);
            }
            b.write(c);
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
        in.close();
    }
}
