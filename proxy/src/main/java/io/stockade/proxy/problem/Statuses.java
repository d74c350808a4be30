package io.stockade.proxy.problem;

import io.helidon.http.Status;
import org.jspecify.annotations.Nullable;

/**
 * Statuses with their reason phrases. Helidon's {@link Status#create(int)} knows most codes, but gives the codes it
 * does not know (431, 451, ...) their number as the reason phrase, so the status line read {@code HTTP/1.1 431 431}.
 * Every status the proxy answers itself goes through {@link #of(int)}.
 */
public final class Statuses {
    private Statuses() {
    }

    /** The status for {@code code}, with the RFC reason phrase where Helidon has none. */
    public static Status of(int code) {
        String phrase = missingPhrase(code);
        return phrase == null ? Status.create(code) : Status.create(code, phrase);
    }

    /** The reason phrase of a code Helidon 4.5 does not know, or null. */
    static @Nullable String missingPhrase(int code) {
        return switch (code) {
            case 102 -> "Processing";
            case 103 -> "Early Hints";
            case 425 -> "Too Early";
            case 431 -> "Request Header Fields Too Large";
            case 451 -> "Unavailable For Legal Reasons";
            case 506 -> "Variant Also Negotiates";
            default -> null;
        };
    }
}
