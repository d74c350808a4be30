package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.OptionalLong;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The multipart upload IDs the proxy hands out, and the only ones it forwards.
 * <p>
 * An object completed from a multipart upload holds the metadata of its CreateMultipartUpload, so it holds that
 * call's token, whatever token the CompleteMultipartUpload carries. If a newer holder wrote the object in
 * between, completing the older upload would lower the object's token, and with it the fence (S3 as real tools use it:
 * created
 * with 9, 10 written, completed with 10, the object said 9 and a zombie's 9 was accepted). S3 gives no way to read
 * an upload's metadata before it is completed, so the proxy hands the client an upload ID that carries the
 * token: {@code <upstream id>~stk<token>~<mac>}. An upload listed by ListMultipartUploads through the proxy is named
 * {@code <upstream id>~stl~<mac>}, and so is an upload created without a token (earlier builds named it
 * {@code <upstream id>~stk~<mac>}, still read): no listing can know an upload's token (S3 lists no metadata), so the
 * listed ID is the created one exactly when the created one names none. Such an ID lists the upload's parts and
 * aborts it, and takes parts and completes only unfenced ({@link S3Planner}), so that a writer who lists another
 * holder's upload cannot put its bytes into it with a token.
 * <p>
 * The MAC (HMAC-SHA256 keyed by the backend's upstream secret key, so every replica with the same policy agrees)
 * covers the bucket, the key, the store's ID and the kind: a client can neither claim another token nor move an ID
 * to another object. The upstream only ever sees its own ID. Any other ID (the store's own, from a listing at the
 * store) is refused: on s3proxy's local stores an upload ID names a blob of the bucket, so a store ID the proxy did
 * not see the store hand out could name any object ({@code docs/s3.md}, "Multipart uploads").
 */
final class UploadIds {
    private static final String CREATED = "stk";
    private static final String LISTED = "stl";
    private static final Pattern TAG = Pattern.compile("stk(0|[1-9][0-9]{0,18})?|stl");
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

    /**
     * An upload ID the proxy handed out, as a client sent it back.
     *
     * @param upstream the store's own ID
     * @param created  whether it is of the form only CreateMultipartUpload hands out (one that names a token, or an
     *                 earlier build's tokenless one); else the form a listing shows
     * @param token    the token the upload's metadata carries (created with one), else empty
     */
    record Id(String upstream, boolean created, OptionalLong token) {
    }

    /** Why an upload ID is not one the proxy handed out for this object. */
    static final class Unknown extends Exception {
        Unknown(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * The ID handed to the creator of an upload of {@code bucket/key} the store calls {@code upstream}: one that
     * carries its token, or, for an upload created without one, the ID a listing shows for it ({@link #listed}), so
     * that its creator finds it in a listing (an ID that names no token is one either way).
     */
    String created(String bucket, String objectKey, String upstream, OptionalLong token) {
        return token.isPresent() ? sign(bucket, objectKey, upstream + "~" + CREATED + token.getAsLong())
                : listed(bucket, objectKey, upstream);
    }

    /** The ID a listing through the proxy shows for an upload of {@code bucket/key}: it lists parts and aborts. */
    String listed(String bucket, String objectKey, String upstream) {
        return sign(bucket, objectKey, upstream + "~" + LISTED);
    }

    /**
     * Reads an upload ID a client sent for {@code bucket/key}.
     *
     * @throws Unknown when it is not one the proxy handed out for that object: the store's own ID, an altered one,
     *                 one handed out for another object
     */
    Id read(String bucket, String objectKey, String id) throws Unknown {
        int tilde = id.lastIndexOf('~');
        int tag = tilde > 0 ? id.lastIndexOf('~', tilde - 1) : -1;
        if (tag <= 0 || !TAG.matcher(id.substring(tag + 1, tilde)).matches()) {
            throw new Unknown("the fencing proxy forwards only the upload IDs it handed out (CreateMultipartUpload's "
                    + "answer, or ListMultipartUploads through the proxy), and this is none of them");
        }
        String body = id.substring(0, tilde);
        if (!MessageDigest.isEqual(mac(bucket, objectKey, body).getBytes(StandardCharsets.US_ASCII),
                id.substring(tilde + 1).getBytes(StandardCharsets.US_ASCII))) {
            throw new Unknown("this upload ID was altered, or handed out for another object");
        }
        String kind = id.substring(tag + 1, tilde);
        String upstream = id.substring(0, tag);
        if (kind.equals(LISTED)) {
            return new Id(upstream, false, OptionalLong.empty());
        }
        String digits = kind.substring(CREATED.length());
        return new Id(upstream, true, digits.isEmpty() ? OptionalLong.empty()
                : OptionalLong.of(Long.parseLong(digits)));
    }

    private String sign(String bucket, String objectKey, String body) {
        return body + "~" + mac(bucket, objectKey, body);
    }

    private String mac(String bucket, String objectKey, String body) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            byte[] text = (bucket + "\0" + objectKey + "\0" + body).getBytes(StandardCharsets.UTF_8);
            return HexFormat.of().formatHex(mac.doFinal(text)).substring(0, MAC_HEX);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no HmacSHA256", e);
        }
    }
}
