package io.stockade.proxy.backend.http;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.Header;
import io.helidon.http.Headers;
import org.jspecify.annotations.Nullable;

/**
 * What the http backend refuses (400 {@code refused-header}) rather than relays: the headers and the query
 * parameter through which common servers and frameworks let a request say it is another method, or aimed at
 * another target, than its request line. The proxy plans and fences the request line; a storage that obeys one of
 * these would run a method or reach a resource nobody fenced (a {@code GET} with {@code X-HTTP-Method-Override:
 * DELETE} is forwarded as a read).
 * <ul>
 *     <li>method overrides: {@code X-HTTP-Method-Override} (Express's method-override, Symfony, Laravel, Rack,
 *     ASP.NET Web API, Ktor, Google APIs), {@code X-HTTP-Method} (OData, SharePoint), {@code X-Method-Override};
 *     </li>
 *     <li>URL rewrites: {@code X-Original-URL} and {@code X-Rewrite-URL} (IIS's URL Rewrite module, Zend and
 *     Laminas, older Symfony);</li>
 *     <li>the {@code _method} query parameter (Rails, Laravel, Symfony, Spring's {@code HiddenHttpMethodFilter}),
 *     found the way PHP finds it: percent-decoded, {@code +} as a space, leading spaces dropped, a space or
 *     {@code .} taken for {@code _}, anything from a {@code [} on left out, any case.</li>
 * </ul>
 * A {@code _method} field inside a form body is not looked for: the proxy does not parse bodies. Those frameworks
 * honour it on {@code POST} only, which the policy fences (by default) on the request's own scope.
 */
final class RefusedHeaders {
    /** The header names, lower case, each with what a server may take it for. */
    private static final List<String> METHOD_OVERRIDES = List.of("x-http-method-override", "x-http-method",
            "x-method-override");
    private static final List<String> URL_REWRITES = List.of("x-original-url", "x-rewrite-url");
    private static final String METHOD_PARAMETER = "_method";

    private RefusedHeaders() {
    }

    /** The refusal of a request that carries one of them, or empty. */
    static Optional<Problem> refusal(Headers headers, @Nullable String rawQuery) {
        for (Header header : headers) {
            String name = header.headerName().lowerCase();
            if (METHOD_OVERRIDES.contains(name)) {
                return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "the " + header.name() + " header is"
                        + " refused: servers and frameworks take it for the request's method, so the storage could run"
                        + " a method the proxy did not fence; send the method itself in the request line, without "
                        + header.name()).with("header", header.name()));
            }
            if (URL_REWRITES.contains(name)) {
                return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "the " + header.name() + " header is"
                        + " refused: servers and frameworks take it for the request's target, so the write could land"
                        + " on a resource the fence did not check; send the request to that resource itself, without "
                        + header.name()).with("header", header.name()));
            }
        }
        if (rawQuery != null) {
            for (String pair : rawQuery.split("[&;]", -1)) {
                int eq = pair.indexOf('=');
                String name = eq < 0 ? pair : pair.substring(0, eq);
                if (isMethodParameter(name)) {
                    return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "the query parameter '" + name + "' is"
                            + " refused: frameworks take _method for the request's method, so the storage could run a"
                            + " method the proxy did not fence; send the method itself in the request line")
                            .with("parameter", name));
                }
            }
        }
        return Optional.empty();
    }

    /** Whether a raw query parameter name reads as {@code _method} to a framework (see the class comment). */
    static boolean isMethodParameter(String rawName) {
        String name = decode(rawName).stripLeading().replace(' ', '_').replace('.', '_');
        int bracket = name.indexOf('[');
        if (bracket >= 0) {
            name = name.substring(0, bracket);
        }
        return name.toLowerCase(Locale.ROOT).equals(METHOD_PARAMETER);
    }

    /** Percent-decodes a form-encoded name leniently ({@code +} is a space; a broken escape stays as it is). */
    private static String decode(String raw) {
        if (raw.indexOf('%') < 0 && raw.indexOf('+') < 0) {
            return raw;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            int hi = c == '%' && i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
            int lo = hi >= 0 ? Character.digit(raw.charAt(i + 2), 16) : -1;
            if (lo >= 0) {
                bytes.write(hi << 4 | lo);
                i += 2;
            } else {
                bytes.write(c == '+' ? ' ' : c);
            }
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
