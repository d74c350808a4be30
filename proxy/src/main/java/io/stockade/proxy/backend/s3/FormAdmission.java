package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * The admission of a browser-form upload (POST Object, {@link PostForm}): read up to its file and judged before any
 * fence question, as {@link S3Admission} judges every other request. {@link FormUploads} writes and answers it.
 */
final class FormAdmission {
    private final BackendConfig.S3 config;
    /** The clients' signatures, or null with {@code auth: none}. */
    private final @Nullable ClientAuth auth;
    FormAdmission(BackendConfig.S3 config, @Nullable ClientAuth auth) {

        this.config = config;
        this.auth = auth;
    }

    /**
     * Reads a browser-form upload up to its file and judges it before any fence question: its signature over the
     * policy document, the policy's expiration and conditions, the key. The file is read by the write.
     */
    AdmissionResult admit(Exchange exchange, S3Request s3) {
        ServerRequest req = exchange.request();
        for (Header header : req.headers()) {
            if (header.name().toLowerCase(Locale.ROOT).startsWith("x-amz-")) {
                return new AdmissionResult(null, S3Problems.of(ProblemType.REFUSED_HEADER, 400, "InvalidArgument", "a "
                        + "browser-form upload's headers are covered by no signature (its policy signs its fields): "
                        + "the header " + header.name() + " is refused; give what it sets as a form field",
                        s3.resource()));
            }
        }
        String boundary = PostForm.boundary(req.headers().first(HeaderNames.CONTENT_TYPE).orElse(null));
        if (boundary == null) {
            return AdmissionResult.refused(400, "MalformedPOSTRequest", "The body of your POST request is "
                    + "not well-formed multipart/form-data: no boundary in its Content-Type.", s3.resource());
        }
        PostForm form;
        try {
            form = PostForm.read(exchange.body(), boundary);
        } catch (PostForm.Malformed e) {
            return AdmissionResult.refused(400, e.code, e.getMessage(), s3.resource());
        } catch (IOException e) {
            BodyBounds.BodyRefused bound = BodyBounds.BodyRefused.in(e);
            if (bound != null) {
                return new AdmissionResult(null, bound.problem()); // over a bound of the policy
            }
            return AdmissionResult.refused(400, "IncompleteBody", "the form could not be read: "
                    + e.getMessage(), s3.resource());
        }
        Map<String, String> fields = new LinkedHashMap<>();
        for (PostForm.Field f : form.fields()) {
            fields.putIfAbsent(f.name().toLowerCase(Locale.ROOT), f.value());
        }
        if (fields.containsKey(ObjectMeta.RECORD_META)) {
            return new AdmissionResult(null, S3Problems.of(S3Table.copiedRecord(), s3.resource()));
        }
        String key = fields.get("key");
        if (key == null) {
            return AdmissionResult.refused(400, "InvalidArgument", "Bucket POST must contain a field named "
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
            Optional<String> keyProblem = FormUploads.keyProblem(s3.namedBucket(), key);
            if (keyProblem.isPresent()) {
                throw new S3Refused(400, key.getBytes(StandardCharsets.UTF_8).length
                        > S3Request.MAX_KEY_BYTES ? "KeyTooLongError" : "InvalidArgument", keyProblem.get());
            }
            String tokenHeader = exchange.fencing().header();
            if (auth != null && config.signedToken() && req.headers().contains(HeaderNames.create(tokenHeader))
                    && exchange.fencing().enforced()) {
                throw new S3Refused(403, "AccessDenied", "a browser form's token is the form field "
                        + S3Tokens.TOKEN_FIELD + ", which its policy signs; the " + tokenHeader + " header of a form "
                        + "upload is covered by no signature (policy option signed-token)");
            }
            return new AdmissionResult(new AdmittedRequest(s3, null, null, false,
                    new AdmittedRequest.Form(form, key, min, max, Collections.unmodifiableMap(fields)), null), null);
        } catch (S3Refused e) {
            return AdmissionResult.refused(e.status, e.code, e.getMessage(), resource);
        }
    }
}
