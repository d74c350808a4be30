package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.OptionalLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Multipart upload IDs that carry the fencing token the upload was created with.
 * <p>
 * An object completed from a multipart upload holds the metadata of its CreateMultipartUpload, so it holds that
 * call's token, whatever token the CompleteMultipartUpload carries. If a newer holder wrote the object in
 * between, completing the older upload would lower the object's token, and with it the fence (issue 15: created
 * with 9, 10 written, completed with 10, the object said 9 and a zombie's 9 was accepted). S3 gives no way to read
 * an upload's metadata before it is completed, so the proxy hands the client an upload ID that carries the
 * token: {@code <upstream id>~stk<token>~<mac>}. The MAC (HMAC-SHA256 keyed by the backend's upstream secret key,
 * so every replica with the same policy agrees) keeps a client from claiming another token. The upstream only
 * ever sees its own ID. A CompleteMultipartUpload is then refused unless its token is the upload's.
 */
final class UploadIds {
    private static final String MARK = "~stk";
    private static final int MAC_HEX = 16;

    private final byte[] key;

    UploadIds(String upstreamSecret) {
        try {
            this.key = MessageDigest.getInstance("SHA-256").digest(("stockade multipart upload ids\0" + upstreamSecret)
                    .getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    /** An upload ID as the client sees it, or how one the client sent reads. */
    record Id(String upstream, OptionalLong token) {
    }

    /** The ID handed to the client for an upload the upstream calls {@code upstream}, created with {@code token}. */
    String wrap(String upstream, long token) {
        String body = upstream + MARK + token;
        return body + "~" + mac(body);
    }

    /**
     * Reads an upload ID a client sent: the proxy's form gives the upstream ID and the token; any other form is
     * passed on as it is, with no token (an upload created without the proxy, or listed by
     * ListMultipartUploads).
     *
     * @throws IllegalArgumentException when it has the proxy's form but its MAC does not match (altered)
     */
    Id read(String id) {
        int mark = id.lastIndexOf(MARK);
        int tilde = id.lastIndexOf('~');
        if (mark < 0 || tilde <= mark) {
            return new Id(id, OptionalLong.empty());
        }
        String body = id.substring(0, tilde);
        String digits = id.substring(mark + MARK.length(), tilde);
        if (!MessageDigest.isEqual(mac(body).getBytes(StandardCharsets.US_ASCII),
                id.substring(tilde + 1).getBytes(StandardCharsets.US_ASCII)) || !digits.matches("0|[1-9][0-9]{0,18}")) {
            throw new IllegalArgumentException("the uploadId was altered (its token does not match its signature)");
        }
        return new Id(id.substring(0, mark), OptionalLong.of(Long.parseLong(digits)));
    }

    private String mac(String body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return HexFormat.of().formatHex(mac.doFinal(body.getBytes(StandardCharsets.UTF_8))).substring(0, MAC_HEX);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no HmacSHA256", e);
        }
    }
}
