package io.stockade.proxy.backend.s3;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Route;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.token.FencingToken;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * Where an S3 request's token is: the policy's header, or the user metadata the AWS CLI can send
 * ({@code token-from-metadata}), a browser form's signed field, or the upload ID of a CompleteMultipartUpload; and
 * which of its carriers its signature does not cover ({@code signed-token}).
 */
final class S3Tokens {
    private final BackendConfig.S3 config;

    S3Tokens(BackendConfig.S3 config) {
        this.config = config;
    }

    /** The form field that carries a form upload's token (covered by the policy's signature like every field). */
    static final String TOKEN_FIELD = ObjectMeta.TOKEN_META;
    /** The user metadata a client may send its token as ({@code token-from-metadata}). */
    private static final String TOKEN_META = ObjectMeta.TOKEN_META;

    /**
     * The header that carries this request's token outside its signature, when the policy asks for a signed token
     * ({@code signed-token}, a signed request): refused in enforce mode ({@link S3Admission#admit}), and in any
     * other mode a token nobody can vouch for ({@link #token}: observe judges it as enforce would, and raises nothing
     * with it). Null when every carrier is signed.
     */
    @Nullable String unsignedCarrier(Exchange exchange, ClientAuth.@Nullable Verified verified) {
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
    FencingToken.Parsed token(Exchange exchange, AdmittedRequest p) {
        ServerRequest req = exchange.request();
        String header = exchange.fencing().header();
        List<String> values = req.headers().all(HeaderNames.create(header), List::of);
        AdmittedRequest.Form form = p.form();
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

}
