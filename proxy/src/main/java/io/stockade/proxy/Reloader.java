package io.stockade.proxy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.policy.PolicyException;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.admin.PolicyReload;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.pipeline.FencePipeline;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.verify.registry.TokenVerifiers;

/**
 * Live policy reload: the policy file is loaded and validated again, its backends opened, and the new policies put
 * in force for every request that starts from then on. A file that does not load is refused with the loader's
 * located errors, and the policies in force stay. What only a restart can change (the listener's host, limits and
 * TLS, the fence store, the admin block) is refused too, rather than half-applied.
 * <p>
 * Backends are reopened for every policy, so a changed upstream or directory takes effect; the replaced ones are
 * closed after {@link StockadeServer#DRAIN}, when requests that started before the reload are done, and so are the
 * verifiers of {@code fence.verify} blocks no policy has any more. Fence state is
 * untouched: it lives in the store, keyed by scope, and scope locks and quarantines are shared across reloads.
 */
public final class Reloader implements PolicyReload, AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Reloader.class.getName());

    private final FencePipeline pipeline;
    private final TokenVerifiers verifiers;
    private final ScheduledExecutorService closer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "stockade-backend-closer");
        t.setDaemon(true);
        return t;
    });
    private final List<Backend> draining = new ArrayList<>();
    private Map<String, Backend> backends;

    /** Told the policies in force after each reload (the memory store's shares of its bound). */
    private final Consumer<List<Policy>> inForceNow;

    Reloader(FencePipeline pipeline, TokenVerifiers verifiers) {
        this(pipeline, verifiers, policies -> { });
    }

    Reloader(FencePipeline pipeline, TokenVerifiers verifiers, Consumer<List<Policy>> inForceNow) {
        this.inForceNow = inForceNow;
        this.pipeline = pipeline;
        this.verifiers = verifiers;
        this.backends = new LinkedHashMap<>();
    }

    @Override
    public StockadeConfig config() {
        return pipeline.config();
    }

    synchronized Map<String, Backend> backends() {
        return backends;
    }

    /** The policies in force and their backends, read together (a reload swaps both under this lock). */
    record InForce(StockadeConfig config, Map<String, Backend> backends) {
    }

    synchronized InForce inForce() {
        return new InForce(pipeline.config(), backends);
    }

    synchronized void started(Map<String, Backend> initial) {
        backends = new LinkedHashMap<>(initial);
    }

    /** Loads the file the policies in force came from, and puts it in force. */
    @Override
    public synchronized String reload() throws Refused {
        StockadeConfig old = pipeline.config();
        if (old.source() == null) {
            throw new Refused(ProblemType.RESTART_REQUIRED, "these policies were not loaded from a file; nothing to"
                    + " reload");
        }
        StockadeConfig fresh;
        try {
            fresh = PolicyLoader.load(old.source());
        } catch (PolicyException e) {
            throw new Refused(ProblemType.INVALID_POLICY_FILE, old.source() + " is not a valid policy file; the"
                    + " policies in force stay:\n"
                    + e.getMessage());
        }
        // The port given on the command line (--port) wins over the file's, as at start.
        fresh = fresh.withPort(old.server().port());
        // So does --management-port: the listener the process started with stays (a file without server.management
        // may be one the command line gave a listener to); a file that adds one, or moves its host, needs a restart.
        ServerConfig.Management oldManagement = old.server().management();
        if (oldManagement != null) {
            fresh = fresh.server().management() == null
                    ? fresh.withManagement(oldManagement) : fresh.withManagementPort(oldManagement.port());
        }
        List<String> restart = new ArrayList<>();
        if (!Objects.equals(fresh.server().host(), old.server().host())) {
            restart.add("server.host");
        }
        if (!Objects.equals(fresh.server().management(), oldManagement)) {
            restart.add("server.management");
        }
        // The listener's limits and TLS are fixed when Helidon's listener is built: a changed value would be half
        // applied (the body watchdog reads read-timeout per request, Helidon keeps the rest).
        if (!Objects.equals(fresh.server().limits(), old.server().limits())) {
            restart.add("server.limits");
        }
        if (!Objects.equals(fresh.server().tls(), old.server().tls())) {
            restart.add("server.tls");
        }
        if (!Objects.equals(fresh.store(), old.store())) {
            restart.add("store");
        }
        if (!Objects.equals(fresh.admin(), old.admin())) {
            restart.add("admin");
        }
        if (!Objects.equals(fresh.sql(), old.sql())) {
            restart.add("sql");
        }
        if (!restart.isEmpty()) {
            throw new Refused(ProblemType.RESTART_REQUIRED, "the file changes " + String.join(", ", restart)
                    + ", which only a restart applies; nothing was changed");
        }
        Map<String, Backend> opened = new LinkedHashMap<>();
        try {
            for (Policy policy : fresh.policies()) {
                Backend backend = StockadeServer.openBackend(policy);
                opened.put(policy.name(), backend);
                backend.checkAtStart(policy.name());
            }
            StockadeServer.InvalidDefinitions.check(fresh.policies(), opened);
            verifiers.open(fresh.policies()); // unchanged fence.verify blocks keep their verifier (and cache)
        } catch (StockadeServer.InvalidDefinitions e) {
            opened.values().forEach(Backend::close);
            throw new Refused(ProblemType.INVALID_POLICY_FILE, old.source() + " does not match its database: "
                    + String.join("; ", e.problems()) + "; the policies in force stay");
        } catch (IOException | RuntimeException e) {
            opened.values().forEach(Backend::close);
            throw new Refused(ProblemType.BACKEND_UNAVAILABLE, "a backend could not be opened (" + e.getMessage()
                    + "); the policies in force stay");
        }
        Map<String, Backend> replaced = pipeline.swap(fresh, opened);
        backends = opened;
        inForceNow.accept(fresh.policies());
        drain(replaced.values());
        String summary = "reloaded " + old.source() + ": " + fresh.policies().size() + " policies ("
                + names(old) + " -> " + names(fresh) + ")";
        LOG.info(summary);
        return summary;
    }

    private void drain(Collection<Backend> replaced) {
        List<Backend> batch = List.copyOf(replaced);
        draining.addAll(batch);
        // nothing waits for the drain (a failure in it stays in this future, unread, as before)
        var unused = closer.schedule(() -> {
            synchronized (this) {
                draining.removeAll(batch);
            }
            batch.forEach(Backend::close);
            // Verifiers whose fence.verify block the policies in force no longer have (removed or changed): judged
            // against the config in force now, so a block a later reload brought back keeps its verifier.
            int closed = verifiers.closeUnused(pipeline.config().policies());
            if (closed > 0) {
                LOG.info("closed " + closed + " token verifier(s) no policy uses since a reload");
            }
        }, StockadeServer.DRAIN.toMillis(), TimeUnit.MILLISECONDS);
    }

    private static String names(StockadeConfig config) {
        return String.join(", ", config.policies().stream().map(Policy::name).toList());
    }

    @Override
    public synchronized void close() {
        closer.shutdownNow();
        draining.forEach(Backend::close);
        draining.clear();
        backends.values().forEach(Backend::close);
        verifiers.close();
    }
}
