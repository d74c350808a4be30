package io.stockade.proxy.backend.s3;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * What S3 requests are accepted, and why the others are refused, before any fence question (a forged request can
 * never move a high-water mark): the request is read as S3 once ({@link S3Request}), the client authenticated
 * ({@link ClientAuth}; browser forms by {@link FormAdmission}), then judged by the closed table ({@link S3Table}), a
 * copy's source, the token's signature ({@link S3Tokens}) and the upload ID ({@link Multipart}). What is admitted is
 * an {@link AdmittedRequest}, which {@link S3Planner} plans.
 */
final class S3Admission {
    private static final Logger LOG = Logger.getLogger(S3Admission.class.getName());
    /** The user metadata a client may send its token as ({@code token-from-metadata}). */
    private static final String TOKEN_META = ObjectMeta.TOKEN_META;

    private final BackendConfig.S3 config;
    /** The clients' signatures, or null with {@code auth: none}. */
    private final @Nullable ClientAuth auth;
    private final FormAdmission forms;
    private final S3Tokens tokens;
    private final Multipart multipart;

    S3Admission(BackendConfig.S3 config, S3Tokens tokens, Multipart multipart) {
        this.config = config;
        this.tokens = tokens;
        this.multipart = multipart;
        this.auth = config.auth() == BackendConfig.Auth.SIGV4 ? new ClientAuth(config.clients()) : null;
        this.forms = new FormAdmission(config, auth);
        if (auth == null) {
            LOG.warning("!!! S3 backend " + config.endpoint() + " runs with auth: none: ANY client that reaches this"
                    + " proxy can read and write with the proxy's own S3 credentials. Use it on a trusted network"
                    + " only. !!!");
        }
    }

    /** Reads the request as S3 and authenticates it, before any fence question: the plan's first step. */
    AdmissionResult admit(Exchange exchange) {
        ServerRequest req = exchange.request();
        S3Request s3;
        try {
            s3 = S3Request.of(req, Objects.requireNonNull(exchange.route().target(),
                    "the pipeline plans only a route whose path parsed"), config.virtualHost());
        } catch (IllegalArgumentException e) {
            return AdmissionResult.refused(400, "InvalidURI", "Couldn't parse the specified URI: " + e.getMessage(),
                    null);
        }
        if (s3.keyProblem().isPresent()) {
            return AdmissionResult.refused(400, "KeyTooLongError", "Your key is too long: "
                    + s3.keyProblem().get(), null);
        }
        if (s3.operation() == S3Request.Operation.POST_OBJECT) {
            return forms.admit(exchange, s3);
        }
        ClientAuth.Verified verified = null;
        boolean unsigned = false;
        if (s3.method().equals("OPTIONS")) {
            // A browser's CORS preflight is never signed (S3 does not check a signature on OPTIONS) and changes
            // nothing: the store answers it from its CORS configuration when the policy forwards unsigned reads.
            if (!req.headers().contains(HeaderNames.ORIGIN)) {
                return AdmissionResult.refused(400, "BadRequest", "Insufficient information. Origin "
                        + "request header needed.", s3.resource());
            }
            if (auth != null && config.unsignedReads() != BackendConfig.UnsignedReads.FORWARD) {
                return AdmissionResult.refused(403, "AccessDenied", "CORS preflight requests are answered "
                        + "by the store only when the policy forwards unsigned reads (unsigned-reads: forward)",
                        s3.resource());
            }
            unsigned = auth != null;
        } else if (auth != null && unsignedRequest(req, s3)) {
            if (!s3.read() || config.unsignedReads() != BackendConfig.UnsignedReads.FORWARD) {
                return AdmissionResult.refused(403, "AccessDenied", "Anonymous access is refused: sign the "
                        + "request with SigV4" + (s3.read() ? " (this policy does not forward unsigned reads to the "
                        + "store: unsigned-reads: refuse)" : "; unsigned writes are never forwarded"),
                        s3.resource());
            }
            unsigned = true;
        } else if (auth != null) {
            try {
                verified = auth.verify(req, s3, Instant.now());
            } catch (S3Refused refused) {
                return AdmissionResult.refused(refused.status, refused.code, refused.getMessage(),
                        s3.resource());
            }
        }
        // Authenticated (or an unsigned read the policy forwards): now what the request means to the store.
        Problem table = tableRefusal(exchange, s3, verified);
        if (table != null) {
            return new AdmissionResult(null, table);
        }
        Problem source = copySourceRefusal(exchange, s3);
        if (source != null) {
            return new AdmissionResult(null, source);
        }
        String carrier = s3.admittedOperation().fenced() ? tokens.unsignedCarrier(exchange, verified) : null;
        if (carrier != null && exchange.fencing().enforced()) {
            // An unsigned token can be set by anyone holding the signed request or a presigned URL.
            return AdmissionResult.refused(403, "AccessDenied", "the " + carrier + " header is not "
                    + "covered by the request's signature: sign it (it must be in " + (s3.presigned()
                    ? "X-Amz-SignedHeaders of the presigned URL" : "SignedHeaders") + "), so that "
                    + "nobody who holds the signed request can change the token (policy option signed-token)",
                    s3.resource());
        }
        // The client signed the upload ID it was given; the upstream gets its own (Multipart, UploadIds).
        Multipart.Admitted upload = multipart.admit(s3);
        if (upload.refusal() != null) {
            return new AdmissionResult(null, upload.refusal());
        }
        return new AdmissionResult(new AdmittedRequest(Objects.requireNonNull(upload.s3(), "no refusal: admitted"),
                verified, upload.upload(), unsigned), null);
    }

