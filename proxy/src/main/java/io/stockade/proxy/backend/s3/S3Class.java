package io.stockade.proxy.backend.s3;

import java.time.Duration;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.WriteResult;

/**
 * The class of an S3 backend, the strategy the one {@link S3Backend} holds: what differs between the serialized
 * class ({@link SerializedClass}: the proxy's store keeps each fence) and the atomic class ({@link AtomicClass}: each
 * object's metadata keeps its own). {@link S3Planner} asks it who keeps a write's fence and how an unfenced request
 * goes to the store; it writes through {@link Relay} and never calls back into the plan.
 */
interface S3Class {
    /** Who keeps the fence of a fenced write: the proxy's store (serialized), or the object's metadata (atomic). */
    Keeper keeper(AdmittedRequest p);

    /** A request the plan forwards without a fence. */
    WriteResult forward(Exchange exchange, AdmittedRequest p);

    /** {@link io.stockade.proxy.backend.Backend#settle}: how long a write left unanswered may still land. */
    Duration settle();

    /** {@link io.stockade.proxy.backend.Backend#needsFenceStore}: whether the proxy's store keeps the fences. */
    boolean needsFenceStore();

    /** Releases what the class holds beside the backend's upstream. */
    void close();
}
