package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.RequestTarget;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.listener.BodyBounds;

import io.helidon.http.HeaderNames;
import org.jspecify.annotations.Nullable;

/**
 * What a browser-form upload (POST Object) comes to once its form was read and judged ({@link FormAdmission#admit}):
 * the key it may name, its file read within its policy's bounds ({@link #spool}), the headers its fields give the
 * object, the answer S3 sends.
 */
final class FormUploads {
    private FormUploads() {
    }

    /**
     * Why a key named outside the request's path (a form's field, a DeleteObjects entry) is refused: empty, over 1024
     * bytes, or a key the proxy refuses in a path (dot segments, empty segments, a {@code \}, control characters:
     * the proxy writes it in a path, where stores and servers may normalise it). One rule for every operation: the
     * keys a GET, PUT or DELETE cannot name are the keys no other operation writes or deletes (docs/s3.md).
     */
    static Optional<String> keyProblem(String bucket, String key) {
        if (key.isEmpty()) {
            return Optional.of("the key is empty");
        }
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > S3Request.MAX_KEY_BYTES) {
            return Optional.of("Your key is too long: " + bytes + " bytes of UTF-8; S3 allows at most "
                    + S3Request.MAX_KEY_BYTES);
        }
        String raw = "/" + SigV4.encode(bucket, true) + "/" + SigV4.encode(key, false);
        if (!(RequestTarget.parse(raw, null, false)
                instanceof RequestTarget.Accepted accepted)) {
            return Optional.of("the key '" + key + "' is refused" + (key.indexOf('\\') >= 0 ? ": it holds a '\\',"
                    + " which stores and servers may take for a '/'" : " as an ambiguous path (empty, '.' or '..'"
                    + " segments, control characters)") + "; no operation through the proxy writes or deletes such"
                    + " a key (docs/request-targets.md)");
        }
        List<String> expected = new ArrayList<>();
        expected.add(bucket);
        expected.addAll(List.of(key.split("/", -1)));
        if (key.endsWith("/")) {
            expected.removeLast();
        }
        if (!accepted.target().segments().equals(expected) || accepted.target().trailingSlash() != key.endsWith("/")) {
            return Optional.of("the key '" + key + "' does not read back as itself in a path");
        }
        return Optional.empty();
    }

    /** The headers a form upload's fields give the object (its type, content headers, ACL, metadata). */
    static List<Map.Entry<String, String>> headers(AdmittedRequest.Form form) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (PostForm.Field f : form.form().fields()) {
            String name = f.name().toLowerCase(Locale.ROOT);
            if (name.equals("content-type") || name.equals("cache-control") || name.equals("content-disposition")
                    || name.equals("content-encoding") || name.equals("expires")
                    || name.equals("x-amz-storage-class") || name.equals("x-amz-website-redirect-location")
                    || name.startsWith("x-amz-server-side-encryption")
                    || (name.startsWith("x-amz-meta-") && !ObjectMeta.OWN_META.contains(name))) {
                out.add(Map.entry(name, f.value()));
            } else if (name.equals("acl")) {
                out.add(Map.entry("x-amz-acl", f.value()));
            }
        }
        return out;
    }

    /** What a successful form upload answers: a redirect, 200, 201 with XML, or 204 (S3's default). */
    static WriteResult answer(Exchange exchange, AdmittedRequest.Form form, String bucket, @Nullable String etag) {
        var res = exchange.response();
        String quoted = etag == null ? "" : etag;
        String host = exchange.request().headers().first(HeaderNames.HOST).orElse("localhost");
        String location = "http://" + host + "/" + SigV4.encode(bucket, true) + "/" + SigV4.encode(form.key(), false);
        String redirect = form.fields().getOrDefault("success_action_redirect", form.fields().get("redirect"));
        if (!quoted.isEmpty()) {
            res.header(HeaderNames.ETAG, quoted);
        }
        if (redirect != null && !redirect.isBlank()) {
            String target = redirect + (redirect.contains("?") ? "&" : "?") + "bucket="
                    + URLEncoder.encode(bucket, StandardCharsets.UTF_8) + "&key="
                    + URLEncoder.encode(form.key(), StandardCharsets.UTF_8) + "&etag="
                    + URLEncoder.encode(quoted, StandardCharsets.UTF_8);
            res.header(HeaderNames.LOCATION, target);
            res.status(303).send();
            return new WriteResult.Answered(303);
        }
        res.header(HeaderNames.LOCATION, location);
        String status = form.fields().getOrDefault("success_action_status", "204").trim();
        switch (status) {
            case "200" -> {
                res.status(200).send();
                return new WriteResult.Answered(200);
            }
            case "201" -> {
                String xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse><Location>"
                        + S3Xml.escape(location) + "</Location><Bucket>" + S3Xml.escape(bucket) + "</Bucket><Key>"
                        + S3Xml.escape(form.key()) + "</Key><ETag>" + S3Xml.escape(quoted) + "</ETag></PostResponse>";
                res.header(HeaderNames.CONTENT_TYPE, "application/xml");
                res.status(201).send(xml.getBytes(StandardCharsets.UTF_8));
                return new WriteResult.Answered(201);
            }
            default -> {
                res.status(204).send();
                return new WriteResult.Answered(204);
            }
        }
    }

    /** A form's file read, or the refusal of it. */
    record Spooled(@Nullable Spool file, @Nullable WriteResult refused) {
    }

    /**
     * Reads a form's file within its policy's content-length-range.
     */
    static Spooled spool(Exchange exchange, AdmittedRequest.Form form) {
        long max = Math.min(form.maxLength(), MAX_FORM_FILE);
        try {
            Spool file = Spool.of(form.form().file(), max, ConditionalWrite.REPLAY_BUFFER);
            if (file.length() < form.minLength()) {
                file.close();
                return new Spooled(null, S3Failures.answer(exchange, 400, "EntityTooSmall", "Your proposed upload is "
                        + "smaller than the minimum allowed size (" + form.minLength() + " bytes, the policy's "
                        + "content-length-range)"));
            }
            return new Spooled(file, null);
        } catch (Spool.TooLarge e) {
            return new Spooled(null, S3Failures.answer(exchange, 400, "EntityTooLarge", "Your proposed upload exceeds "
                    + "the maximum allowed size (" + max + " bytes" + (max == MAX_FORM_FILE ? ", S3's limit for a POST "
                    + "upload" : ", the policy's content-length-range") + ")"));
        } catch (IOException e) {
            BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
            if (refused != null) {
                return new Spooled(null, new WriteResult.Answered(refused.problem().status())); // the pipeline's
            }
            return new Spooled(null, S3Failures.answer(exchange, 400, "IncompleteBody", "the form's file could not be "
                    + "read: " + e.getMessage()));
        }
    }

    /** S3's largest POST upload: 5 GiB. */
    static final long MAX_FORM_FILE = 5L * 1024 * 1024 * 1024;
}
