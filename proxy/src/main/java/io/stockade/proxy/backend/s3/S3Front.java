package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Route;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.token.FencingToken;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.Header;
import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;

/**
 * The part of an S3 backend both classes share: it reads a request as S3 once ({@link S3Request}), authenticates the
 * client ({@link ClientAuth}, browser forms with {@link PostForm}) before any fence question, plans it from the
 * operation it names, relays it to the store signed by the proxy ({@link Relay}, {@link Upstream}), and answers
 * refusals as S3 XML errors ({@link S3Refusals}). What differs between the serialized class
 * ({@link SerializedS3Backend}) and the atomic class ({@link AtomicS3Backend}) is asked of its {@link S3Class}: who
 * keeps the fence of a write, and how an unfenced request is forwarded.
 */
final class S3Front {
    private static final Logger LOG = Logger.getLogger(S3Front.class.getName());
    /**
     * The user metadata a client may send its token as ({@code token-from-metadata}: the AWS CLI's {@code --metadata
     * fencing-token=N}), and the name under which earlier builds kept an object's highest token; the proxy still
     * writes it beside {@link #RECORD_META}, so that an earlier build (a replica not yet upgraded, a rollback) reads
     * every object's fence.
     */
    static final String TOKEN_META = "x-amz-meta-fencing-token";
    /**
     * The proxy's own record of the highest token written to an object: a name no client sends, so that metadata a
     * tool copied from an object and sends back (s3cmd's modify, boto3's copy_object with head_object's Metadata) is
     * recognised and refused, never read as a token.
     */
    static final String RECORD_META = "x-amz-meta-stockade-fence";
    /** The object metadata marking a tombstone: a deleted object whose token must outlive it. */
    static final String DELETED_META = "x-amz-meta-fencing-deleted";
    /** The metadata the proxy writes and never shows a client (GET and HEAD answers leave them out). */
    static final Set<String> OWN_META = Set.of(TOKEN_META, RECORD_META, DELETED_META);

    /** The metadata that records {@code token} as an object's highest: under both names (see {@link #TOKEN_META}). */
    static List<Map.Entry<String, String>> tokenRecord(long token) {
        String value = Long.toString(token);
        return List.of(Map.entry(RECORD_META, value), Map.entry(TOKEN_META, value));
    }

    final BackendConfig.S3 config;
    final Upstream upstream;
    final Multipart multipart;
    private final ClientAuth auth;
    private final S3Refusals refusals;

    private final S3Class cls;

    S3Front(BackendConfig.S3 config, S3Class cls) {
        this.config = config;
        this.cls = cls;
        this.refusals = new S3Refusals(config);
        this.upstream = new Upstream(config);
        this.multipart = new Multipart(this, config.secretKey());
        this.auth = config.auth() == BackendConfig.Auth.SIGV4 ? new ClientAuth(config.clients()) : null;
        if (auth == null) {
            LOG.warning("!!! S3 backend " + config.endpoint() + " runs with auth: none: ANY client that reaches this"
                    + " proxy can read and write with the proxy's own S3 credentials. Use it on a trusted network"
                    + " only. !!!");
        }
    }

    // ---- the request, read once ----

    /**
     * The request read as S3, once, by {@link #admit} for the plan ({@link S3Planner}); the plan's actions act on
     * it.
     *
     * @param s3          the request as S3
     * @param verified    its checked signature (null with auth: none, for an unsigned read and for a form)
     * @param upload      the multipart upload the request's upload id names ({@link Multipart}), or null
     * @param unsigned    an unsigned read (or CORS preflight) the policy forwards: sent upstream without the proxy's
     *                    signature, for the store to judge as the anonymous request it is
     * @param form        a browser-form upload, read up to its file; null for any other request
     * @param deletes     a DeleteObjects' body, read and parsed by the plan; null for any other request
     */
    record Parsed(S3Request s3, ClientAuth.Verified verified, UploadIds.Id upload, boolean unsigned, Form form,
                  Deletes deletes) {
        Parsed(S3Request s3, ClientAuth.Verified verified, UploadIds.Id upload, boolean unsigned) {
            this(s3, verified, upload, unsigned, null, null);
        }

        /** This request with the DeleteObjects body the plan read. */
        Parsed withDeletes(Deletes read) {
            return new Parsed(s3, verified, upload, unsigned, form, read);
        }

        /** The token the upload named by the request's {@code uploadId} was created with, if any. */
        OptionalLong uploadToken() {
            return upload == null ? OptionalLong.empty() : upload.token();
        }
    }

