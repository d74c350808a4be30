/**
 * One SQL listener session: the startup and authentication ({@code Session}), then the relay ({@code Relay}) and what
 * it judges.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.sql.session;

import org.jspecify.annotations.NullMarked;
