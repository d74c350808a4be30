/**
 * The PostgreSQL listener ({@code sql} in the policy file): {@code SqlListener}, and {@code SqlFenceAccess}, the admin
 * API's way into its fence table.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.sql;

import org.jspecify.annotations.NullMarked;
