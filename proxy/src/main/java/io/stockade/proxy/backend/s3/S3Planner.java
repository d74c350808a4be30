package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.token.FencingToken;

import org.jspecify.annotations.Nullable;

/**
 * The S3 backend's plan, its one decision about a request once {@link S3Admission} has read and authenticated it;
 * who keeps a fenced write's fence, and how an unfenced request is forwarded, it asks of the backend's class
 * ({@link S3Class}). S3 fences <em>operations</em>, not HTTP methods: every operation that changes an object is a
 * fenced write of that object's scope, whatever its method ({@link #fencing}); the policy's {@code fence.methods}
 * has no say (an s3 policy that names them is refused at load). The plan is made from the policy's fencing read
 * once at load ({@link Fencing}), and nothing after it judges again.
 * <table>
 *   <caption>what each operation is</caption>
 *   <tr><td>{@link Kind#READ}</td><td>forwarded: it changes nothing</td></tr>
 *   <tr><td>{@link Kind#BUCKET_WRITE}</td><td>forwarded when the policy names it in {@code bucket-writes}, else
 *   refused: it changes what no object's token guards</td></tr>
 *   <tr><td>{@link Kind#OBJECT_WRITE}</td><td>a fenced write of the object's scope, judged by the policy's rule
 *   </td></tr>
 *   <tr><td>{@link Kind#UPLOAD_STEP}</td><td>a fenced write of the object's scope with the token the upload was
 *   created with (sent again, or taken from its upload ID), judged as a continuation of that write</td></tr>
 *   <tr><td>{@link Kind#EVERY_KEY}</td><td>a fenced write of every key's scope the body names (DeleteObjects)</td>
 *   </tr>
 * </table>
 */
final class S3Planner {
    /** The most bytes of a DeleteObjects body (1000 keys of up to 1024 bytes, XML-escaped). */
    static final int MAX_DELETE_BODY = 2 * 1024 * 1024;

    /** How an operation is planned. */
    enum Kind {
        /** It changes nothing: forwarded. */
        READ,
        /** A write of the bucket: forwarded only when the policy names it. */
        BUCKET_WRITE,
        /** A write of one object: fenced on its scope. */
        OBJECT_WRITE,
        /** A step of a multipart upload after its creation: fenced on the object's scope with the upload's token. */
        UPLOAD_STEP,
        /** A write of every key its body names: fenced on each key's scope. */
        EVERY_KEY
    }

    /** How each operation is fenced: one entry per operation, no default (docs/s3.md's table is made from it). */
    static Kind fencing(S3Request.Operation op) {
        return switch (op) {
            case LIST_BUCKETS, BUCKET_READ, LIST_OBJECTS, LIST_OBJECT_VERSIONS, GET_OBJECT, HEAD_OBJECT, OBJECT_READ,
                 LIST_PARTS, PREFLIGHT -> Kind.READ;
            case BUCKET_WRITE, DELETE_BUCKET -> Kind.BUCKET_WRITE;
            case PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT, CREATE_MULTIPART, OBJECT_SUBRESOURCE_WRITE, POST_OBJECT ->
                    Kind.OBJECT_WRITE;
            case UPLOAD_PART, COMPLETE_MULTIPART, ABORT_MULTIPART -> Kind.UPLOAD_STEP;
            case DELETE_OBJECTS -> Kind.EVERY_KEY;
        };
    }

    /** The S3 name of the operation a request is, for messages ("PutObject is fenced by policy ..."). */
    static String operationName(S3Request s3) {
        return switch (s3.admittedOperation()) {
            case LIST_BUCKETS -> "ListBuckets";
            case BUCKET_READ -> "a read of the bucket";
            case LIST_OBJECTS -> "ListObjects";
            case LIST_OBJECT_VERSIONS -> "ListObjectVersions";
            case BUCKET_WRITE -> "a write of the bucket";
            case DELETE_BUCKET -> "DeleteBucket";
            case DELETE_OBJECTS -> "DeleteObjects";
            case POST_OBJECT -> "a browser-form upload (POST Object)";
            case GET_OBJECT -> "GetObject";
            case HEAD_OBJECT -> "HeadObject";
            case OBJECT_READ -> "a read of the object's " + s3.subresource();
            case PUT_OBJECT -> "PutObject";
            case COPY_OBJECT -> "CopyObject";
            case DELETE_OBJECT -> "DeleteObject";
            case OBJECT_SUBRESOURCE_WRITE -> "a " + s3.method() + " of the object's " + s3.subresource();
            case CREATE_MULTIPART -> "CreateMultipartUpload";
            case UPLOAD_PART -> "UploadPart";
            case COMPLETE_MULTIPART -> "CompleteMultipartUpload";
            case ABORT_MULTIPART -> "AbortMultipartUpload";
            case LIST_PARTS -> "ListParts";
            case PREFLIGHT -> "a CORS preflight";
        };
    }