    /**
     * A browser-form upload (POST Object), read up to its file and judged in {@link #admit}.
     *
     * @param form      the form; its file is still to be read
     * @param key       the object's key ({@code ${filename}} filled in)
     * @param minLength the smallest file its policy allows
     * @param maxLength the largest file its policy allows
     * @param fields    its fields by lower-case name (the first of each name)
     */
    record Form(PostForm form, String key, long minLength, long maxLength, Map<String, String> fields) {
    }

    /**
     * A DeleteObjects' body as the plan read it: the bytes (relayed as they are when the store deletes the keys
     * itself), and the keys they name.
     */
    static final class Deletes {
        private final byte[] body;
        private final S3Xml.DeleteRequest request;

        Deletes(byte[] body, S3Xml.DeleteRequest request) {
            this.body = body.clone();
            this.request = request;
        }

        /** The body as the client sent it. */
        byte[] body() {
            return body.clone();
        }

        /** The keys it names, and whether the answer is quiet. */
        S3Xml.DeleteRequest request() {
            return request;
        }
    }

    /** The fence scope of one key of a bucket. */
    String scopeOfKey(Route route, String bucket, String key) {
        return S3Type.scope(route.policy().scope().toString(), bucket, scopeKey(key));
    }

    /** The fence scope of a request: the policy's prefix, the bucket, and the key's scope part (a form's key). */
    String scopeOf(Route route, Parsed p) {
        String key = p.form() != null ? p.form().key() : p.s3().key();
        return S3Type.scope(route.policy().scope().toString(), p.s3().bucket(), key == null ? null : scopeKey(key));
    }

    /** The part of a key that names its scope: the key itself, or its first prefix-segments segments. */
    String scopeKey(String key) {
        if (config.fenceScope() == BackendConfig.FenceScope.OBJECT) {
            return key;
        }
        int at = -1;
        for (int i = 0; i < config.prefixSegments(); i++) {
            int next = key.indexOf('/', at + 1);
            if (next < 0) {
                return key;
            }
            at = next;
        }
        return key.substring(0, at + 1);
    }

    /**
     * The spelling a file-system store may fold a key into when that spelling is another scope: {@code k/} is the
     * file (or directory) {@code k}, and a backslash is a separator on Windows. Keys that fold within their own
     * scope ({@code team/dir/} under a prefix scope {@code team/}) are no problem.
     */
    Optional<String> foldedKey(String key) {
        if (key == null) {
            return Optional.empty();
        }
        List<String> folds = new ArrayList<>(2);
        if (key.endsWith("/")) {
            folds.add(key.substring(0, key.length() - 1));
        }
        if (key.indexOf('\\') >= 0) {
            String slashes = key.replace('\\', '/');
            folds.add(slashes.endsWith("/") ? slashes.substring(0, slashes.length() - 1) : slashes);
        }
        for (String fold : folds) {
            if (!fold.isEmpty() && !scopeKey(fold).equals(scopeKey(key))) {
                return Optional.of(fold);
            }
        }
        return Optional.empty();
    }

    /** A request read and authenticated, or why it was refused. */
    record Admitted(Parsed parsed, Problem refusal) {
        static Admitted refused(int status, String code, String message, String resource) {
            return new Admitted(null, S3Problems.of(status, code, message, resource));
        }
    }

