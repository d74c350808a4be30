/**
 * The request path ({@code FencePipeline}): policy match, limits, the backend's plan, token, verify, fence and
 * write, the answer, metrics and the decision log; and {@code Readiness} ({@code /health/ready}).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.pipeline;

import org.jspecify.annotations.NullMarked;