    private final BackendConfig.S3 config;
    private final S3Admission admission;
    private final S3Tokens tokens;
    private final KeyScopes scopes;
    private final S3Class cls;
    private final boolean atomic;

    S3Planner(BackendConfig.S3 config, S3Admission admission, S3Tokens tokens, KeyScopes scopes, S3Class cls) {
        this.config = config;
        this.admission = admission;
        this.tokens = tokens;
        this.scopes = scopes;
        this.cls = cls;
        this.atomic = config.atomic();
    }

    /**
     * The plan: the request read as S3 and authenticated before any fence question (a forged request can never
     * move a high-water mark), then one plan from the operation it names.
     */
    Plan plan(Exchange exchange) {
        AdmissionResult admitted = admission.admit(exchange);
        if (admitted.refusal() != null) {
            return new Plan.Refuse(exchange.scope(), admitted.refusal());
        }
        AdmittedRequest p = Objects.requireNonNull(admitted.request(), "no refusal: the request was admitted");
        String scope = scopes.scopeOf(exchange.route(), p);
        S3Request s3 = p.s3();
        Plan.Action forward = ex -> cls.forward(ex, p);
        return switch (fencing(s3.admittedOperation())) {
            case READ -> new Plan.Forward(scope, Plan.Unfenced.READ, forward);
            case BUCKET_WRITE -> bucketWrite(scope, s3, forward);
            case OBJECT_WRITE -> objectWrite(exchange, p, scope, forward);
            case UPLOAD_STEP -> uploadStep(exchange, p, scope, forward);
            case EVERY_KEY -> everyKey(exchange, p, scope);
        };
    }

    /** A bucket-level write: forwarded when the policy names it ({@code bucket-writes}), else 501. */
    private Plan bucketWrite(String scope, S3Request s3, Plan.Action forward) {
        String bucketWrite = Objects.requireNonNull(s3.bucketWrite(), "planned as a bucket write: it is one");
        if (config.bucketWrites().contains(bucketWrite)) {
            return new Plan.Forward(scope, Plan.Unfenced.NOT_FENCED, forward);
        }
        return new Plan.Refuse(scope, S3Problems.of(ProblemType.NOT_SUPPORTED, 501, "NotImplemented", (bucketWrite
                .equals("create") ? "CreateBucket" : bucketWrite.equals("delete") ? "DeleteBucket" : "a "
                + s3.method() + " of the bucket's " + bucketWrite) + " is a bucket-level write, which the proxy "
                + "forwards only when the policy names it (bucket-writes: [" + bucketWrite + "]); it changes "
                + "what no object's token guards" + (bucketWrite.equals("lifecycle") ? " (a lifecycle rule can "
                + "expire fenced objects and tombstones)" : ""), s3.resource()));
    }

