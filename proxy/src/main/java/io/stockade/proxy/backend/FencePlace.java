package io.stockade.proxy.backend;

import io.stockade.policy.Datasource;

/** Where the fence of a policy's writes is kept, as its {@link BackendType} says. */
public sealed interface FencePlace {

    /** The proxy's fence store: the serialized and conditional classes ({@link Keeper.Serialized}, ...). */
    record ProxyStore() implements FencePlace {
    }

    /**
     * A database the backend writes to keeps the fence in its {@code stockade_fences} and {@code stockade_floors}
     * tables, read in each write's own transaction (the postgres backend, {@code fence: table}).
     *
     * @param migrate whether the proxy creates or updates those tables ({@code migrate: true}) or only checks them
     */
    record Database(Datasource datasource, boolean migrate) implements FencePlace {
    }

    /**
     * Somewhere the proxy holds no fence it could show, raise or retire (a token column in the user's rows, each
     * object's metadata): why, and what an operator does instead.
     */
    record Elsewhere(String reason, String instead) implements FencePlace {
    }
}