    /** Reads the request as S3 and authenticates it, before any fence question: the plan's first step. */
    Admitted admit(Exchange exchange) {
        ServerRequest req = exchange.request();
        S3Request s3;
        try {
            s3 = S3Request.of(req, exchange.route().target(), config.virtualHost());
        } catch (IllegalArgumentException e) {
            return Admitted.refused(400, "InvalidURI", "Couldn't parse the specified URI: " + e.getMessage(), null);
        }
        if (s3.keyProblem().isPresent()) {
            return Admitted.refused(400, "KeyTooLongError", "Your key is too long: "
                    + s3.keyProblem().get(), null);
        }
        if (s3.operation() == S3Request.Operation.POST_OBJECT) {
            return admitForm(exchange, s3);
        }
        ClientAuth.Verified verified = null;
        boolean unsigned = false;
        if (s3.method().equals("OPTIONS")) {
            // A browser's CORS preflight is never signed (S3 does not check a signature on OPTIONS) and changes
            // nothing: the store answers it from its CORS configuration when the policy forwards unsigned reads.
            if (!req.headers().contains(HeaderNames.ORIGIN)) {
                return Admitted.refused(400, "BadRequest", "Insufficient information. Origin "
                        + "request header needed.", s3.resource());
            }
            if (auth != null && config.unsignedReads() != BackendConfig.UnsignedReads.FORWARD) {
                return Admitted.refused(403, "AccessDenied", "CORS preflight requests are answered "
                        + "by the store only when the policy forwards unsigned reads (unsigned-reads: forward)",
                        s3.resource());
            }
            unsigned = auth != null;
        } else if (auth != null && unsignedRequest(req, s3)) {
            if (!s3.read() || config.unsignedReads() != BackendConfig.UnsignedReads.FORWARD) {
                return Admitted.refused(403, "AccessDenied", "Anonymous access is refused: sign the "
                        + "request with SigV4" + (s3.read() ? " (this policy does not forward unsigned reads to the "
                        + "store: unsigned-reads: refuse)" : "; unsigned writes are never forwarded"),
                        s3.resource());
            }
            unsigned = true;
        } else if (auth != null) {
            try {
                verified = auth.verify(req, s3, Instant.now());
            } catch (S3Refused refused) {
                return Admitted.refused(refused.status, refused.code, refused.getMessage(),
                        s3.resource());
            }
        }
        // Authenticated (or an unsigned read the policy forwards): now what the request means to the store.
        Problem table = tableRefusal(exchange, s3, verified);
        if (table != null) {
            return new Admitted(null, table);
        }
        Problem source = copySourceRefusal(exchange, s3);
        if (source != null) {
            return new Admitted(null, source);
        }
        String carrier = s3.operation().fenced() ? unsignedCarrier(exchange, verified) : null;
        if (carrier != null && exchange.fencing().enforced()) {
            // An unsigned token can be set by anyone holding the signed request or a presigned URL.
            return Admitted.refused(403, "AccessDenied", "the " + carrier + " header is not "
                    + "covered by the request's signature: sign it (it must be in " + (s3.presigned()
                    ? "X-Amz-SignedHeaders of the presigned URL" : "SignedHeaders") + "), so that "
                    + "nobody who holds the signed request can change the token (policy option signed-token)",
                    s3.resource());
        }
        // The client signed the upload ID it was given; the upstream gets its own (Multipart, UploadIds).
        Multipart.Admitted upload = multipart.admit(s3);
        if (upload.refusal() != null) {
            return new Admitted(null, upload.refusal());
        }
        return new Admitted(new Parsed(upload.s3(), verified, upload.upload(), unsigned), null);
    }