    /** A write of one object, fenced on its scope by the policy's rule. */
    private Plan objectWrite(Exchange exchange, AdmittedRequest p, String scope, Plan.Action forward) {
        S3Request s3 = p.s3();
        if (s3.operation() == S3Request.Operation.OBJECT_SUBRESOURCE_WRITE && atomic) {
            return new Plan.Refuse(scope, S3Problems.of(ProblemType.NOT_SUPPORTED, 501, "NotImplemented", "a "
                    + s3.method() + " of the object's " + s3.subresource() + " cannot be made conditional on the "
                    + "token the atomic class keeps in the object's metadata, so it is not forwarded; set "
                    + (Objects.requireNonNull(s3.subresource(), "the sub-resource names the operation").equals("acl")
                    ? "the ACL (x-amz-acl, x-amz-grant-*)"
                    : "the tags (x-amz-tagging)")
                    + " with the PutObject or CopyObject that writes the object, under its token", s3.resource()));
        }
        if (p.form() == null) {
            Optional<Problem> folded = foldedKey(s3.key(), s3.resource());
            if (folded.isPresent()) {
                return new Plan.Refuse(scope, folded.get());
            }
        }
        Plan plan = exchange.fencing().plan(operationName(s3), List.of(scope), tokens.token(exchange, p),
                cls.keeper(p), forward);
        if (plan instanceof Plan.Write && p.form() != null && !atomic) {
            // refused before the fence; unfenced (observe, off, missing: allow) it is forwarded as a PutObject
            return new Plan.Refuse(scope, S3Problems.of(ProblemType.NOT_SUPPORTED, 501, "NotImplemented", "a "
                    + "browser-form upload names its key in its body, not in the path the serialized class fences; "
                    + "it is fenced only with fence-scope: object and conditional-writes: true", s3.resource()));
        }
        return plan;
    }

    /**
     * A step of a multipart upload after its creation, fenced on the object with the upload's token and judged as a
     * continuation of its write. An upload ID that names no token (every ID a listing shows, and the ID of an upload
     * created without a token: the two are one) cannot tell whose upload it names: its parts and its completion go
     * only where the policy forwards them without a fence (no token and {@code missing: allow}, observe, off), never
     * fenced, so that no token puts bytes into, or completes, another holder's upload. It lists parts and aborts.
     */
    private Plan uploadStep(Exchange exchange, AdmittedRequest p, String scope, Plan.Action forward) {
        S3Request s3 = p.s3();
        Plan plan = exchange.fencing().plan(operationName(s3), List.of(scope), uploadToken(exchange, p),
                exchange.fencing().rule().continuing(), cls.keeper(p), forward);
        boolean putsOrEnds = s3.operation() == S3Request.Operation.UPLOAD_PART
                || s3.operation() == S3Request.Operation.COMPLETE_MULTIPART;
        if (!putsOrEnds || p.upload() == null || p.uploadToken().isPresent() || plan instanceof Plan.Forward
                || plan instanceof Plan.Observe) {
            return plan;
        }
        return new Plan.Refuse(scope, S3Problems.of(400, "InvalidRequest", "this UploadId names no fencing token "
                + "(a listing shows every upload so, and an upload created without a token keeps such an ID), so it"
                + " cannot tell whose upload it names: it takes parts and completes only where the policy forwards a"
                + " step without a token (missing: allow, observe, off), never fenced, so that a writer cannot put "
                + "bytes into or complete another holder's upload. It lists the upload's parts and aborts it (with "
                + "your token). Use the UploadId your CreateMultipartUpload answered, or create an upload with your "
                + "token", s3.resource()));
    }

    /**
     * The token of a step of a multipart upload after its creation: the one it carries (the header, or the object
     * metadata with {@code token-from-metadata}), or else the one the upload was created with, which its upload ID
     * names. A step that carries a token other than its upload's is malformed: the completed object holds the
     * creation's metadata, so a step under another token would leave the object with a token the fence never
     * admitted for it.
     */
    private FencingToken.Parsed uploadToken(Exchange exchange, AdmittedRequest p) {
        FencingToken.Parsed sent = tokens.token(exchange, p);
        OptionalLong created = p.uploadToken();
        if (created.isEmpty()) {
            return sent;
        }
        return switch (sent) {
            case FencingToken.Missing missing -> new FencingToken.Present(created.getAsLong());
            case FencingToken.Present present when present.value() != created.getAsLong() ->
                    new FencingToken.Malformed("this upload was created with fencing token " + created.getAsLong()
                            + "; its parts, its completion and its abort carry that token or none, not "
                            + present.value() + " (create a new upload with token " + present.value() + ")");
            case FencingToken.Present present -> present;
            case FencingToken.Malformed malformed -> malformed;
        };
    }

