package io.stockade.proxy.backend.s3;

import java.util.Locale;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Backend;

/** Opens the S3 backend of a policy: of the atomic class or of the serialized class. */
public final class S3Backends {
    private static final Logger LOG = Logger.getLogger(S3Backends.class.getName());

    private S3Backends() {
    }

    /** The backend for a policy: atomic (conditional writes, scope per object) or serialized. */
    public static Backend open(BackendConfig.S3 config) {
        Backend backend = config.atomic() ? new AtomicS3Backend(config) : new SerializedS3Backend(config);
        LOG.info("S3 backend " + config.endpoint() + ": " + (config.atomic() ? "atomic" : "serialized")
                + " class (fence-scope " + config.fenceScope().name().toLowerCase(Locale.ROOT)
                + ", conditional-writes " + config.conditionalWrites() + "), client auth "
                + config.auth().name().toLowerCase(Locale.ROOT));
        return backend;
    }
}
