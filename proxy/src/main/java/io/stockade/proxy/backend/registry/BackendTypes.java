package io.stockade.proxy.backend.registry;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.file.FileType;
import io.stockade.proxy.backend.http.HttpType;
import io.stockade.proxy.backend.postgres.PostgresType;
import io.stockade.proxy.backend.s3.S3Type;

/** The one registration of the backend types: a policy's backend section to its {@link BackendType}. */
public final class BackendTypes {
    private BackendTypes() {
    }

    /** The type of {@code policy}'s backend, for that policy. */
    public static BackendType of(Policy policy) {
        return switch (policy.backend()) {
            case BackendConfig.Http http -> new HttpType(policy, http);
            case BackendConfig.File file -> new FileType(policy, file);
            case BackendConfig.Postgres postgres -> new PostgresType(policy, postgres);
            case BackendConfig.S3 s3 -> new S3Type(policy, s3);
        };
    }
}
