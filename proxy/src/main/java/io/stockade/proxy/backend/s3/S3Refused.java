package io.stockade.proxy.backend.s3;

import java.util.Objects;

/**
 * A request refused before anything is sent to the store, with the status and S3 error code the client gets in an
 * S3 error document: a signature or credential the proxy does not accept ({@link ClientAuth}), a browser form
 * against its policy document ({@link PostPolicy}). No stack trace: it is an answer, not a failure.
 */
final class S3Refused extends Exception {
    final int status;
    final String code;

    S3Refused(int status, String code, String message) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
    }

    /** The message it was made with: never null. */
    @Override
    public String getMessage() {
        return Objects.requireNonNull(super.getMessage(), "made with a message");
    }
}
