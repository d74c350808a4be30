package io.stockade.proxy.backend;

/** How a backend makes the check and the write one step (the guarantee matrix of the README). */
public enum FenceClass {
    /** The storage itself checks (a conditional write): safe with any number of proxy replicas. */
    ATOMIC,
    /**
     * The proxy holds the scope from check until the storage answers; an unknown outcome quarantines the scope.
     * Safe with one proxy replica per scope.
     */
    SERIALIZED
}