    /**
     * Why a copy's source may not be read, or null: a CopyObject or UploadPartCopy reads its source with the proxy's
     * credentials, so the source is a resource of the request as much as its destination, and it must be served by
     * the request's own policy (the policy a GET of it is routed to), whose clients, bucket and settings the request
     * was admitted under. Another policy's object (its clients may be others), or an object no policy serves, is
     * 403 {@code AccessDenied}, before anything moves.
     */
    private @Nullable Problem copySourceRefusal(Exchange exchange, S3Request s3) {
        ServerRequest req = exchange.request();
        if (!req.headers().contains(HeaderNames.create("x-amz-copy-source"))) {
            return null;
        }
        CopySource source;
        try {
            source = CopySource.of(req);
        } catch (ClientError e) {
            return S3Problems.of(e.status, e.code, e.getMessage(), s3.resource());
        }
        String hostBucket = config.virtualHost() == null ? null
                : S3Request.hostBucket(req.headers().first(HeaderNames.HOST).orElse(""), config.virtualHost());
        String policy = exchange.route().policy().name();
        Optional<String> serves = source.target(hostBucket)
                .flatMap(target -> exchange.routes().policy("GET", target)).map(Policy::name);
        if (serves.equals(Optional.of(policy))) {
            return null;
        }
        return S3Problems.of(403, "AccessDenied", "the copy source " + source.bucket() + "/" + source.key() + " is "
                + serves.map(other -> "served by policy '" + other + "'").orElse("served by no policy of this proxy")
                + ", not by policy '" + policy + "', which serves this request: the proxy reads a copy's source with"
                + " its own credentials, so a copy may read only what the request's policy serves. Read it through"
                + " the policy that serves it (GET) and write it here (PUT)", s3.resource());
    }

    /**
     * Why the closed table refuses an authenticated request, or null: an operation outside the table, an
     * {@code x-amz-*} header its signature does not cover (AWS: 403 "There were headers present in the request which
     * were not signed") or the table does not know for the operation, a token in the query the policy does not read.
     */
    private @Nullable Problem tableRefusal(Exchange exchange, S3Request s3, ClientAuth.@Nullable Verified verified) {
        if (s3.refusal() != null) {
            return S3Problems.of(s3.refusal(), s3.resource());
        }
        if (s3.operation() == S3Request.Operation.DELETE_OBJECT && s3.param("versionId").isPresent()) {
            return S3Problems.of(501, "NotImplemented", "deleting one version of an object is not supported through the"
                    + " fencing proxy", s3.resource());
        }
        ServerRequest req = exchange.request();
        String tokenHeader = exchange.fencing().header().toLowerCase(Locale.ROOT);
        Set<String> names = new TreeSet<>();
        for (Header header : req.headers()) {
            String name = header.name().toLowerCase(Locale.ROOT);
            if (!name.equals(tokenHeader)) {
                names.add(name);
            }
        }
        if (verified != null) {
            List<String> unsignedAmz = names.stream().filter(n -> n.startsWith("x-amz-")
                    && !verified.signedHeaders().contains(n)).toList();
            if (!unsignedAmz.isEmpty()) {
                return S3Problems.of(403, "AccessDenied", "There were headers present in the request which were not "
                        + "signed: " + String.join(", ", unsignedAmz) + ". Every x-amz-* header must be covered by the "
                        + "signature (" + (s3.presigned() ? "X-Amz-SignedHeaders of the presigned URL"
                        : "SignedHeaders") + "), as AWS requires", s3.resource());
            }
        }
        boolean copy = names.contains("x-amz-copy-source");
        List<Map.Entry<String, String>> hoisted = s3.hoisted();
        if (config.tokenFromMetadata() && s3.admittedOperation().fenced()) {
            // the token, wherever the write is fenced (never relayed)
            names.remove(TOKEN_META);
            hoisted = hoisted.stream().filter(h -> !h.getKey().equals(TOKEN_META)).toList();
        }
        Optional<S3Table.Refusal> header = S3Table.headers(s3.admittedOperation(), names, hoisted, copy);
        if (header.isPresent()) {
            return S3Problems.of(header.get(), s3.resource());
        }
        if (s3.hoisted().stream().anyMatch(h -> h.getKey().equals(TOKEN_META)) && !config.tokenFromMetadata()) {
            return S3Problems.of(ProblemType.BAD_PARAMETER, 400, "InvalidArgument", "the query parameter " + TOKEN_META
                    + " is read as the fencing token only under token-from-metadata: true; send the token as the "
                    + exchange.fencing().header() + " header (signed), or ask for token-from-metadata",
                    s3.resource());
        }
        return null;
    }

    /** Whether a request carries no signature at all: no Authorization header, no signature in its query. */
    private static boolean unsignedRequest(ServerRequest req, S3Request s3) {
        return !req.headers().contains(HeaderNames.AUTHORIZATION) && !s3.presigned()
                && s3.param("X-Amz-Credential").isEmpty() && s3.param("X-Amz-Algorithm").isEmpty()
                && s3.param("Signature").isEmpty() && s3.param("AWSAccessKeyId").isEmpty();
    }
}
