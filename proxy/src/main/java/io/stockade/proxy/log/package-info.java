/**
 * Structured logs: one JSON line per decision ({@code stockade.decision}) and an audit line per refusal and per
 * admin action ({@code stockade.audit}), on standard output. The text log (start-up, warnings) goes to standard
 * error. Turn the decision lines off with {@code stockade.decision.level=OFF} in a logging.properties; the audit
 * lines stay. {@link io.stockade.proxy.log.WarnLimiter} keeps a WARN that a client or an outage can cause once per
 * request to one line a second per policy and kind.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.log;

import org.jspecify.annotations.NullMarked;
