package io.stockade.conformance.lease;

import java.lang.reflect.InvocationTargetException;
import java.net.URI;

/** Builds a {@link LeaseProvider} from a one-line spec, as writers receive it on their command line. */
public final class LeaseProviders {

    private LeaseProviders() {
    }

    /**
     * {@code counter:<url>} for the suite's own {@link CounterLeaseServer}; {@code etcd:<ttlMillis>:<name>:<urls>},
     * {@code postgres:<ttlMillis>:<name>:<jdbc url>}, {@code redis:<ttlMillis>:<name>:<redis url>} or
     * {@code zookeeper:<ttlMillis>:<name>:<host:port,...>} or
     * {@code dynamodb:<ttlMillis>:<name>:<table>,<region>[,<endpoint>]} or {@code consul:<ttlMillis>:<name>:<url>}
     * for the client
     * SDK's providers ({@link SdkLeaseProvider});
     * or {@code class:<Name>:<argument>} for any other provider (a public class with a public constructor taking
     * the argument string).
     */
    public static LeaseProvider create(String spec) {
        if (spec.startsWith("etcd:") || spec.startsWith("postgres:") || spec.startsWith("redis:")
                || spec.startsWith("zookeeper:") || spec.startsWith("dynamodb:") || spec.startsWith("consul:")) {
            int colon = spec.indexOf(':');
            return SdkLeaseProvider.create(spec.substring(0, colon), spec.substring(colon + 1));
        }
        if (spec.startsWith("counter:")) {
            return new CounterLeaseProvider(URI.create(spec.substring("counter:".length())));
        }
        if (spec.startsWith("class:")) {
            String rest = spec.substring("class:".length());
            int colon = rest.indexOf(':');
            String name = colon < 0 ? rest : rest.substring(0, colon);
            String arg = colon < 0 ? "" : rest.substring(colon + 1);
            try {
                return Class.forName(name).asSubclass(LeaseProvider.class).getConstructor(String.class)
                        .newInstance(arg);
            } catch (ReflectiveOperationException | ClassCastException e) {
                Throwable cause = e instanceof InvocationTargetException ite ? ite.getCause() : e;
                throw new IllegalArgumentException("cannot create lease provider " + name + ": " + cause, cause);
            }
        }
        throw new IllegalArgumentException("unknown lease provider spec '" + spec
                + "'; valid: counter:<url>, etcd:<ttlMillis>:<name>:<urls>, postgres:<ttlMillis>:<name>:<jdbc url>, "
                + "redis:<ttlMillis>:<name>:<redis url>, zookeeper:<ttlMillis>:<name>:<host:port,...>, "
                + "dynamodb:<ttlMillis>:<name>:<table>,<region>[,<endpoint>], consul:<ttlMillis>:<name>:<url>, "
                + "class:<Name>:<argument>");
    }
}
