package io.stockade.proxy.backend.s3;

import java.util.Locale;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;

import org.jspecify.annotations.Nullable;

/**
 * The s3 backend, of the atomic class (conditional writes, a scope per object: each object's metadata keeps its
 * fence) or the serialized class (the proxy's store keeps it). Its scopes are {@code <scope>},
 * {@code <scope>/<bucket>} and {@code <scope>/<bucket>/<key part>} ({@link #scope}), the one shape both the
 * requests ({@link KeyScopes}) and the admin routing ({@link #scopes()}) use.
 */
public record S3Type(Policy policy, BackendConfig.S3 config) implements BackendType {
    private static final Logger LOG = Logger.getLogger(S3Type.class.getName());

    @Override
    public Backend open() {
        return open(config);
    }

    /** The backend for a policy: atomic (conditional writes, scope per object) or serialized. */
    static Backend open(BackendConfig.S3 config) {
        Backend backend = new S3Backend(config);
        LOG.info("S3 backend " + config.endpoint() + ": " + (config.atomic() ? "atomic" : "serialized")
                + " class (fence-scope " + config.fenceScope().name().toLowerCase(Locale.ROOT)
                + ", conditional-writes " + config.conditionalWrites() + "), client auth "
                + config.auth().name().toLowerCase(Locale.ROOT));
        return backend;
    }

    @Override
    public FencePlace fencePlace() {
        if (config.atomic()) {
            return new FencePlace.Elsewhere("keeps each object's token in the object's own metadata (s3 backend with "
                    + "conditional writes and fence-scope: object, the atomic class): the store checks it in the "
                    + "conditional write itself and the proxy keeps no fence for it, so there is nothing to show, "
                    + "list, raise or retire here, and a prefix floor would have no place the writes read",
                    "To fence a writer out of an object, write or delete the object through the proxy with a token "
                            + "above the writer's (a delete leaves a tombstone that keeps it); an object's token is "
                            + "its " + ObjectMeta.RECORD_META + " at the store. For floors over a prefix use "
                            + "fence-scope: prefix, whose fence the proxy's store keeps");
        }
        return new FencePlace.ProxyStore();
    }

    @Override
    public ScopeShape scopes() {
        return ScopeShape.below(policy.scope().toString(), "/<bucket>/<key>");
    }

    /**
     * A scope of an s3 policy: its literal scope, then the bucket and the key's scope part when the request names
     * them.
     *
     * @param prefix the policy's scope (a literal)
     * @param bucket the bucket, or {@code null} (a request on the endpoint)
     * @param keyPart the key's scope part ({@link KeyScopes#scopeKey}), or {@code null} (a request on the bucket)
     */
    static String scope(String prefix, @Nullable String bucket, @Nullable String keyPart) {
        if (bucket == null) {
            return prefix;
        }
        return keyPart == null ? prefix + "/" + bucket : prefix + "/" + bucket + "/" + keyPart;
    }
}
