package io.stockade.proxy.backend.s3;

import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import org.jspecify.annotations.Nullable;

/**
 * The S3 errors the backend decides, as problems of the proxy's vocabulary ({@code docs/problems.md}) that keep S3's
 * own status, code and resource: an SDK switches on the code, so {@link S3Refusals#refuse} answers them as S3 XML.
 */
final class S3Problems {
    private S3Problems() {
    }

    /** Problem members that carry an S3 error's own status, code and resource (never sent as JSON). */
    static final String STATUS = "s3Status";
    static final String CODE = "s3Code";
    static final String RESOURCE = "s3Resource";

    /**
     * An S3 error the backend decides, as a problem of the proxy's vocabulary that keeps S3's own status and code
     * (an SDK switches on the code): {@link S3Refusals#refuse} sends it as S3 XML.
     */
    static Problem of(int status, String code, String message, @Nullable String resource) {
        Problem problem = Problem.of(kindOf(status, code), message).with(STATUS, status).with(CODE, code);
        return resource == null ? problem : problem.with(RESOURCE, resource);
    }

    /** A refusal of the closed table, as the S3 error it is answered with. */
    static Problem of(S3Table.Refusal refusal, @Nullable String resource) {
        return of(refusal.kind(), refusal.status(), refusal.code(), refusal.message(), resource);
    }

    /** An S3 error of a given kind (its status and code alone would map to another). */
    static Problem of(ProblemType kind, int status, String code, String message, @Nullable String resource) {
        Problem problem = Problem.of(kind, message).with(STATUS, status).with(CODE, code);
        return resource == null ? problem : problem.with(RESOURCE, resource);
    }

    /** The kind of refusal an S3 error is, by its status and code. */
    private static ProblemType kindOf(int status, String code) {
        return switch (status) {
            case 400 -> switch (code) {
                case "InvalidURI" -> ProblemType.BAD_PATH;
                case "IncompleteBody" -> ProblemType.INCOMPLETE_BODY;
                case "MalformedXML", "MalformedPOSTRequest" -> ProblemType.MALFORMED_BODY;
                case "EntityTooLarge", "MaxMessageLengthExceeded" -> ProblemType.BODY_TOO_LARGE;
                case "UnknownOperation" -> ProblemType.UNKNOWN_OPERATION;
                case "HeaderNotUnderstood" -> ProblemType.REFUSED_HEADER;
                default -> ProblemType.BAD_REQUEST;
            };
            case 403 -> ProblemType.ACCESS_DENIED;
            case 404 -> ProblemType.NOT_FOUND;
            case 405 -> ProblemType.METHOD_NOT_ALLOWED;
            case 412 -> ProblemType.PRECONDITION_FAILED;
            case 413 -> ProblemType.BODY_TOO_LARGE;
            case 501 -> ProblemType.NOT_SUPPORTED;
            case 502 -> ProblemType.UPSTREAM_UNREACHABLE;
            case 503 -> code.equals("SlowDown") ? ProblemType.SLOW_DOWN : ProblemType.STORAGE_ERROR;
            case 504 -> ProblemType.UPSTREAM_TIMEOUT;
            default -> ProblemType.BAD_REQUEST;
        };
    }
}
