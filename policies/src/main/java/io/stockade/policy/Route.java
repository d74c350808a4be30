package io.stockade.policy;

import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * A request matched to a policy.
 *
 * @param policy    the policy that handles it
 * @param variables the path variables bound by the policy's path template (decoded)
 * @param target    the request's target in its one canonical form: what the storage is asked to act on; null only
 *                  in the route the proxy builds to answer a target that did not parse in the shape of the policy
 *                  it was most likely meant for (a refusal: such a route is never planned or forwarded). Every
 *                  route {@link StockadeConfig#route} matches has one.
 */
public record Route(Policy policy, Map<String, String> variables, @Nullable RequestTarget target) {
    public Route {
        variables = Map.copyOf(variables);
    }

    /** The fence scope of this request: the policy's scope template filled with the variables. */
    public String scope() {
        return policy.scope().render(variables);
    }
}
