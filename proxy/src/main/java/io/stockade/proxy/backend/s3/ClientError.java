package io.stockade.proxy.backend.s3;

import java.util.Objects;

/** A client error found while reading the request (S3 code and status). */
final class ClientError extends RuntimeException {
    final int status;
    final String code;

    ClientError(int status, String code, String message) {
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