    /**
     * Why a copy's source may not be read, or null: a CopyObject or UploadPartCopy reads its source with the proxy's
     * credentials, so the source is a resource of the request as much as its destination, and it must be served by
     * the request's own policy (the policy a GET of it is routed to), whose clients, bucket and settings the request
     * was admitted under. Another policy's object (its clients may be others), or an object no policy serves, is
     * 403 {@code AccessDenied}, before anything moves.
     */
    private Problem copySourceRefusal(Exchange exchange, S3Request s3) {
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
                .flatMap(target -> exchange.routes().policy("GET", target)).map(io.stockade.policy.Policy::name);
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
    private Problem tableRefusal(Exchange exchange, S3Request s3, ClientAuth.Verified verified) {
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
        if (config.tokenFromMetadata() && s3.operation().fenced()) {
            // the token, wherever the write is fenced (never relayed)
            names.remove(TOKEN_META);
            hoisted = hoisted.stream().filter(h -> !h.getKey().equals(TOKEN_META)).toList();
        }
        Optional<S3Table.Refusal> header = S3Table.headers(s3.operation(), names, hoisted, copy);
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

    // ---- browser-form uploads (POST Object) ----

    /** The form field that carries a form upload's token (covered by the policy's signature like every field). */
    static final String TOKEN_FIELD = TOKEN_META;

    /**
     * Reads a browser-form upload up to its file and judges it before any fence question: its signature over the
     * policy document, the policy's expiration and conditions, the key. The file is read by the write.
     */
    private Admitted admitForm(Exchange exchange, S3Request s3) {
        ServerRequest req = exchange.request();
        for (Header header : req.headers()) {
            if (header.name().toLowerCase(Locale.ROOT).startsWith("x-amz-")) {
                return new Admitted(null, S3Problems.of(ProblemType.REFUSED_HEADER, 400, "InvalidArgument", "a "
                        + "browser-form upload's headers are covered by no signature (its policy signs its fields): "
                        + "the header " + header.name() + " is refused; give what it sets as a form field",
                        s3.resource()));
            }
        }
        String boundary = PostForm.boundary(req.headers().first(HeaderNames.CONTENT_TYPE).orElse(null));
        if (boundary == null) {
            return Admitted.refused(400, "MalformedPOSTRequest", "The body of your POST request is "
                    + "not well-formed multipart/form-data: no boundary in its Content-Type.", s3.resource());
        }
        PostForm form;
        try {
            form = PostForm.read(exchange.body(), boundary);
        } catch (PostForm.Malformed e) {
            return Admitted.refused(400, e.code, e.getMessage(), s3.resource());
        } catch (IOException e) {
            BodyBounds.BodyRefused bound = BodyBounds.BodyRefused.in(e);
            if (bound != null) {
                return new Admitted(null, bound.problem()); // over a bound of the policy
            }
            return Admitted.refused(400, "IncompleteBody", "the form could not be read: "
                    + e.getMessage(), s3.resource());
        }
        Map<String, String> fields = new LinkedHashMap<>();
        for (PostForm.Field f : form.fields()) {
            fields.putIfAbsent(f.name().toLowerCase(Locale.ROOT), f.value());
        }
        if (fields.containsKey(RECORD_META)) {
            return new Admitted(null, S3Problems.of(S3Table.copiedRecord(), s3.resource()));
        }
        String key = fields.get("key");
        if (key == null) {
            return Admitted.refused(400, "InvalidArgument", "Bucket POST must contain a field named "
                    + "'key'.  If it is specified, please check the order of the fields.", s3.resource());
        }
        key = key.replace("${filename}", form.fileName());
        fields.put("key", key);
        fields.put("bucket", s3.bucket());
        String resource = "/" + s3.bucket() + "/" + key;
        String policyText = fields.get("policy");
        boolean signed = fields.containsKey("x-amz-signature") || fields.containsKey("signature");
        try {
            if (auth != null) {
                if (policyText == null && !signed) {
                    throw new S3Refused(403, "AccessDenied", "Anonymous access is refused: a browser form"
                            + " must carry a policy document signed with SigV4 (x-amz-signature); unsigned writes "
                            + "are never forwarded");
                }
                if (policyText == null) {
                    throw new S3Refused(400, "InvalidArgument", "Bucket POST must contain a field named "
                            + "'policy'.  If it is specified, please check the order of the fields.");
                }
                auth.verifyForm(fields::get, policyText, Instant.now());
            }
            long min = 0;
            long max = Long.MAX_VALUE;
            if (policyText != null) {
                PostPolicy policy = PostPolicy.parse(policyText);
                policy.check(fields, Instant.now());
                min = policy.minLength();
                max = policy.maxLength();
            }
            Optional<String> keyProblem = FormUploads.keyProblem(s3.bucket(), key);
            if (keyProblem.isPresent()) {
                throw new S3Refused(400, key.getBytes(StandardCharsets.UTF_8).length
                        > S3Request.MAX_KEY_BYTES ? "KeyTooLongError" : "InvalidArgument", keyProblem.get());
            }
            String tokenHeader = exchange.fencing().header();
            if (auth != null && config.signedToken() && req.headers().contains(HeaderNames.create(tokenHeader))
                    && exchange.fencing().enforced()) {
                throw new S3Refused(403, "AccessDenied", "a browser form's token is the form field "
                        + TOKEN_FIELD + ", which its policy signs; the " + tokenHeader + " header of a form upload"
                        + " is covered by no signature (policy option signed-token)");
            }
            return new Admitted(new Parsed(s3, null, null, false,
                    new Form(form, key, min, max, Collections.unmodifiableMap(fields)), null), null);
        } catch (S3Refused e) {
            return Admitted.refused(e.status, e.code, e.getMessage(), resource);
        }
    }

    /**
     * A form upload without a fence (mode off or observe, missing: allow): the file is read and written as a plain
     * PutObject, as the other unfenced writes are forwarded.
     */
    WriteResult formUpload(Exchange exchange, Parsed p) {
        Form form = p.form();
        Spooled spooled = spool(exchange, form);
        if (spooled.refused() != null) {
            return spooled.refused();
        }
        try (Spool file = spooled.file()) {
            try (UpstreamResponse response = upstream.send("PUT", p.s3().bucket(), form.key(), List.of(),
                    FormUploads.headers(form), file.body())) {
                if (response.status() / 100 != 2) {
                    Relay.relayResponse(response, exchange);
                    return new WriteResult.Answered(response.status());
                }
                return FormUploads.answer(exchange, form, p.s3().bucket(), response.first("ETag"));
            }
        } catch (RuntimeException e) {
            return failure(exchange, e, true);
        }
    }

    /** A form's file read, or the refusal of it. */
    record Spooled(Spool file, WriteResult refused) {
    }

    /**
     * Reads a form's file within its policy's content-length-range.
     */
    Spooled spool(Exchange exchange, Form form) {
        long max = Math.min(form.maxLength(), MAX_FORM_FILE);
        try {
            Spool file = Spool.of(form.form().file(), max, AtomicS3Backend.REPLAY_BUFFER);
            if (file.length() < form.minLength()) {
                file.close();
                return new Spooled(null, answer(exchange, 400, "EntityTooSmall", "Your proposed upload is smaller "
                        + "than the minimum allowed size (" + form.minLength() + " bytes, the policy's "
                        + "content-length-range)"));
            }
            return new Spooled(file, null);
        } catch (Spool.TooLarge e) {
            return new Spooled(null, answer(exchange, 400, "EntityTooLarge", "Your proposed upload exceeds the "
                    + "maximum allowed size (" + max + " bytes" + (max == MAX_FORM_FILE ? ", S3's limit for a POST "
                    + "upload" : ", the policy's content-length-range") + ")"));
        } catch (IOException e) {
            BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
            if (refused != null) {
                return new Spooled(null, new WriteResult.Answered(refused.problem().status())); // the pipeline's
            }
            return new Spooled(null, answer(exchange, 400, "IncompleteBody", "the form's file could not be read: "
                    + e.getMessage()));
        }
    }

    /** S3's largest POST upload: 5 GiB. */
    static final long MAX_FORM_FILE = 5L * 1024 * 1024 * 1024;

    // ---- the token: the policy's header, or the user metadata the AWS CLI can send ----

    /**
     * The header that carries this request's token outside its signature, when the policy asks for a signed token
     * ({@code signed-token}, a signed request): refused in enforce mode ({@link #admit}), and in any other mode a
     * token nobody can vouch for ({@link #token}: observe judges it as enforce would, and raises nothing with it).
     * Null when every carrier is signed.
     */
    private String unsignedCarrier(Exchange exchange, ClientAuth.Verified verified) {
        if (verified == null || !config.signedToken()) {
            return null;
        }
        for (String carrier : tokenCarriers(exchange.route(), exchange.request())) {
            if (!verified.signedHeaders().contains(carrier.toLowerCase(Locale.ROOT))) {
                return carrier;
            }
        }
        return null;
    }

    /**
     * The headers that carry a token in this request: the policy's token header, and with
     * {@code token-from-metadata} the user metadata {@value #TOKEN_META} (each must be signed).
     */
    private List<String> tokenCarriers(Route route, ServerRequest req) {
        String header = route.policy().fence().header();
        List<String> carriers = new ArrayList<>(2);
        if (req.headers().contains(HeaderNames.create(header))) {
            carriers.add(header);
        }
        if (config.tokenFromMetadata() && !header.equalsIgnoreCase(TOKEN_META)
                && req.headers().contains(HeaderNames.create(TOKEN_META))) {
            carriers.add(TOKEN_META);
        }
        return carriers;
    }

    /**
     * The request's token: the policy's header; with {@code token-from-metadata}, else the user metadata
     * {@value #TOKEN_META} (both: they must agree), else, for a CompleteMultipartUpload, the token its upload ID
     * carries (the CLI cannot send metadata with it, and the upload can only be completed with that token anyway).
     */
    FencingToken.Parsed token(Exchange exchange, Parsed p) {
        ServerRequest req = exchange.request();
        String header = exchange.fencing().header();
        List<String> values = req.headers().all(HeaderNames.create(header), List::of);
        Form form = p.form();
        if (form != null) {
            // a browser form: the token is the form field its policy signs (a header, where allowed, must agree)
            String field = form.fields().get(TOKEN_FIELD);
            if (field == null) {
                return FencingToken.parse(header, values);
            }
            FencingToken.Parsed fromField = FencingToken.parse(TOKEN_FIELD, field);
            if (!values.isEmpty() && FencingToken.parse(header, values) instanceof FencingToken.Present h
                    && fromField instanceof FencingToken.Present f && h.value() != f.value()) {
                return new FencingToken.Malformed(header + " (" + h.value() + ") and the form field " + TOKEN_FIELD
                        + " (" + f.value() + ") name two different tokens; send one");
            }
            return fromField;
        }
        String unsigned = unsignedCarrier(exchange, p.verified());
        if (unsigned != null) {
            // enforce refused it at admit; observe must not raise a fence with a token enforce would refuse
            return new FencingToken.Malformed("the " + unsigned + " header is not covered by the request's "
                    + "signature (policy option signed-token): anyone holding the signed request could have set it");
        }
        if (!config.tokenFromMetadata() || header.equalsIgnoreCase(TOKEN_META)) {
            return FencingToken.parse(header, values);
        }
        List<String> metadata = new ArrayList<>(req.headers().all(HeaderNames.create(TOKEN_META), List::of));
        // a presigner of the JS SDK hoists it into the query, where the URL's signature covers it
        p.s3().hoisted().stream().filter(h -> h.getKey().equals(TOKEN_META)).forEach(h -> metadata.add(h.getValue()));
        if (metadata.isEmpty()) {
            if (values.isEmpty() && p.s3().operation() == S3Request.Operation.COMPLETE_MULTIPART
                    && p.uploadToken().isPresent()) {
                return new FencingToken.Present(p.uploadToken().getAsLong());
            }
            return FencingToken.parse(header, values);
        }
        FencingToken.Parsed fromMetadata = FencingToken.parse(TOKEN_META, metadata);
        if (values.isEmpty()) {
            return fromMetadata;
        }
        FencingToken.Parsed fromHeader = FencingToken.parse(header, values);
        if (fromHeader instanceof FencingToken.Present h && fromMetadata instanceof FencingToken.Present m
                && h.value() != m.value()) {
            return new FencingToken.Malformed(header + " (" + h.value() + ") and " + TOKEN_META + " (" + m.value()
                    + ") name two different tokens; send one");
        }
        return fromHeader instanceof FencingToken.Present ? fromHeader : fromMetadata;
    }

    /** Every refusal as an S3 XML error ({@link S3Refusals}; {@link io.stockade.proxy.backend.Backend#refuse}). */
    void refuse(Exchange exchange, Problem problem) {
        refusals.refuse(exchange, problem);
    }

    // ---- unfenced requests and serialized writes: relayed as they are ----

    /** A request sent without a token: relayed as it is (a form upload as the PutObject it is). */
    WriteResult forwardAsIs(Exchange exchange, Parsed p) {
        if (p.form() != null) {
            return formUpload(exchange, p);
        }
        if (p.s3().operation() == S3Request.Operation.CREATE_MULTIPART) {
            // unfenced (observe, mode off, missing: allow): the upload names no token, whatever the request carried,
            // as a PutObject forwarded as it is leaves none; a token nobody admitted must not become the object's
            return multipart.create(exchange, p, OptionalLong.empty());
        }
        if (Multipart.listsUploads(p.s3())) {
            return multipart.listUploads(exchange, p);
        }
        return relay(exchange, p, List.of());
    }

    /** Sends the client's request upstream (signed by the proxy) and relays the answer. */
    WriteResult relay(Exchange exchange, Parsed p, List<Map.Entry<String, String>> extraHeaders) {
        return relay(exchange, p, extraHeaders, false);
    }

    /**
     * Sends a write the fence admitted upstream and relays the answer, unless the store's answer does not say
     * whether it applied the write ({@link StorageAnswer#UNKNOWN}: a 500 {@code InternalError}): then the
     * pipeline answers that the outcome is unknown.
     */
    WriteResult relayAdmitted(Exchange exchange, Parsed p, List<Map.Entry<String, String>> extraHeaders) {
        return relay(exchange, p, extraHeaders, true);
    }

    private WriteResult relay(Exchange exchange, Parsed p, List<Map.Entry<String, String>> extraHeaders,
                              boolean admitted) {
        S3Request s3 = p.s3();
        List<Map.Entry<String, String>> headers = Relay.forwardHeaders(exchange, p);
        headers.addAll(extraHeaders);
        boolean sent = false;
        try {
            Upstream.Body body = p.deletes() != null ? Upstream.Body.of(p.deletes().body())
                    : Relay.clientBody(exchange, p.verified());
            sent = true;
            try (UpstreamResponse response = send(exchange, p, s3.method(), s3.bucket(), s3.key(),
                    s3.upstreamQuery(), headers, body)) {
                S3Request.Operation op = s3.operation();
                if ((op == S3Request.Operation.GET_OBJECT || op == S3Request.Operation.HEAD_OBJECT)
                        && (response.first(DELETED_META) != null)) {
                    return answer(exchange, 404, "NoSuchKey", "The specified key does not exist.");
                }
                if (p.unsigned() && response.status() == 403 && (op == S3Request.Operation.GET_OBJECT
                        || op == S3Request.Operation.HEAD_OBJECT) && cls.deletedForAnonymous(s3.bucket(), s3.key())) {
                    return answer(exchange, 404, "NoSuchKey", "The specified key does not exist.");
                }
                if (admitted && StorageAnswer.of(response.status()) == StorageAnswer.UNKNOWN) {
                    return StorageAnswer.failed(response.status(), errorCode(response));
                }
                Relay.relayResponse(response, exchange);
                return new WriteResult.Answered(response.status());
            }
        } catch (ClientError e) {
            return answer(exchange, e.status, e.code, e.getMessage());
        } catch (RuntimeException e) {
            return failure(exchange, e, sent);
        }
    }

    /**
     * Sends a request upstream on the client's behalf: signed by the proxy, or, for an unsigned read the policy
     * forwards, unsigned (the proxy's credentials never answer for an anonymous client).
     */
    UpstreamResponse send(Exchange exchange, Parsed p, String method, String bucket, String key,
                          List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers,
                          Upstream.Body body) {
        return p.unsigned() ? upstream.sendUnsigned(method, bucket, key, query, headers, body)
                : upstream.send(method, bucket, key, query, headers, body);
    }

    /** Whether an anonymous client may list a bucket (S3 then answers 404 for a missing key, else 403). */
    boolean anonymousMayList(String bucket, String key) {
        try (UpstreamResponse r = upstream.sendUnsigned("GET", bucket, null, List.of(Map.entry("list-type", "2"),
                Map.entry("max-keys", "1"), Map.entry("prefix", key)), List.of(), null)) {
            return r.status() == 200;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Whether a request carries no signature at all: no Authorization header, no signature in its query. */
    private static boolean unsignedRequest(ServerRequest req, S3Request s3) {
        return !req.headers().contains(HeaderNames.AUTHORIZATION) && !s3.presigned()
                && s3.param("X-Amz-Credential").isEmpty() && s3.param("X-Amz-Algorithm").isEmpty()
                && s3.param("Signature").isEmpty() && s3.param("AWSAccessKeyId").isEmpty();
    }

    /** What a failed upstream call comes to: a refused body, an unreachable upstream, or an unknown outcome. */
    WriteResult failure(Exchange exchange, RuntimeException e, boolean mayHaveReached) {
        if (e instanceof io.helidon.webserver.CloseConnectionException closing) {
            // A relayed answer broke off after its head was committed (UpstreamResponse.relayBody): no S3 error can
            // replace it, the client connection is closed (the catch sites take every RuntimeException).
            throw closing;
        }
        BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
        if (refused != null) {
            // The body went over a bound of the policy mid-stream: the upstream request was left short of its
            // Content-Length, so nothing landed. The pipeline answers the refusal (as S3 XML, through refuse).
            return new WriteResult.Answered(refused.problem().status());
        }
        PayloadReader.Rejected rejected = cause(e, PayloadReader.Rejected.class);
        if (rejected != null) {
            return answer(exchange, rejected.status, rejected.code, rejected.getMessage());
        }
        if (exchange.response().isSent()) {
            // The answer broke off midway: close the client connection so it cannot take a truncated answer for
            // a whole one.
            throw io.stockade.proxy.upstream.UpstreamResponse.brokeOff(e);
        }
        if (cause(e, io.stockade.proxy.upstream.UpstreamClient.AbandonedBody.class) != null) {
            // The client's body could not be read to its end: the upstream request was abandoned unfinished.
            return answer(exchange, 400, "IncompleteBody", "the request body could not be read to its end; "
                    + "nothing was written");
        }
        io.stockade.proxy.upstream.UpstreamFailure failed = cause(e, io.stockade.proxy.upstream.UpstreamFailure.class);
        boolean notSent = !mayHaveReached || (failed != null && !failed.requestSent());
        String reason = failed != null && failed.timedOut()
                ? "upstream " + failed.upstream() + " did not answer within " + config.timeout().toMillis() + " ms"
                : failed != null && !failed.requestSent() ? failed.getMessage() + "; nothing was sent"
                : failed != null ? failed.getMessage() : "the upstream failed: " + root(e);
        // The pipeline logs the result in one line; the stack only here, at FINE.
        LOG.log(Level.FINE, reason, e);
        if (notSent) {
            return new WriteResult.Unavailable(reason);
        }
        return new WriteResult.Unknown(reason);
    }


    /** The {@code <Code>} of an S3 error answer, or empty when it has none (read up to 64 KiB). */
    static String errorCode(UpstreamResponse response) {
        try {
            String xml = new String(response.readAll(64 * 1024), StandardCharsets.UTF_8);
            int start = xml.indexOf("<Code>");
            int end = xml.indexOf("</Code>");
            return start >= 0 && end > start ? xml.substring(start + "<Code>".length(), end) : "";
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /** An S3 error the backend decided: nothing is sent here; the pipeline answers it through {@link #refuse}. */
    WriteResult answer(Exchange exchange, int status, String code, String message) {
        return new WriteResult.Refused(S3Problems.of(status, code, message, null));
    }

    static boolean isHead(ServerRequest req) {
        return req.prologue().method().text().equalsIgnoreCase("HEAD");
    }

    static <T extends Throwable> T cause(Throwable e, Class<T> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }

    static String root(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }

    static HeaderName header(String name) {
        return HeaderNames.create(name);
    }

    static Status status(int code) {
        return Status.create(code);
    }

    void checkAtStart(String policy) {
        Thread.ofVirtual().name("upstream-check-" + policy).start(() -> upstream.probe().ifPresent(e ->
                LOG.warning("policy '" + policy + "': at start, " + e.getMessage()
                        + "; its requests answer 502 or 503 until it can be reached")));
    }

    void close() {
        upstream.close();
    }
}
