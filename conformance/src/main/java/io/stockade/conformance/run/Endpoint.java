package io.stockade.conformance.run;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;

import io.stockade.conformance.Target;
import io.stockade.conformance.Template;
import io.stockade.conformance.writer.SigV4;

import org.jspecify.annotations.Nullable;

/** Where the writers send their writes: the proxy, or the storage itself for the control. */
public interface Endpoint {
    /** The current {@code host:port} (changes when a launched proxy restarts). */
    InetSocketAddress address();

    /** The request path for a key. */
    String path(String key);

    /** The method of a write (the proxy's route: {@code proxy.method}; the suite's own shims: PUT). */
    default String method() {
        return "PUT";
    }

    /** How writers sign their PUTs (an S3 endpoint with SigV4), or null for unsigned requests. */
    default @Nullable SigV4 signer() {
        return null;
    }

    /** kill -9 and restart; null when the suite does not own the proxy. */
    default @Nullable Restarter restarter() {
        return null;
    }

    /**
     * The SQL writes of a SQL target (each writer connects to {@link #address()} through its fault proxy and
     * runs the statement), or null: the writers send HTTP requests to {@link #path}.
     */
    default Target.@Nullable Sql sql() {
        return null;
    }

    /** kill -9 and restart of a launched proxy. */
    interface Restarter {
        Restarted restart() throws Exception;
    }

    /**
     * A restarted proxy.
     *
     * @param address the new address
     * @param doubt   null if the old proxy was really gone before the restart, else why it was not (the kill -9 did
     *                not take effect)
     * @param notes   what happened on the way (failed start attempts), for the report
     */
    record Restarted(InetSocketAddress address, @Nullable String doubt, List<String> notes) {
        public Restarted(InetSocketAddress address, @Nullable String doubt) {
            this(address, doubt, List.of());
        }
    }

    /** The endpoint of SQL writes: the host and port of {@code sql.url()}, the writers' statement. */
    static Endpoint sql(Target.Sql sql) {
        URI u = URI.create(sql.url().substring("jdbc:".length()));
        InetSocketAddress addr = new InetSocketAddress(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort());
        return new Endpoint() {
            @Override
            public InetSocketAddress address() {
                return addr;
            }

            @Override
            public String path(String key) {
                return "";
            }

            @Override
            public Target.Sql sql() {
                return sql;
            }
        };
    }

    /** A fixed endpoint. */
    static Endpoint fixed(URI base, String pathTemplate) {
        return fixed(base, pathTemplate, null);
    }

    /** A fixed endpoint whose writes are signed by {@code signer} (null: unsigned). */
    static Endpoint fixed(URI base, String pathTemplate, @Nullable SigV4 signer) {
        return fixed(base, pathTemplate, signer, "PUT");
    }

    /** A fixed endpoint written with {@code method}, signed by {@code signer} (null: unsigned). */
    static Endpoint fixed(URI base, String pathTemplate, @Nullable SigV4 signer, String method) {
        InetSocketAddress addr = new InetSocketAddress(base.getHost(), base.getPort() < 0 ? 80 : base.getPort());
        String prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/$", "");
        return new Endpoint() {
            @Override
            public InetSocketAddress address() {
                return addr;
            }

            @Override
            public String path(String key) {
                return prefix + Template.expand(pathTemplate, key);
            }

            @Override
            public String method() {
                return method;
            }

            @Override
            public @Nullable SigV4 signer() {
                return signer;
            }
        };
    }
}
