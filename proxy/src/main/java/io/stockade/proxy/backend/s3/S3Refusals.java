package io.stockade.proxy.backend.s3;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.RequestTarget;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.problem.Problem;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/** The S3 backend's refusals answered as S3 XML errors, whoever decided them (the backend or the engine). */
final class S3Refusals {
    private final BackendConfig.S3 config;

    S3Refusals(BackendConfig.S3 config) {
        this.config = config;
    }

    /**
     * Every refusal as an S3 XML error: one the backend decided keeps its S3 status and code; one the engine
     * decided (stale, missing or malformed token, store unavailable, quarantine) gets the S3 code its kind maps to,
     * stale as 412 {@code PreconditionFailed} so that SDKs understand it. Every 503 says {@code Retry-After}
     * ({@link io.stockade.proxy.backend.Backend#refuse}).
     */
    void refuse(Exchange exchange, Problem problem) {
        ServerRequest req = exchange.request();
        int status;
        String code;
        String detail = problem.detail();
        if (problem.member(S3Problems.CODE) instanceof String s3Code) {
            status = (Integer) Objects.requireNonNull(problem.member(S3Problems.STATUS),
                    "S3Problems.of sets the status with the code");
            code = s3Code;
        } else {
            status = problem.status();
            code = switch (problem.kind()) {
                case STALE_TOKEN -> {
                    status = 412;
                    yield "PreconditionFailed";
                }
                case MISSING_TOKEN -> {
                    status = 400;
                    detail = missingTokenDetail(exchange, detail);
                    yield "MissingFencingToken";
                }
                case MALFORMED_TOKEN -> "InvalidFencingToken";
                case BAD_PATH -> "InvalidURI";
                case SCOPE_BUSY, SLOW_DOWN -> "SlowDown";
                case UNKNOWN_OUTCOME -> "UnknownOutcome";
                default -> status == 503 ? "ServiceUnavailable" : camel(problem.kind().type());
            };
        }
        Map<String, String> headers = new LinkedHashMap<>();
        if (status == 503) {
            headers.put("Retry-After", problem.headers().getOrDefault("Retry-After", "1"));
        }
        String resource = problem.member(S3Problems.RESOURCE) instanceof String r ? r : resourceOf(exchange);
        S3Xml.error(exchange.response(), Relay.isHead(req), status, code, detail, resource, headers);
    }

    /** What a client missing its token should do: the form field of a form upload, the metadata the CLI can send. */
    private String missingTokenDetail(Exchange exchange, String detail) {
        ServerRequest req = exchange.request();
        String meta = ObjectMeta.TOKEN_META;
        boolean form = exchange.route().target() != null && resourceRequest(exchange)
                .map(s3 -> s3.operation() == S3Request.Operation.POST_OBJECT).orElse(false);
        // a delete or a Complete carries no metadata: the header itself still counts (the CLI's hook sends it)
        boolean carriesMetadata = resourceRequest(exchange).map(s3 -> switch (s3.admittedOperation()) {
            case PUT_OBJECT, COPY_OBJECT, CREATE_MULTIPART -> true;
            default -> false;
        }).orElse(false);
        return form ? "a browser-form upload is fenced: send the token of your lock as the form field "
                + S3Tokens.TOKEN_FIELD + ", with a condition for it in the signed policy document" : detail
                + (config.tokenFromMetadata() && carriesMetadata ? " (or as the object metadata fencing-token: "
                + meta + ", e.g. aws s3 cp --metadata fencing-token=N)"
                : config.tokenFromMetadata() ? "; this request carries no object metadata, so " + meta + " (the "
                + "AWS CLI's --metadata fencing-token=N) cannot be its token: the AWS CLI sends the "
                + exchange.fencing().header() + " header with the hook client-sdk/python/stockade_fencing.py "
                + "(docs/s3.md, The AWS CLI and boto3)"
                : req.headers().contains(HeaderNames.create(meta))
                ? "; " + meta + " is not read as the token unless the policy says "
                + "token-from-metadata: true" : "");
    }

    /** The request read as S3 again (its head only), for an error's resource; empty when it cannot be. */
    private Optional<S3Request> resourceRequest(Exchange exchange) {
        RequestTarget target = exchange.route().target();
        if (target == null) {
            return Optional.empty(); // a path that did not parse
        }
        try {
            return Optional.of(S3Request.of(exchange.request(), target, config.virtualHost()));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** The resource an error names: /bucket/key, or the raw path of a target that did not parse. */
    private @Nullable String resourceOf(Exchange exchange) {
        if (exchange.route().target() == null) {
            return exchange.request().path().rawPath();
        }
        return resourceRequest(exchange).map(S3Request::resource).orElse(null);
    }

    private static String camel(String kebab) {
        StringBuilder b = new StringBuilder();
        for (String part : kebab.split("-", -1)) {
            if (!part.isEmpty()) {
                b.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
            }
        }
        return b.toString();
    }
}
