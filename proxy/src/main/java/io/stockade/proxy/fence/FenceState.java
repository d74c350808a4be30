package io.stockade.proxy.fence;

import org.jspecify.annotations.Nullable;

/**
 * The fence state of one scope.
 *
 * @param token   the highest token accepted
 * @param version the upstream version (ETag) recorded under that token, {@link #ABSENT} when the resource is
 *                known not to exist, or {@code null} when unknown
 */
public record FenceState(long token, @Nullable String version) {
    /** The version of a resource known not to exist (never written, or deleted). */
    public static final String ABSENT = "";
}
