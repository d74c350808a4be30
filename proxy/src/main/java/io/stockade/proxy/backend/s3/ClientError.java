package io.stockade.proxy.backend.s3;

/** A client error found while reading the request (S3 code and status). */
final class ClientError extends RuntimeException {
    final int status;
    final String code;

    ClientError(int status, String code, String message) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
    }
}
