package io.stockade.proxy.health;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.pipeline.Readiness;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerResponse;

/**
 * The answers of the health endpoints ({@code /health/live}, {@code /health/ready} and
 * {@code /health/ready/<policy>}, routed by {@code StockadeServer}): JSON with the status and, when down, what is
 * down and why, from the pipeline's {@link Readiness}.
 */
public final class HealthEndpoints {
    private HealthEndpoints() {
    }

    /**
     * {@code /health/live}: 200 UP, or 503 DOWN with the reason while the fence store has failed and not healed
     * within its time (the memory store's {@code heal-within}), so that the platform restarts the replica
     * (docs/operations.md, "Faults and probes").
     */
    public static void live(ServerResponse res, Optional<String> unhealed) {
        if (unhealed.isEmpty()) {
            json(res, 200, "{\"status\":\"UP\"}");
        } else {
            json(res, 503, "{\"status\":\"DOWN\",\"down\":" + jsonList(List.of("fence store: " + unhealed.get()))
                    + "}");
        }
    }

    /**
     * 200 UP, or 503 DOWN with what cannot be reached (a reason per component, as the log says it); and each
     * policy's state: a policy whose own dependencies are down refuses its writes (503) while the replica stays
     * ready for the others, unless it gates readiness ({@code readiness: gate}).
     */
    public static void ready(ServerResponse res, Readiness.Report report) {
        StringBuilder body = new StringBuilder("{\"status\":\"").append(report.up() ? "UP" : "DOWN").append('"');
        if (!report.up()) {
            body.append(",\"down\":").append(jsonList(report.down()));
        }
        body.append(",\"policies\":{");
        boolean first = true;
        for (Map.Entry<String, List<String>> p : report.policies().entrySet()) {
            body.append(first ? "" : ",").append(JsonWriter.quote(p.getKey())).append(":{\"status\":\"")
                    .append(report.up(p.getKey()) ? "UP" : "DOWN").append('"');
            if (!p.getValue().isEmpty()) {
                body.append(",\"down\":").append(jsonList(p.getValue()));
            }
            body.append('}');
            first = false;
        }
        json(res, report.up() ? 200 : 503, body.append("}}").toString());
    }

    /**
     * {@code /health/ready/<policy>}: 200 while the policy can write (what its writes need: the fence store if they
     * ask it, its verifier, its backend's database).
     */
    public static void policyReady(ServerResponse res, String policy, Readiness.Report report) {
        if (!report.policies().containsKey(policy)) {
            Problem.of(ProblemType.NOT_FOUND, "no policy '" + policy + "'; the policies: "
                    + String.join(", ", report.policies().keySet())).send(res);
            return;
        }
        List<String> down = report.policies().get(policy);
        json(res, down.isEmpty() ? 200 : 503, "{\"policy\":" + JsonWriter.quote(policy) + ",\"status\":\""
                + (down.isEmpty() ? "UP\"" : "DOWN\",\"down\":" + jsonList(down)) + "}");
    }

    private static String jsonList(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            b.append(i == 0 ? "" : ",").append(JsonWriter.quote(items.get(i)));
        }
        return b.append(']').toString();
    }

    private static void json(ServerResponse res, int status, String body) {
        res.status(status);
        res.header(HeaderNames.CONTENT_TYPE, "application/json");
        res.send(body);
    }
}
