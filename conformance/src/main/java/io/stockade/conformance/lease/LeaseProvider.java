package io.stockade.conformance.lease;

import java.io.IOException;
import java.util.Optional;

/**
 * Where writers get their leases: the seam between the conformance suite and a lock service. The suite ships
 * {@link CounterLeaseProvider} (a token counter with a TTL run by the suite itself); the client SDK's providers
 * (etcd, Kubernetes Lease, PostgreSQL) plug in here through {@link LeaseProviders#create(String)} with
 * {@code class:<fully.qualified.Name>:<argument>}: a public class implementing this interface with a public
 * constructor taking one {@code String}.
 */
public interface LeaseProvider extends AutoCloseable {

    /**
     * Tries once to take the lease for {@code holder}.
     *
     * @return the lease, or empty while someone else holds it
     */
    Optional<Lease> tryAcquire(String holder) throws IOException;

    @Override
    default void close() {
    }
}
