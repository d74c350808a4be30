package io.stockade.proxy.backend.s3;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Route;

import org.jspecify.annotations.Nullable;

/**
 * The fence scopes of an s3 policy's keys ({@link S3Type#scope}): a key's scope part by the policy's
 * {@code fence-scope} and {@code prefix-segments}, and the spellings a file-system store may fold a key into.
 */
final class KeyScopes {
    private final BackendConfig.S3 config;

    KeyScopes(BackendConfig.S3 config) {
        this.config = config;
    }

    /** The fence scope of one key of a bucket. */
    String scopeOfKey(Route route, @Nullable String bucket, String key) {
        return S3Type.scope(route.policy().scope().toString(), bucket, scopeKey(key));
    }

    /** The fence scope of a request: the policy's prefix, the bucket, and the key's scope part (a form's key). */
    String scopeOf(Route route, AdmittedRequest p) {
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
    Optional<String> foldedKey(@Nullable String key) {
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
}
