package io.stockade.proxy.backend.file;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.PathTemplate;
import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.policy.Route;
import io.stockade.policy.ScopeTemplate;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerResponse;

/**
 * A real Helidon server in front of a {@link FileBackend}, standing in for the engine: the backend's plan is
 * carried out with no store, a fenced write ({@code Fencing-Token} on PUT or DELETE) with an admission of its token,
 * a write without one forwarded unfenced (its policy says {@code missing: allow}). A {@link WriteResult.Stale} is
 * answered 409 with the highest token in the body, as the engine would.
 * <p>
 * Its {@link #main} runs it alone, for a child JVM with a small heap.
 */
final class FileTestServer implements AutoCloseable {
    final FileBackend backend;
    final Policy policy;
    final WebServer server;
    /** What {@link FileBackend#write} returned, in order (added after the answer is sent: poll with a timeout). */
    final LinkedBlockingQueue<WriteResult> results = new LinkedBlockingQueue<>();

    FileTestServer(Path root) throws IOException {
        this(root, Policy.EqualToken.ACCEPT);
    }

    FileTestServer(Path root, Policy.EqualToken equal) throws IOException {
        BackendConfig.File config = new BackendConfig.File(root);
        PathTemplate path = PathTemplate.parse("/{path...}");
        Policy.Fence defaults = Policy.Fence.defaults();
        policy = new Policy("files", new Policy.Match(path, Set.of()),
                ScopeTemplate.parse("file:{path}", List.of("path")),
                new Policy.Fence(defaults.header(), defaults.methods(), Policy.MissingToken.ALLOW, equal,
                        defaults.mode()),
                config);
        backend = FileBackend.open(config);
        server = WebServer.builder()
                .port(0)
                .routing(HttpRouting.builder().any((req, res) -> {
                    // As the pipeline does: one canonical target, refused before anything else (400).
                    RequestTarget target;
                    switch (RequestTarget.parse(req.path().rawPath(), null, false)) {
                        case RequestTarget.Refused refused -> {
                            Problem.of(ProblemType.BAD_PATH, refused.reason()).send(res);
                            return;
                        }
                        case RequestTarget.Accepted accepted -> target = accepted.target();
                    }
                    if (target.trailingSlash()) {
                        Problem.of(ProblemType.BAD_PATH, "the path ends with '/' (an empty last segment)")
                                .send(res);
                        return;
                    }
                    Map<String, String> vars = policy.match().path().match(target).orElse(Map.of());
                    Route route = new Route(policy, vars, target);
                    String scope = vars.isEmpty() ? "file:?" : route.scope();
                    Exchange exchange = new Exchange(req, res, route, scope);
                    switch (backend.plan(exchange)) {
                        case Plan.Refuse refuse -> refuse.problem().send(res);
                        case Plan.Forward forward -> answer(res, forward.action().run(exchange));
                        case Plan.Observe observe -> answer(res, observe.forward().run(exchange));
                        case Plan.Write write -> {
                            Admission admission = new Admission(scope, write.token(), new FenceState(-1, null), null,
                                    write.rule());
                            WriteResult result = ((Keeper.Serialized) write.keeper()).write()
                                    .write(exchange, admission);
                            results.add(result);
                            answer(res, result);
                        }
                    }
                }))
                .build()
                .start();
    }

    private static void answer(ServerResponse res, WriteResult result) {
        switch (result) {
            case WriteResult.Stale s -> res.status(409).send("stale highest=" + s.highest());
            case WriteResult.Unknown u -> res.status(504).send(u.reason());
            case WriteResult.Unavailable u -> res.status(503).send(u.reason());
            case WriteResult.TooFar t -> res.status(422).send("too far, highest=" + t.highest());
            case WriteResult.Refused r -> r.problem().send(res);
            case WriteResult.Answered a -> {
            }
        }
    }

    int port() {
        return server.port();
    }

    @Override
    public void close() {
        server.stop();
        backend.close();
    }

    /** Runs a server on the root given as the argument, prints {@code PORT <n>}, stops when stdin closes. */
    public static void main(String[] args) throws IOException {
        try (FileTestServer s = new FileTestServer(Path.of(args[0]))) {
            System.out.println("PORT " + s.port());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            while (in.readLine() != null) {
                Runtime rt = Runtime.getRuntime();
                System.out.println("HEAP max=" + rt.maxMemory() + " used=" + (rt.totalMemory() - rt.freeMemory()));
                System.out.flush();
            }
        }
    }
}