    /**
     * DeleteObjects: its body is read here (at most {@value #MAX_DELETE_BODY} bytes, its signature checked), and
     * each key it names is a scope of the write, so that the token is verified, limited and judged on each. A key
     * a DeleteObject could not name, or one the serialized class cannot tell from another scope's key, refuses the
     * whole request before anything moves.
     */
    private Plan everyKey(Exchange exchange, AdmittedRequest p, String bucketScope) {
        S3Request s3 = p.s3();
        byte[] body;
        S3Xml.DeleteRequest request;
        try {
            body = Relay.smallBody(exchange, p.verified(), MAX_DELETE_BODY);
            request = S3Xml.parseDelete(body);
        } catch (S3Xml.Malformed e) {
            return new Plan.Refuse(bucketScope, S3Problems.of(400, "MalformedXML", e.getMessage(), s3.resource()));
        } catch (RuntimeException e) {
            return new Plan.Refuse(bucketScope, bodyRefusal(e, s3));
        }
        Set<String> keyScopes = new LinkedHashSet<>();
        List<String> keys = new ArrayList<>(request.keys().size());
        for (String key : request.keys()) {
            Optional<String> problem = FormUploads.keyProblem(s3.namedBucket(), key);
            if (problem.isPresent()) {
                // the key a DeleteObject of its path could not name is not deleted either (x/../victim, a\b)
                return new Plan.Refuse(bucketScope, S3Problems.of(ProblemType.BAD_PATH, 400, key.getBytes(
                        StandardCharsets.UTF_8).length > S3Request.MAX_KEY_BYTES ? "KeyTooLongError"
                        : "InvalidArgument", "DeleteObjects names the "
                        + "key '" + key + "': " + problem.get() + "; nothing was deleted", s3.resource()));
            }
            Optional<Problem> folded = foldedKey(key, "/" + s3.bucket() + "/" + key);
            if (folded.isPresent()) {
                return new Plan.Refuse(bucketScope, folded.get());
            }
            keys.add(key);
            keyScopes.add(scopes.scopeOfKey(exchange.route(), s3.bucket(), key));
        }
        AdmittedRequest read = p.withDeletes(new AdmittedRequest.Deletes(body, new S3Xml.DeleteRequest(keys,
                request.quiet())));
        Keeper keeper = cls.keeper(read);
        return exchange.fencing().plan(operationName(s3), List.copyOf(keyScopes), tokens.token(exchange, read), keeper,
                ex -> cls.forward(ex, read));
    }

    /** Why a small body could not be read: over a bound of the policy, a bad signature, or cut off. */
    private static Problem bodyRefusal(RuntimeException e, S3Request s3) {
        BodyBounds.BodyRefused bound = BodyBounds.BodyRefused.in(e);
        if (bound != null) {
            return bound.problem();
        }
        if (e instanceof ClientError client) {
            return S3Problems.of(client.status, client.code, client.getMessage(), s3.resource());
        }
        PayloadReader.Rejected rejected = S3Failures.cause(e, PayloadReader.Rejected.class);
        if (rejected != null) {
            return S3Problems.of(rejected.status, rejected.code, rejected.getMessage(), s3.resource());
        }
        return S3Problems.of(ProblemType.INCOMPLETE_BODY, 400, "IncompleteBody", "the request body could not be "
                + "read to its end (" + S3Failures.root(e) + "); nothing was written", s3.resource());
    }

    /**
     * A key a file-system store may fold into another scope's key ({@code k/} is the file {@code k}, a backslash a
     * separator on Windows): refused by the serialized class unless the policy says the store keeps them apart
     * ({@code distinct-keys: true}); the atomic class's conditional writes name the object itself.
     */
    private Optional<Problem> foldedKey(@Nullable String key, String resource) {
        if (atomic || config.distinctKeys() || key == null) {
            return Optional.empty();
        }
        return scopes.foldedKey(key).map(fold -> S3Problems.of(ProblemType.BAD_PATH, 400, "InvalidArgument",
                "the key '" + key + "' may be the same object as '" + fold + "' in the store (file-system stores, "
                        + "s3proxy's among them, fold them into one file), which is another scope of this policy; the"
                        + " serialized class refuses writes of such keys unless the policy says the store keeps them"
                        + " apart (distinct-keys: true)", resource));
    }
}
